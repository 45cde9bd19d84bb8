"""Offline RL algorithms, one readable file each (CORL's style): ``bc``, ``td3bc``, ``iql``,
``cql`` and ``cql_discrete``; trained by ``baselines.offline_run.OfflineRun``."""
