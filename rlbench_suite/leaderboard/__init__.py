"""The public leaderboard: database layer, ranking, API, pages and verification worker.

Imports only :mod:`rlbench_suite.core` (and the content-folder resolver); whatever needs
the registry (spec hashes of the cards) is handed in by the caller, the ``rlbench`` CLI.
"""
