"""The suite's seed ranges and seed derivations: the one place that says which seeds do what.

Seeds are split into disjoint ranges so that no number is ever used for two purposes:

======================  ===========================  ===============================
range                   used for                     who uses it
======================  ===========================  ===============================
``TRAINING_SEEDS``      training runs                ``rlbench train`` (``--seed``)
``REFERENCE_SEEDS``     reference-score episodes     ``rlbench refscores``
``TUNING_SEEDS``        hyperparameter tuning runs   ``rlbench tune``
``EVALUATION_SEEDS``    evaluation episodes          the cards' protocols
``DATASET_SEEDS``       offline-dataset episodes     ``rlbench datasets build``
======================  ===========================  ===============================

Dataset seeds lie above every evaluation seed a card can reach (a dataset never holds an
episode that an evaluation replays), and below ``2**31`` (environments that keep seeds in
32-bit integers accept them).

Evaluation seeds start at :data:`EVALUATION_FIRST_SEED` (each card may move its own first
seed higher); a run that trains or tunes on any of a card's evaluation seeds is refused.
"""

from __future__ import annotations

import zlib

import numpy as np

TRAINING_SEEDS = range(0, 10_000)
REFERENCE_SEEDS = range(10_000, 100_000)
TUNING_SEEDS = range(100_000, 1_000_000)
EVALUATION_FIRST_SEED = 1_000_000
DATASET_SEEDS = range(1_000_000_000, 2_000_000_000)
EVALUATION_SEEDS = range(EVALUATION_FIRST_SEED, DATASET_SEEDS.start)

REFERENCE_FIRST_SEED = REFERENCE_SEEDS.start
"""The first seed of a reference-score measurement (seeds 10000, 10001, ...)."""
REFERENCE_EPISODES = 100
"""Episodes of a reference-score measurement by default."""


def policy_seed(seed: int) -> int:
    """A seed for a policy's random stream, independent of an environment seeded with ``seed``.

    Gymnasium seeds an environment's ``np_random`` and a space's RNG the same way, so seeding
    both with one integer gives two identical streams: a "random" policy would then be a
    function of the environment's own randomness.
    """
    return int(np.random.SeedSequence([seed, 0x5EED]).generate_state(1)[0])


def agent_seed(seed: int, agent: str) -> int:
    """A seed for ``agent``'s policy, derived from ``seed`` and the agent's name.

    Independent across agents (and of :func:`policy_seed`), and stable across processes.
    """
    return int(
        np.random.SeedSequence([seed, 0xA6E7, zlib.crc32(agent.encode())]).generate_state(1)[0]
    )
