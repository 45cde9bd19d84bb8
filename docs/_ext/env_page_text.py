"""The Markdown (MyST) of the generated pages: one per environment card, one per family and
one per suite, and the environments' index. Pure functions of the cards and the previews'
manifest (``rlbench_suite.previews``); ``env_pages`` writes them during the build.

Every number comes from a card (or the manifest), never from hand-copied text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from env_usage import usage  # docs/_ext, beside this module

from rlbench_suite.baselines.curve_report import run_duration
from rlbench_suite.cli.common import interval, number
from rlbench_suite.core.cards import EnvCard, Interval, RefScore, TrainedBaseline
from rlbench_suite.core.catalog import RENAMED
from rlbench_suite.core.scoring import SuccessRule
from rlbench_suite.registry import wrapper_specs

FAMILY_TITLES = {
    "classic": "Classic control, Box2D and MiniGrid",
    "robotics": "Robotics",
    "multiagent": "Multi-agent games",
    "text": "Text games",
    "offline": "Offline",
}
REPOSITORY_FILES = ("envs/", "baselines/")
"""Content folders a page names by path (relative to the repository root)."""

_SPECIAL = re.compile(r"([\\`*_\[\]<>|{}$])")


def md(text: str) -> str:
    """``text`` as literal Markdown: every character MyST would read as markup escaped."""
    return _SPECIAL.sub(r"\\\1", text)


def code(text: str) -> str:
    """``text`` as inline code, whatever backticks it holds."""
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


@dataclass(frozen=True)
class Group:
    """A generated family (ids differing only in digits, like the 144 matrix games): one row
    in its family's table, one page with theirs; its members' pages stay out of the sidebar."""

    label: str
    page: str
    members: tuple[EnvCard, ...]


def page_name(card: EnvCard) -> str:
    """The document name of the card's page, relative to ``environments/``."""
    return card.name


def family_page(family: str) -> str:
    return f"family-{family}"


def suite_page(suite: str) -> str:
    return f"suite-{suite}"


def sentences(text: str) -> list[str]:
    """The sentences of a description (split after . ! ? before a capital or a bracket)."""
    flat = " ".join(text.split())
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(\"'])", flat) if s]


_TOPICS = {
    "reward": re.compile(r"\breward|\bpayoff|\bpoints?\b|\bscores?\b", re.I),
    "termination": re.compile(
        r"\bends?\b(?![- ]effector)|\bending\b|terminat|truncat|\bcut at\b"
        r"|\bafter \d[\d,]* (steps|cycles|frames|turns)"
        r"|\bepisode lasts|\bgame over|\bis over\b|\btime limit|\bhorizon of\b",
        re.I,
    ),
}
MEASURED = re.compile(r"\b(on|over) seeds \d|\bseeds \d+ ?(\.\.|to) ?\d|^(References|Figures)\b"
                      r"|\bon average\b|\d%", re.I)  # fmt: skip
"""A sentence reporting measured figures or the references (its scores and ends are not the
reward's definition or the episode's end)."""


def reward_and_end(description: str) -> list[str]:
    """The description's sentences about the reward or how an episode ends ("end effector"
    is not an end; sentences of measured figures are left out)."""
    about = [s for s in sentences(description) if any(t.search(s) for t in _TOPICS.values())]
    return [s for s in about if not MEASURED.search(s)]


def success_text(rule: SuccessRule | None) -> str:
    """The success rule in words."""
    if rule is None:
        return "none (the card is scored by its return)"
    return {
        "info": f"`info[{rule.key!r}]` is true at any step of the episode",
        "terminated": "the episode terminates (reaches a terminal state) rather than being "
        "truncated",
        "terminated_positive": "the episode terminates with a positive last reward",
        "return_at_least": f"the episode return is at least {number(rule.threshold)}",
    }[rule.kind]


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(cell or "-" for cell in row) + " |" for row in rows]
    return lines


def interval_text(estimate: Interval, digits: int = 3) -> str:
    """``point [low, high]``, as ``rlbench list`` writes it."""
    return interval(estimate.point, estimate.low, estimate.high, digits)


def reference_cell(ref: RefScore | None) -> str:
    if ref is None:
        return "-"
    return number(ref.value) + (f" ± {number(ref.std, 2)}" if ref.std is not None else "")


def trained_cell(card: EnvCard) -> str:
    """The best trained baseline: its normalized IQM [95% CI] (or the metric's) and algorithm."""
    if not card.trained:
        return "-"
    best = card.trained[0]
    if best.normalized is None:  # on the metric's own scale: say which
        return f"{interval_text(best.value)} {md(card.primary_metric)}, {best.algo}"
    return f"{interval_text(best.normalized)} {best.algo}"


def _span(members: Iterable[EnvCard], kind: str) -> str:
    values = [r.value for c in members if (r := getattr(c.reference, kind)) is not None]
    return f"{number(min(values))} to {number(max(values))}" if values else "-"


def cards_table(selected: Iterable[EnvCard | Group]) -> list[str]:
    """A table of cards (and groups) linking to their pages, from a page in ``environments/``.
    Six columns, references without their spread (on each page): seven overflowed Furo's
    content width at 1280 px; every page has its picture or transcript."""
    rows = []
    for c in selected:
        if isinstance(c, Group):
            first, n = c.members[0], len(c.members)
            trained = sum(bool(m.trained) for m in c.members)
            rows.append((f"[{md(c.label)}]({c.page}.md)", first.api, md(first.primary_metric),
                         _span(c.members, "random"), _span(c.members, "expert"),
                         f"{trained} of {n}" if trained else "-"))  # fmt: skip
            continue
        rows.append((f"[{md(c.name)}]({page_name(c)}.md)", c.api, md(c.primary_metric),
                     _value(c.reference.random), _value(c.reference.expert),
                     trained_cell(c)))  # fmt: skip
    header = ("environment", "API", "metric", "random", "expert",
              "trained: IQM, normalized unless a metric is named")  # fmt: skip
    return _table(header, rows)


def _value(ref: RefScore | None) -> str:
    return "-" if ref is None else number(ref.value)


def _reference_rows(card: EnvCard) -> list[str]:
    lines: list[str] = []
    rows = []
    for kind in ("random", "expert"):
        ref: RefScore | None = getattr(card.reference, kind)
        if ref is None:
            rows.append((kind, "-", "not measured", "", ""))
            continue
        seeds = "exact" if ref.method == "exact" else (
            f"{ref.episodes} episodes, seeds {ref.seeds[0]}..{ref.seeds[-1]}"  # type: ignore[index]
        )  # fmt: skip
        rows.append((kind, reference_cell(ref), code(ref.policy), seeds,
                     f"suite {ref.suite_version}, {ref.measured}"))  # fmt: skip
    lines += _table(("reference", "value ± std", "policy", "measured over", "when"), rows)
    commands = [(kind, ref.command) for kind in ("random", "expert")
                if (ref := getattr(card.reference, kind)) is not None and ref.command]  # fmt: skip
    if commands:
        lines += ["", "Measured with:", "", "```bash"]
        lines += [command for _, command in commands]
        lines.append("```")
    problem = card.normalization_problem()
    lines += ["", "Normalized score: " + (
        f"none ({md(problem)})." if problem else "0 = the random reference, 100 = the expert's."
    )]  # fmt: skip
    return lines + beyond_expert(card)


BEYOND_EXPERT = 120.0
"""A trained baseline's normalized score above which its page says why (a weak expert)."""


def beyond_expert(card: EnvCard) -> list[str]:
    """Why a trained baseline scores far above 100: the expert reference is a level, not a
    ceiling (DuelVsBotHard's expert, the hard bot playing player_0, wins 0.21 of its rounds)."""
    expert = card.reference.expert
    above = [t for t in card.trained if t.normalized and t.normalized.point > BEYOND_EXPERT]
    if expert is None or not above:
        return []
    best = above[0]
    return ["", f"The expert reference ({code(expert.policy)}, {md(card.primary_metric)} "
            f"{number(expert.value)}) is far below what the trained baseline {code(best.name)} "
            f"reaches ({md(card.primary_metric)} {interval_text(best.value)}), so its "
            f"normalized score is {interval_text(best.normalized)}: 100 is the expert "
            "reference's level, not a ceiling."]  # fmt: skip


def _trained_rows(card: EnvCard) -> list[str]:
    """Five columns (nine overflowed Furo's content width at 1280 px); where each baseline's
    results are and when they were measured, in a list under the table."""
    if not card.trained:
        return ["No trained baseline yet."]

    def row(t: TrainedBaseline) -> tuple[str, ...]:
        normalized = interval_text(t.normalized) if t.normalized else "-"
        return (code(t.name), f"{t.budget_steps:,} steps; seeds {', '.join(map(str, t.seeds))}",
                interval_text(t.value, 4), normalized,
                run_duration(t.wall_time_s / len(t.seeds)))  # fmt: skip

    header = ("baseline", "training", f"{md(card.primary_metric)}: IQM [95% CI]",
              "normalized: IQM [95% CI]", "wall time per run")  # fmt: skip
    where = [f"- {code(t.name)} ({t.algo}): {code(f'baselines/{t.results}')}, suite "
             f"{t.suite_version}, {t.measured}." for t in card.trained]  # fmt: skip
    return [*_table(header, [row(t) for t in card.trained]), "", *where, "",
            "Each seed is scored by the evaluation harness under the card's protocol; the "
            "aggregate is the interquartile mean over seeds with a stratified-bootstrap 95% "
            "interval. The wall time is one seed's training, the mean over the seeds (as in "
            "[the zoo's table](../baselines.md)). Use one: "
            "`--policy baseline:NAME/seed-S`."]  # fmt: skip


def _wrapper_rows(card: EnvCard) -> list[str]:
    lines = []
    for i, spec in enumerate(wrapper_specs(card), 1):
        kwargs = {k: v for k, v in (spec.kwargs or {}).items() if v is not None}
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        lines.append(f"{i}. {code(spec.name)}" + (f" ({code(shown)})" if shown else ""))
    return ["Innermost first (`gym.make` builds them; `env.spec.additional_wrappers` lists "
            "them):", "", *lines]  # fmt: skip


def _versions(card: EnvCard, all_cards: dict[str, EnvCard]) -> list[str]:
    base = card.id.rsplit("-v", 1)[0]
    lines = []
    others = sorted(c for c in all_cards if c != card.id and c.rsplit("-v", 1)[0] == base)
    if others:
        lines.append("- Other versions in the suite: " + ", ".join(
            f"[{md(o)}]({page_name(all_cards[o])}.md)" for o in others) + ".")  # fmt: skip
    for old, (new, what) in RENAMED.items():
        if new == card.id:
            lines.append(f"- Renamed from {code(old)} ({md(what)}); the old id is refused.")
    if card.upstream_id:
        lines.append(f"- Upstream id: {code(card.upstream_id)} (the suite adds its card, "
                     "wrapper stack and reference scores).")  # fmt: skip
    dated = [(str(r.measured), f"{kind} reference measured (suite {r.suite_version})")
             for kind in ("random", "expert") if (r := getattr(card.reference, kind))]  # fmt: skip
    dated += [(str(t.measured), f"trained baseline {code(t.name)} (suite {t.suite_version})")
              for t in card.trained]  # fmt: skip
    lines += [f"- {when}: {what}." for when, what in sorted(dated)]
    version = card.id.rsplit("-v", 1)[1]
    return [f"This is version {version} of {code(base)}. A change that alters results gets a "
            "new version; the old id keeps its meaning.", "", *lines]  # fmt: skip


def env_page(
    card: EnvCard,
    preview: dict[str, Any] | None,
    all_cards: dict[str, EnvCard],
    card_file: str,
    group: Group | None = None,
) -> str:
    """The page of one card (kept out of the sidebar when it belongs to a ``group``)."""
    links = [f"family [{card.family}]({family_page(card.family)}.md)", f"API {code(card.api)}"]
    if group is not None:
        links.insert(1, f"one of [{md(group.label)}]({group.page}.md)")
    if card.suites:
        links.append("suites " + ", ".join(
            f"[{md(s)}]({suite_page(s)}.md)" for s in card.suites))  # fmt: skip
    if card.extra:
        links.append(f"needs `pip install 'rlbench-suite[{card.extra}]'`")
    lines = ["---", "orphan: true", "---", ""] if group is not None else []
    lines += [f"# {md(card.name)}", "", f"{code(card.id)} · " + " · ".join(links), ""]
    if card.tags:
        lines += ["Tags: " + ", ".join(code(t) for t in card.tags), ""]
    lines += _preview(card, preview)
    lines += ["## Description", "", md(" ".join(card.description.split())), ""]
    lines += _spaces(card, preview)
    said = reward_and_end(card.description)
    limit = (f"Gymnasium truncates an episode after {card.max_episode_steps:,} steps "
             "(`max_episode_steps`)." if card.max_episode_steps else "")  # fmt: skip
    lines += ["## Reward and episode end", "", "From the description:", "",
              *(f"- {md(s)}" for s in said or ["(nothing more than above)"]), "",
              *([limit, ""] if limit else []),
              f"A success: {success_text(card.success)}.", ""]  # fmt: skip
    if card.reward_threshold is not None:
        lines += [f"Reward threshold (Gymnasium's): {number(card.reward_threshold)}.", ""]
    lines += ["## Scoring", "", f"Primary metric: {code(card.primary_metric)} (what results "
              f"are ranked by). Evaluation default: {card.evaluation.episodes} episodes from "
              f"seed {card.evaluation.first_seed}, "
              f"{'deterministic' if card.evaluation.deterministic else 'stochastic'} actions.",
              "", "### Reference scores", "", *_reference_rows(card), "",
              "### Trained baselines", "", *_trained_rows(card), ""]  # fmt: skip
    lines += ["## Wrapper stack", "", *_wrapper_rows(card), ""]
    lines += ["## Usage", "", *usage(card), ""]
    lines += ["## Version history", "", *_versions(card, all_cards), ""]
    lines += [f"The card: {code(card_file)}.", ""]
    return "\n".join(lines)


def _preview(card: EnvCard, entry: dict[str, Any] | None) -> list[str]:
    """The picture, or the transcript (``entry["text"]``), and how it was made."""
    if entry is None:
        return ["*No preview could be made here.*", ""]
    how = f"Seed {entry['seed']}, policy {code(entry['policy'])}, {entry['steps']} steps"
    command = f"rlbench info {card.id} --render {entry['file']}"
    if entry["kind"] == "transcript":
        text = entry.get("text", "").rstrip("\n")
        fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
        return [f"{fence}text", text, fence, "", f"*{how}; `{command}` writes this transcript.*",
                ""]  # fmt: skip
    return [f"![{md(card.id)}](../previews/{entry['file']})", "",
            f"*{how}, {entry['frames']} frames; `{command}` writes this picture.*", ""]  # fmt: skip


def _spaces(card: EnvCard, entry: dict[str, Any] | None) -> list[str]:
    if entry is None:
        return []
    whose = (f" (agent {code(card.agent)}'s, in the Gymnasium view)" if card.is_multiagent
             else "")  # fmt: skip
    return ["## Spaces", "", f"The spaces of {code(f'gym.make({card.id!r})')}{whose}:", "",
            *_table(("", "space"), [("observation", code(entry["observation_space"])),
                                    ("action", code(entry["action_space"]))]), ""]  # fmt: skip


def family_text(family: str, entries: list[EnvCard | Group]) -> str:
    """The page of one family: a table of its cards and groups, and the toctree of their
    pages."""
    title = FAMILY_TITLES.get(family, family)
    count = _count(entries)
    pages = [e.page if isinstance(e, Group) else page_name(e) for e in entries]
    lines = [f"# {md(title)}", "", f"{count} environments of the `{family}` family.",
             "", *cards_table(entries), "", "```{toctree}", ":hidden:", "",
             *pages, "```", ""]  # fmt: skip
    return "\n".join(lines)


def group_text(group: Group) -> str:
    """The page of a generated family: a table of its members."""
    first = group.members[0]
    lines = [f"# {md(group.label)}", "",
             f"{len(group.members)} generated environments of the `{first.family}` family, "
             f"built by {code(first.entry_point)}.", "",
             *cards_table(group.members), ""]  # fmt: skip
    return "\n".join(lines)


def _count(entries: Iterable[EnvCard | Group]) -> int:
    return sum(len(e.members) if isinstance(e, Group) else 1 for e in entries)


def suite_text(suite: str, entries: list[EnvCard | Group]) -> str:
    """The page of one suite: a table of its cards."""
    lines = [f"# Suite {md(suite)}", "",
             f"{_count(entries)} environments; evaluate them together with "
             f"`rlbench benchmark {suite} --policy SPEC` (see [Evaluation](../evaluation.md)).", "",
             *cards_table(entries), ""]  # fmt: skip
    return "\n".join(lines)


def index_text(by_family: dict[str, list[EnvCard]], by_suite: dict[str, list[EnvCard]]) -> str:
    total = sum(len(v) for v in by_family.values())
    lines = ["# Environments", "",
             f"{total} environment cards, one page each, generated from the cards "
             "(`envs/**/*.toml`) by the docs build. Each page shows the environment (a GIF of "
             "seeded play, or a transcript for text and matrix games), its spaces, reward, "
             "episode end and success rule, its reference and trained scores with how they "
             "were measured, its wrapper stack, a usage snippet and its version history.", "",
             "## Families", "",
             *_table(("family", "environments"), [
                 (f"[{md(FAMILY_TITLES.get(f, f))}]({family_page(f)}.md)", str(len(cs)))
                 for f, cs in by_family.items()]), "",
             "## Suites", "",
             *_table(("suite", "environments"), [
                 (f"[{md(s)}]({suite_page(s)}.md)", str(len(cs)))
                 for s, cs in by_suite.items()]), "",
             "```{toctree}", ":hidden:", ":maxdepth: 1", "",
             *(family_page(f) for f in by_family), *(suite_page(s) for s in by_suite),
             "```", ""]  # fmt: skip
    return "\n".join(lines)
