"""How many steps a run trains for its ``--budget``, and how far apart its curve points fall.

On-policy algorithms (PPO and its kin, ``fast_ppo``) learn from whole rollouts of
``n_envs x n_steps`` transitions, so a budget that is not a whole number of rollouts cannot
be trained exactly. The trainer rounds it **down** to whole rollouts (as CleanRL's
``total_timesteps // batch_size`` does): the budget is a ceiling, like the leaderboard's
budget classes (``leaderboard.ranking.BUDGET_CLASSES``), so a run never records more steps
than it was given and never lands in a larger class than its budget's. SB3's own ``learn``
rounds up instead (a 60,000-step budget of 2,048-step rollouts trains 61,440), which is how
runs recorded before ``budget_steps`` was written trained: :data:`LEGACY` reproduces them.
Off-policy algorithms stop at the budget exactly (to a whole vector step of ``n_envs``).

Curve points and checkpoints can only fall on rollout boundaries (where a run can stop and
resume), so their spacing is rounded up to whole rollouts and recorded as it is.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from rlbench_suite.core.wording import counted

Rounding = Literal["down", "up"]
LEGACY: Rounding = "up"
"""The rounding of runs whose ``run.json`` has no ``budget_steps`` (SB3's ``learn``)."""


@dataclasses.dataclass(frozen=True)
class Granularity:
    """The steps a run moves in: what its budget rounds to, and where its boundaries fall."""

    budget_unit: int
    """Steps the budget is a whole number of (a rollout on-policy; a vector step otherwise)."""
    boundary: int | None
    """Steps between rollout boundaries (curve points, checkpoints); None: not fixed (an
    off-policy algorithm collecting whole episodes)."""
    name: str
    """The unit's name, plural: ``rollouts``."""
    detail: str
    """What one is: ``2,000 steps: 8 envs x 250 n_steps``."""


@dataclasses.dataclass(frozen=True)
class BudgetPlan:
    """A requested budget against the steps the run will train (module docstring)."""

    requested: int
    steps: int
    granularity: Granularity
    rounding: Rounding = "down"

    @property
    def exact(self) -> bool:
        return self.steps == self.requested

    def notice(self) -> str | None:
        """One line saying how many steps will be trained and why, or None when exactly the
        budget is trained."""
        if self.exact:
            return None
        unit = self.granularity.budget_unit
        below, above = self.requested // unit * unit, -(-self.requested // unit) * unit
        nearest = below if self.requested - below <= above - self.requested and below else above
        how = ("rounded down so the run stays within its budget" if self.rounding == "down"
               else "rounded up as runs recorded before whole-rollout budgets were")  # fmt: skip
        other = f" ({above} trains one more)" if nearest == below else ""
        return (
            f"--budget {self.requested:,} is not a whole number of {self.granularity.name} "
            f"({self.granularity.detail}): training {self.steps:,} steps, {how}; the nearest "
            f"whole budget is --budget {nearest}{other}"
        )

    def spacing(self, every: int) -> int:
        """``every`` steps rounded up to whole rollouts: where curve points really fall."""
        boundary = self.granularity.boundary
        if self.rounding == LEGACY or not boundary:
            return every
        return max(boundary, -(-every // boundary) * boundary)


class BudgetError(ValueError):
    """A budget smaller than one rollout."""


def plan_budget(requested: int, granularity: Granularity, rounding: Rounding = "down"
                ) -> BudgetPlan:  # fmt: skip
    """The steps a run of ``requested`` steps trains (module docstring); a
    :class:`BudgetError` for a budget below one unit when rounding down."""
    unit = granularity.budget_unit
    if rounding == "down":
        steps = requested // unit * unit
        if steps == 0:
            raise BudgetError(
                f"--budget {requested:,} is less than one of its {granularity.name} "
                f"({granularity.detail}); pass "
                f"--budget {unit} or more, or smaller {granularity.name} in --hyperparams"
            )
    else:
        steps = -(-requested // unit) * unit
    return BudgetPlan(requested, steps, granularity, rounding)


def rollouts(n_envs: int, n_steps: int, name: str = "n_steps") -> Granularity:
    """An on-policy algorithm's granularity: rollouts of ``n_envs x n_steps``."""
    size = n_envs * n_steps
    envs = counted(n_envs, "env")
    return Granularity(size, size, "rollouts", f"{size:,} steps: {envs} x {n_steps} {name}")


def vector_steps(n_envs: int, boundary: int | None) -> Granularity:
    """An off-policy algorithm's granularity: one step of ``n_envs`` envs at a time."""
    each = f"one step of each of {counted(n_envs, 'env')}"
    return Granularity(n_envs, boundary, "vector steps", each)
