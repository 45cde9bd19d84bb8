"""``python -m rlbench_suite.cli``: the same as the ``rlbench`` command."""

from rlbench_suite.cli import main

main()
