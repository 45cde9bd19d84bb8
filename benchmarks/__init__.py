"""Performance benchmarks, each measured side by side with the peers it is compared to.

Run ``python -m benchmarks.run`` from the repository root; see ``benchmarks/README.md``.
"""
