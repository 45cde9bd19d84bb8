"""Re-running a result from what it records, and comparing the two runs."""

from __future__ import annotations

from rlbench_suite.core.offline_cards import resolve_card
from rlbench_suite.core.result import Result
from rlbench_suite.evaluation.runner import evaluate
from rlbench_suite.policies import POLICY_SPECS_TEXT
from rlbench_suite.registry import spec_hash


def rerun(original: Result, workers: int | None = None) -> Result:
    """Evaluate the same policy spec under the same protocol again (no files written)."""
    spec = original.policy.get("spec")
    if not spec:
        raise ValueError(
            "this result's policy was given as a Python object, not a spec "
            f"({POLICY_SPECS_TEXT}), so it cannot be re-run from the file"
        )
    return evaluate(original.env_id, spec, original.protocol, workers=workers)


POLICY_KEYS = ("artifact_sha256", "spec", "train_seeds", "tuning_seeds")


def compare_runs(
    original: Result, again: Result, policy_keys: tuple[str, ...] = POLICY_KEYS
) -> list[str]:
    """Every substantive difference between two runs of one protocol (empty: reproduced).

    ``policy_keys``: the policy's recorded fields that must agree (a re-trained policy lives
    at another path, so its ``spec`` differs by nature)."""
    differences = identity_changes(original, again, policy_keys)
    fields = ("returns", "lengths", "successes")
    for index, seed in enumerate(original.seeds):
        before = tuple(getattr(original, f)[index] for f in fields)
        after = tuple(getattr(again, f)[index] for f in fields)
        if before != after:
            differences.append(
                f"episode {index} (seed {seed}): (return, length, success) {before} recorded, "
                f"{after} now"
            )
    return differences


ROUNDING = 1e-12
"""The relative difference of two returns that floating-point rounding alone explains: the
same episode summed with another CPU's last bits (1 ulp of a return is about 1e-16 of it)."""


def rounding_only(
    original: Result, again: Result, policy_keys: tuple[str, ...] = POLICY_KEYS
) -> tuple[int, float] | None:
    """When every difference between two runs is in the last bits of returns (same env spec and
    policy, lengths and successes equal, each return within :data:`ROUNDING` relative, or
    absolute for returns below 1): how many episodes differ and the largest ``|diff|``;
    None when a difference is real (or there is none)."""
    if identity_changes(original, again, policy_keys):
        return None
    if (original.lengths, original.successes) != (again.lengths, again.successes):
        return None
    pairs = [(a, b) for a, b in zip(original.returns, again.returns, strict=True) if a != b]
    if not pairs or any(abs(a - b) > ROUNDING * max(1.0, abs(a)) for a, b in pairs):
        return None
    return len(pairs), max(abs(a - b) for a, b in pairs)


def identity_changes(
    original: Result, again: Result, policy_keys: tuple[str, ...] = POLICY_KEYS
) -> list[str]:
    """What makes ``again`` a run of another environment spec or policy than ``original``
    (empty: the same env and policy, whatever their episodes gave)."""
    changes = []
    now = spec_hash(resolve_card(original.env_id))
    if now != original.spec_hash:
        changes.append(
            f"the environment spec changed (hash {original.spec_hash[:12]} recorded, "
            f"{now[:12]} now)"
        )
    for key in policy_keys:
        if original.policy.get(key) != again.policy.get(key):
            recorded, now = original.policy.get(key), again.policy.get(key)
            changes.append(f"policy {key}: {recorded!r} recorded, {now!r} now")
    return changes


def rescored(original: Result, again: Result) -> Result:
    """``original`` with the episodes, aggregates (the normalized score with the references it is
    on) and provenance of ``again``, a re-run of the same protocol, env spec and policy: a
    committed result brought up to date after the env's code changed its bits (the rest, such
    as the training budget, is kept). A re-run of another spec or policy is refused (ValueError
    naming what changed)."""
    changed = identity_changes(original, again)
    if changed:
        raise ValueError("not the same environment and policy, so not written: "
                         + "; ".join(changed))  # fmt: skip
    fields = ("returns", "lengths", "successes", "aggregates", "normalized_score",
              "normalization", "provenance")  # fmt: skip
    return original.model_copy(update={f: getattr(again, f) for f in fields})


def provenance_changes(original: Result, again: Result) -> list[str]:
    """Package versions and machine facts that differ (context for any difference)."""
    changes = []
    before, after = original.provenance, again.provenance
    for name in sorted(set(before.packages) | set(after.packages)):
        if before.packages.get(name) != after.packages.get(name):
            changes.append(f"{name}: {before.packages.get(name)} -> {after.packages.get(name)}")
    for key in ("python", "platform", "cpu", "git_commit"):
        if getattr(before, key) != getattr(after, key):
            changes.append(f"{key}: {getattr(before, key)} -> {getattr(after, key)}")
    return changes
