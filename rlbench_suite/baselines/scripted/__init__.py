"""Scripted reference controllers, one module per task family.

Each is a :class:`~rlbench_suite.policies.Policy` class that
``make_policy("module:rlbench_suite.baselines.scripted.<module>:<Class>", env)`` can build:
its ``__init__`` takes only ``observation_space`` / ``action_space`` (and ``seed``) by
keyword, and it acts on the observation and ``info`` alone, never on the simulator's state.
"""
