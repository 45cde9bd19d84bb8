"""What the API returns and the pages show, built once from the database and the ranking."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session, defer

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.catalog import closest_ids
from rlbench_suite.core.metrics import Estimate
from rlbench_suite.core.offline_cards import OFFLINE_FAMILY
from rlbench_suite.core.summary import with_figures
from rlbench_suite.leaderboard import ranking, ranking_cache, reconcile
from rlbench_suite.leaderboard.models import (
    VERIFICATION_LEVELS,
    Environment,
    Method,
    Result,
    Submission,
    Suite,
    listed,
)
from rlbench_suite.leaderboard.queries import env_card, env_protocols, env_runs, suite_runs
from rlbench_suite.leaderboard.scores import success_scale


class NotFound(LookupError):
    """An id that names nothing on this leaderboard."""


def not_found(kind: str, name: str, known: Iterable[str]) -> NotFound:
    """NotFound naming ``name`` (an environment, suite or method) and the closest of the
    ``known`` names, as the catalog suggests ids (``core.catalog.closest_ids``)."""
    close = closest_ids(name, list(known))
    hint = f"; did you mean: {', '.join(close)}?" if close else ""
    return NotFound(f"no {kind} {name!r} on this leaderboard{hint}")


def has_method(session: Session, name: str) -> bool:
    """Whether a method is called ``name``."""
    return session.scalar(select(Method.id).where(Method.name == name)) is not None


def get_method(session: Session, name: str) -> Method:
    """The method called ``name``; NotFound with the closest names otherwise."""
    method = session.scalar(select(Method).where(Method.name == name))
    if method is None:
        raise not_found("method", name, session.scalars(select(Method.name)))
    return method


def get_suite(session: Session, name: str) -> Suite:
    """The suite called ``name``; NotFound with the closest names otherwise."""
    suite = session.get(Suite, name)
    if suite is None:
        raise not_found("suite", name, session.scalars(select(Suite.name)))
    return suite


class BadQuery(ValueError):
    """A query the leaderboard cannot answer as asked; the message says what is accepted."""


@dataclass(frozen=True)
class Filters:
    """The ranking's filters (None: all)."""

    budget: str | None = None
    verification: str | None = None
    family: str | None = None

    def __post_init__(self) -> None:
        if self.budget is not None and self.budget not in ranking.BUDGET_CLASSES:
            accepted = ", ".join(ranking.BUDGET_CLASSES)
            raise ValueError(f"unknown budget class {self.budget!r}; accepted: {accepted}")
        if self.verification is not None and self.verification not in VERIFICATION_LEVELS:
            accepted = ", ".join(VERIFICATION_LEVELS)
            raise ValueError(
                f"unknown verification level {self.verification!r}; accepted: {accepted}"
            )

    def apply(self, runs: list[ranking.Run]) -> list[ranking.Run]:
        return ranking.filter_runs(
            runs, budget=self.budget, verification=self.verification, family=self.family
        )


def estimate_dict(estimate: Estimate) -> dict[str, Any]:
    return {
        "point": estimate.point,
        "low": estimate.low,
        "high": estimate.high,
        "confidence": estimate.confidence,
        "method": estimate.method,
    }


def row_dict(row: ranking.RankedRow) -> dict[str, Any]:
    return {
        "rank": row.rank,
        "method": row.method,
        "family": row.family,
        "budget_class": row.budget_class,
        "iqm": estimate_dict(row.estimate) if row.runs else None,
        "runs": row.runs,
        "stored_runs": row.runs if row.stored_runs is None else row.stored_runs,
        "interval_over": row.interval_over,
        "verified_runs": row.verified_runs,
        "result_ids": list(row.result_ids),
        "missing_envs": list(row.missing_envs),
    }


def get_env(session: Session, env_id: str) -> Environment:
    env = session.get(Environment, env_id)
    if env is None:
        raise not_found("environment", env_id, session.scalars(select(Environment.id)))
    return env


def families(session: Session) -> list[str]:
    """The algorithm families of the methods that have results."""
    query = select(Method.family).where(Method.family.is_not(None)).distinct()
    return sorted(session.scalars(query))


def checked_filters(
    session: Session,
    budget: str | None = None,
    verification: str | None = None,
    family: str | None = None,
) -> Filters:
    """The filters a request names ('' or None: all), each checked: ValueError naming the
    accepted values otherwise (families: those of the methods on this leaderboard)."""
    filters = Filters(budget or None, verification or None, family or None)
    if filters.family is not None:
        known = families(session)
        if filters.family not in known:
            accepted = ", ".join(known)
            raise ValueError(f"unknown algorithm family {filters.family!r}; accepted: {accepted}")
    return filters


def checked_protocol(session: Session, env: Environment, protocol_hash: str | None) -> str:
    """The protocol a request names (None: the card's current one), if ``env`` has it: the
    current one or one of its results'; BadQuery naming the accepted hashes otherwise."""
    if not protocol_hash or protocol_hash == env.protocol_hash:
        return env.protocol_hash
    known = [h for h, _ in env_protocols(session, env.id)]
    if protocol_hash not in known:
        others = [h for h in known if h != env.protocol_hash]
        accepted = f"{env.protocol_hash} (the card's current protocol, also when none is named)"
        raise BadQuery(
            f"unknown protocol {protocol_hash[:80]!r} for {env.id}; accepted: "
            + ", ".join([accepted, *others])
        )
    return protocol_hash


def scale(card: EnvCard) -> str:
    """The scale ``card``'s run scores are on (``leaderboard.scores``), in words."""
    problem = card.normalization_problem()
    if problem is None:
        return "normalized score (0 random, 100 expert)"
    return f"{card.primary_metric} (no normalized score: {problem})"


def run_scores_key(method: str, budget_class: str) -> str:
    """The key of a ranking row's run scores in ``env_ranking``'s ``run_scores``."""
    return f"{method}@{budget_class}"


def env_ranking(
    session: Session, env_id: str, filters: Filters, protocol_hash: str | None = None
) -> dict[str, Any]:
    """An environment's ranking table under one protocol, and what else exists."""
    env = get_env(session, env_id)
    card = env_card(env)
    protocol_hash = checked_protocol(session, env, protocol_hash)

    def table() -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
        runs = filters.apply(env_runs(session, env, protocol_hash))
        rows = ranking.rank_env(runs, success_scale(card))
        scores = {
            run_scores_key(r.method, r.budget_class): [
                run.score for run in runs if run.result_id in r.result_ids
            ]
            for r in rows
        }
        return [row_dict(r) for r in rows], scores

    key = ("env", env.id, protocol_hash, filters)
    rows, run_scores = ranking_cache.cached(session, key, [env.id], table)
    return {
        "env_id": env.id,
        "protocol_hash": protocol_hash,
        "current_protocol": protocol_hash == env.protocol_hash,
        "normalized": card.normalization_problem() is None,
        "scale": scale(card),
        "rows": rows,
        "run_scores": run_scores,
        "protocols": [{"hash": h, "results": n} for h, n in env_protocols(session, env.id)],
    }


def suite_ranking(session: Session, name: str, filters: Filters) -> dict[str, Any]:
    """A suite's aggregate ranking, performance profiles and its envs."""
    suite = get_suite(session, name)
    key = ("suite", name, filters)
    envs = [e.id for e in suite.envs]
    return ranking_cache.cached(session, key, envs, lambda: _suite_table(session, suite, filters))


def _suite_table(session: Session, suite: Suite, filters: Filters) -> dict[str, Any]:
    runs, scored, unscored = suite_runs(session, suite)
    runs = filters.apply(runs)
    rows, incomplete = ranking.rank_suite(runs, scored)
    matrices = {}
    for row in rows:
        matrix, _ = ranking.method_matrix([r for r in runs if r.method == row.method], scored)
        if matrix is not None:
            matrices[row.method] = matrix
    taus, curves = ranking.profiles(matrices) if matrices else (np.zeros(0), {})
    return {
        "suite": suite.name,
        "scored_envs": scored,
        "unscored_envs": unscored,
        "rows": [row_dict(r) for r in rows],
        "incomplete": [row_dict(r) for r in incomplete],
        "profiles": {
            "taus": taus.tolist(),
            "methods": {
                m: {"fraction": p.tolist(), "low": b[0].tolist(), "high": b[1].tolist()}
                for m, (p, b) in curves.items()
            },
        },
    }


def compare(session: Session, first: str, second: str, suite_name: str | None) -> dict[str, Any]:
    """P(a run of ``first`` beats a run of ``second``) per env they share, and overall, all
    at one level (``ranking.comparison_level``: runs where both have 2 or more on every
    shared env, else episodes), which ``level`` names."""
    if first == second:
        raise BadQuery(f"compare needs two different methods; a and b are both {first!r}")
    methods = {}
    for name in (first, second):
        methods[name] = get_method(session, name)
    if suite_name is not None:
        suite = get_suite(session, suite_name)
        envs = [e for e in suite.envs if e.active]
    else:
        envs = list(session.scalars(select(Environment).where(Environment.active)))
    shared: dict[str, tuple[list[ranking.Run], list[ranking.Run]]] = {}
    for env in envs:
        if env_card(env).reference_values() is None:
            continue
        runs = ranking.distinct_runs(env_runs(session, env))
        x = [r for r in runs if r.method == first]
        y = [r for r in runs if r.method == second]
        if x and y:
            shared[env.id] = (x, y)
    level = ranking.comparison_level((len(x), len(y)) for x, y in shared.values())
    per_env = []
    for env_id, (x, y) in shared.items():
        p = ranking.improvement(
            ranking.level_matrix(x, [env_id], level), ranking.level_matrix(y, [env_id], level)
        )
        per_env.append({"env_id": env_id, "probability": estimate_dict(p)})
    overall = None
    if shared:
        ids = list(shared)
        x_all = [r for x, _ in shared.values() for r in x]
        y_all = [r for _, y in shared.values() for r in y]
        x_matrix = ranking.level_matrix(x_all, ids, level)
        y_matrix = ranking.level_matrix(y_all, ids, level)
        overall = estimate_dict(ranking.improvement(x_matrix, y_matrix))
    return {
        "first": first,
        "second": second,
        "suite": suite_name,
        "level": level,
        "envs": per_env,
        "overall": overall,
    }


def counts(session: Session) -> dict[str, int]:
    """How many environments (and how many of them are offline dataset ids), suites, methods,
    results and verified results there are."""

    def count(model, *where) -> int:
        return int(session.scalar(select(func.count()).select_from(model).where(*where)) or 0)

    return {
        "environments": count(Environment, Environment.active),
        "offline": count(Environment, Environment.active, Environment.family == OFFLINE_FAMILY),
        "suites": count(Suite),
        "methods": count(Method),
        "results": count(Result, listed()),
        "verified": count(Result, listed(), Result.verification == "verified"),
    }


def verification_notes(session: Session, row: Result) -> dict[str, Any]:
    """What the server's re-evaluations of ``row``'s policy artifact found: its re-runs on
    ``row``'s env, the episodes where one did not reproduce ``row`` (the issue: both rows
    shown, with the difference), the ``evidence`` of a verified self-reported ``row``
    (``reconcile.evidence``), and the result a re-run ``row`` is the evidence of."""
    notes: dict[str, Any] = {"verified": [], "differences": [], "evidence": None,
                             "verifies": row.verifies_result_id}  # fmt: skip
    if not row.artifact_sha256:
        return notes
    same = (Result.env_id == row.env_id, Result.artifact_sha256 == row.artifact_sha256)
    verified = session.scalars(
        select(Result.id).where(*same, Result.id.in_(reconcile.reruns()), Result.id != row.id)
    ).all()
    differences: list[str] = []
    submissions = select(Submission.metadata_).where(
        Submission.env_id == row.env_id,
        Submission.artifact_sha256 == row.artifact_sha256,
        Submission.kind == "policy",
    )
    for metadata in session.scalars(submissions):
        differences += (metadata or {}).get("disagreements", {}).get(str(row.id), [])
    evidence = None if differences else reconcile.evidence(session, row)
    return {**notes, "verified": list(verified), "differences": differences, "evidence": evidence}


def result_summary(row: Result, method: str) -> dict[str, Any]:
    """A stored result in a list: what identifies it, not its episodes."""
    return {
        "id": row.id,
        "env_id": row.env_id,
        "method": method,
        "policy": row.policy_name,
        "verification": row.verification,
        "training_budget_steps": row.training_budget_steps,
        "budget_class": ranking.budget_class(row.training_budget_steps),
        "protocol_hash": row.protocol_hash,
        "artifact_sha256": row.artifact_sha256,
        "return_mean": row.return_mean,
        "episodes": row.episodes,
        "created_at": row.created_at.isoformat(),
        "verified_at": row.verified_at.isoformat() if row.verified_at else None,
        "verifies_result_id": row.verifies_result_id,
    }


def newest_first(verification: str | None) -> tuple:
    """The order of a list of results, newest first: verified ones by when they were verified
    (a self-reported result verified later moves up), others by when they arrived."""
    if verification == "verified":
        return Result.verified_at.desc(), Result.id.desc()
    return (Result.id.desc(),)


def list_results(
    session: Session,
    *,
    env_id: str | None = None,
    method: str | None = None,
    verification: str | None = None,
    budget: str | None = None,
    protocol_hash: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """Listed results (``models.listed``: one per agreeing verification), newest first
    (:func:`newest_first`),
    filtered (``budget``: a budget class, results in it or a smaller one); one page of them
    and how many match in all. An ``env_id`` or ``method`` that names nothing here is
    NotFound, with the closest names."""
    where = [listed()]
    if env_id is not None:
        where.append(Result.env_id == get_env(session, env_id).id)
    if method is not None:
        where.append(Method.name == get_method(session, method).name)
    if verification is not None:
        where.append(Result.verification == verification)
    if protocol_hash is not None:
        where.append(Result.protocol_hash == protocol_hash)
    if budget is not None and (ceiling := ranking.budget_ceiling(budget)) is not None:
        where.append(Result.training_budget_steps <= ceiling)
    joined = select(Result.id).join(Method, Result.method_id == Method.id).where(*where)
    total = session.scalar(select(func.count()).select_from(joined.subquery()))
    query = (
        select(Result, Method.name)
        .join(Method, Result.method_id == Method.id)
        .where(*where)
        .options(defer(Result.document))  # a listing never needs the Result JSON
        .order_by(*newest_first(verification))
        .limit(limit)
        .offset(offset)
    )
    return [result_summary(row, name) for row, name in session.execute(query)], total


def computed_normalized_score(card: EnvCard, document: dict[str, Any]) -> dict | None:
    """The normalized score of a stored Result that carries none (scored before its card
    had both references), computed as the harness would now from its episodes and the card's
    current references; None when it carries one or the card has no normalization."""
    if document.get("normalized_score") is not None or card.normalization_problem() is not None:
        return None
    return with_figures(card, dict(document))["normalized_score"]


def normalized_envs(session: Session, env_ids: set[str]) -> set[str]:
    """Those of ``env_ids`` whose scores are normalized (0 random, 100 expert): their cards
    have both references (``leaderboard.scores``' rule); the others' are the primary metric's."""
    envs = session.scalars(select(Environment).where(Environment.id.in_(env_ids)))
    return {e.id for e in envs if env_card(e).reference_values() is not None}


def _index(session: Session, row: type, columns: dict[str, Any], **counts: Any) -> list[dict]:
    """One dict per ``row`` (Method or Environment) with results: its ``columns`` and the
    ``counts`` over its results, by the first column."""
    key = Result.method_id if row is Method else Result.env_id
    labelled = [c.label(k) for k, c in {**columns, **counts}.items()]
    query = (
        select(*labelled)
        .join(Result, (key == row.id) & listed())
        .group_by(row.id, *columns.values())
        .order_by(next(iter(columns.values())))
    )
    return [dict(r) for r in session.execute(query).mappings()]


def method_index(session: Session) -> list[dict[str, Any]]:
    """Every method with results: its family, how many results (verified ones) and envs."""
    columns = {"name": Method.name, "family": Method.family}
    verified = func.count(Result.id).filter(Result.verification == "verified")
    return _index(session, Method, columns, results=func.count(Result.id), verified=verified,
                  envs=func.count(Result.env_id.distinct()))  # fmt: skip


def suite_index(session: Session) -> list[tuple[str, int]]:
    """Every suite, by name, with how many of its environments are active."""
    suites = session.scalars(select(Suite).order_by(Suite.name))
    return [(s.name, sum(e.active for e in s.envs)) for s in suites]


def env_index(session: Session) -> list[dict[str, Any]]:
    """Every environment with results: family, primary metric, how many results and methods."""
    columns = {"id": Environment.id, "family": Environment.family,
               "primary_metric": Environment.primary_metric}  # fmt: skip
    return _index(session, Environment, columns, results=func.count(Result.id),
                  methods=func.count(Result.method_id.distinct()))  # fmt: skip
