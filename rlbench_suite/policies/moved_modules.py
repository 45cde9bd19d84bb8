"""Modules that moved, so that ``module:`` policy specs recorded before the move still resolve.

Results and cards record the ``--policy`` string that produced them, e.g.
``module:rlbench_suite.baselines.scripted.duel:EasyBot``. When the scripted agents moved
beside the environments they play (``rlbench_suite/envs/<family>/<env>/``), their old module
paths went away; :class:`~rlbench_suite.policies.module.ModulePolicy` looks a spec's module up
here first, so an old spec builds the same policy (and keeps its name in the policy's
identity). Only entries for modules that no longer exist belong here.
"""

from __future__ import annotations

_OLD = "rlbench_suite.baselines.scripted"
_ENVS = "rlbench_suite.envs"

MOVED_MODULES: dict[str, str] = {
    f"{_OLD}.arm": f"{_ENVS}.robotics.arm.experts",
    f"{_OLD}.kuka": f"{_ENVS}.robotics.kuka.experts",
    f"{_OLD}.quad": f"{_ENVS}.robotics.quad.experts",
    f"{_OLD}.coop_nav": f"{_ENVS}.multiagent.coop_nav.agents",
    f"{_OLD}.duel": f"{_ENVS}.multiagent.duel.bots",
    f"{_OLD}.kitchen": f"{_ENVS}.multiagent.kitchen.agents",
    f"{_OLD}.matrix": f"{_ENVS}.multiagent.matrix.agents",
    f"{_OLD}.predator_prey": f"{_ENVS}.multiagent.predator_prey.agents",
    f"{_OLD}.chess": f"{_ENVS}.text.chess.experts",
    f"{_OLD}.text_adventure": f"{_ENVS}.text.adventure.experts",
    f"{_OLD}.text_common": f"{_ENVS}.text.random_admissible",
    f"{_OLD}.text_maze": f"{_ENVS}.text.maze.experts",
    f"{_OLD}.text_nav": f"{_ENVS}.text.adventure.experts",
    f"{_OLD}.twenty_questions": f"{_ENVS}.text.questions.experts",
    f"{_OLD}.wordle": f"{_ENVS}.text.wordle.experts",
}
"""Old module path -> the module that holds its policies now."""
