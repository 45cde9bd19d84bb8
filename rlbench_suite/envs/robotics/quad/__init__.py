"""Quadrotors after gym-pybullet-drones: ``QuadHover``, ``QuadWaypoints``, ``QuadSwarm``.

``dynamics`` (the Crazyflie model), ``backends`` (PyBullet and batched NumPy physics),
``control`` (action types, PID), ``tasks`` (episodes, observations and their layout, rewards),
``env`` (the single-drone envs), ``vector`` (the batched vector env), ``swarm`` (the
PettingZoo swarm), ``experts`` (the PID reference controller) and ``data/cf2x.urdf``."""
