"""The suite's robotic environments (quadrotors on PyBullet and NumPy, MuJoCo arms)."""
