"""Training: the zoo of trained reference baselines (to come). The scripted bots and experts
live beside the environments they play, in ``rlbench_suite.envs.<family>.<env>``."""
