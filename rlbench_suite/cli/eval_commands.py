"""``rlbench eval | reproduce | results show``: evaluate policies, re-run and read results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from rlbench_suite.cli.common import (
    app,
    console,
    errors,
    fail,
    number,
    progress_bar,
    stopped,
    throttle,
)
from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.catalog import UnknownEnvError
from rlbench_suite.core.offline_cards import resolve_card
from rlbench_suite.core.protocol import EvalProtocol, SeedOverlapError
from rlbench_suite.core.result import Result, ResultError, load_result
from rlbench_suite.core.wording import counted
from rlbench_suite.evaluation.protocols import default_protocol
from rlbench_suite.evaluation.reproduce import ROUNDING
from rlbench_suite.evaluation.runner import BACKENDS
from rlbench_suite.paths import result_file
from rlbench_suite.policies import POLICY_SPECS_TEXT
from rlbench_suite.policies.names import display_name

results_app = typer.Typer(help="Read result files.", no_args_is_help=True)
app.add_typer(results_app, name="results")


def _parse_seeds(text: str | None) -> list[int] | None:
    """``"1,2,3"`` or ``"100-149"`` (inclusive) to a list of seeds."""
    if text is None:
        return None
    accepted = "integers >= 0 as 1,2,3 or an increasing range 100-149"
    seeds: list[int] = []
    try:
        for part in text.split(","):
            if "-" in part.strip()[1:]:
                first, last = (int(x) for x in part.rsplit("-", 1))
                if last < first:
                    raise ValueError(f"the range {part.strip()} runs backwards")
                seeds += range(first, last + 1)
            else:
                seeds.append(int(part))
    except ValueError as exc:
        why = f" ({exc})" if "runs backwards" in str(exc) else ""
        raise fail(f"--seeds {text!r}{why}: give {accepted}") from None
    if any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise fail(f"--seeds {text!r} has negative or repeated seeds: give {accepted}")
    return seeds


def run_evaluation(
    card: EnvCard, policy: str, protocol: EvalProtocol, workers: int | None, backend: str,
    address: str | None, out: Path, resume: bool,
) -> Result:  # fmt: skip
    """Evaluate with a progress bar; bad input becomes a clear error and exit code 2, Ctrl-C a
    line saying what was kept and how to finish (exit 130)."""
    from rlbench_suite.evaluation.runner import episode_log_path, evaluate

    progress = progress_bar()  # started once the evaluation is accepted: none before an error
    task = progress.add_task(f"{card.id} ({backend})", total=protocol.episodes)
    due = throttle()  # piped, no bar: a line now and then

    def finished(_: object) -> None:
        progress.advance(task)
        if not errors.is_terminal and due():
            done = progress.tasks[task].completed
            errors.print(f"{card.id} ({backend}): {done:g}/{protocol.episodes} episodes, "
                         f"{progress.tasks[task].elapsed or 0:.0f} s", highlight=False)

    try:
        try:
            return evaluate(
                card, policy, protocol, workers=workers, backend=backend,  # type: ignore[arg-type]
                address=address, out=out, resume=resume, on_start=progress.start,
                on_episode=finished,
            )  # fmt: skip
        finally:
            progress.stop()
    except (SeedOverlapError, FileExistsError, FileNotFoundError, UnknownEnvError) as exc:
        raise fail(exc) from None
    except ValueError as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        log = episode_log_path(out)
        if not log.is_file():
            raise stopped("interrupted before the evaluation started; run the same command "
                          "again") from None  # fmt: skip
        lines = log.read_text(encoding="utf-8").splitlines()[1:]  # after its header
        kept = sum(line.endswith("}") for line in lines)  # whole lines only
        raise stopped(f"interrupted; {kept} finished episodes kept in {log}; run the same "
                      "command with --resume to finish") from None  # fmt: skip


@app.command("eval")
def eval_command(
    env_id: Annotated[str, typer.Argument(
        help="The environment id, or an offline (dataset) id, scored on the dataset's "
        "references.")],
    policy: Annotated[
        str, typer.Option(help=f"One of: {POLICY_SPECS_TEXT}.")
    ],
    episodes: Annotated[int | None, typer.Option(min=1, help="Episodes (default: card's).")] = (
        None
    ),
    seeds: Annotated[str | None, typer.Option(help="Seeds: 1,2,3 or 100-149.")] = None,
    stochastic: Annotated[bool, typer.Option(help="Sample actions instead of the mode.")] = False,
    workers: Annotated[int | None, typer.Option(min=1, help="Workers (default: all cores).")] = (
        None
    ),
    backend: Annotated[str, typer.Option(help="local or ray.")] = "local",
    address: Annotated[str | None, typer.Option(help="Ray cluster address.")] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Result JSON (default: under $RLBENCH_DATA_DIR or the user data "
                     "dir, results/; the path is printed)."),
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run (same --out).")] = False,
    reset_option: Annotated[
        list[str] | None,
        typer.Option(help="KEY=VALUE passed to every reset (repeatable), e.g. split=test."),
    ] = None,
    submit: Annotated[bool, typer.Option(
        help="Then submit the result to --server (and the ONNX file of an onnx: or baseline: "
        "policy, to verify).")] = False,
    server: Annotated[
        str | None, typer.Option(help="The leaderboard's URL (with --submit).")
    ] = None,
    method: Annotated[str | None, typer.Option(help="The method to submit it as.")] = None,
) -> None:  # fmt: skip
    """Evaluate a policy on an environment and write a scored, reproducible result.

    Reset options are part of the protocol (and its hash), so results on held-out variations
    (``--reset-option split=test``) are never ranked with the default ones. With ``--submit``
    the result goes to the leaderboard at ``--server`` (as ``rlbench submit`` sends it; the
    token from $RLBENCH_LEADERBOARD_TOKEN or the config file), with the policy's ONNX file when
    it has one, so the server can verify the row.
    """
    if backend not in BACKENDS:
        raise fail(f"unknown --backend {backend!r}; accepted: {', '.join(BACKENDS)}")
    token = _submission_checks(submit, server, method)
    try:
        card = resolve_card(env_id)
        protocol = default_protocol(
            card, episodes=episodes, seeds=_parse_seeds(seeds),
            deterministic=False if stochastic else None,
            reset_options=_parse_reset_options(reset_option or []),
        )  # fmt: skip
    except (UnknownEnvError, ValueError) as exc:
        raise fail(exc) from None
    if token is not None:
        _refuse_unranked_protocol(card, protocol)
    out = out or result_file(card.namespace, card.name, policy, protocol.hash)
    result = run_evaluation(card, policy, protocol, workers, backend, address, out, resume)
    show_result(result)
    _note_random_reference(card, policy)
    console.print(f"result written to {out}")
    if token is not None and server is not None:
        from rlbench_suite.cli.leaderboard_commands import submit_files

        onnx = _onnx_file(policy)
        if onnx is None:
            console.print(f"{policy} is not an ONNX file: submitting the result alone (it stays "
                          "self-reported; pass an onnx: policy to have it verified)")  # fmt: skip
        submit_files(server, token, out, onnx, method)


def _note_random_reference(card: EnvCard, policy: str) -> None:
    """After scoring ``random``: a note when the card's random reference was measured with
    another policy (a text dataset's: random admissible commands, where ``random`` types
    strings the game rejects), so a score far below 0 is not read as a defect."""
    reference = card.reference.random if card.reference is not None else None
    if policy.strip() != "random" or reference is None or reference.policy == "random":
        return
    console.print(f"note: {card.id}'s random reference ({number(reference.value)}) was measured "
                  f"with {reference.policy}, not with 'random' (a sample of the action space "
                  "itself); score that policy to compare with the reference",
                  soft_wrap=True)  # fmt: skip


def _submission_checks(submit: bool, server: str | None, method: str | None) -> str | None:
    """Before evaluating: the token ``--submit`` will send, or a clean error."""
    if not submit:
        if server is not None or method is not None:
            raise fail("--server and --method are for --submit; add --submit to send the result")
        return None
    if server is None:
        raise fail("--submit needs --server URL (the leaderboard to submit to)")
    from rlbench_suite.cli.leaderboard_commands import submission_token

    return submission_token()


def _refuse_unranked_protocol(card: EnvCard, protocol: EvalProtocol) -> None:
    """Before evaluating: a leaderboard takes only the card's own protocol, so a result
    under another one would be refused after the whole evaluation."""
    expected = default_protocol(card)
    if protocol.hash == expected.hash:
        return
    from rlbench_suite.leaderboard.store import protocol_differences

    differences = protocol_differences(
        protocol.model_dump(mode="json"), expected.model_dump(mode="json")
    )
    raise fail(
        f"--submit: a leaderboard ranks {card.id} only under its card's protocol, and "
        f"{'; '.join(differences)}; drop --episodes, --seeds, --stochastic and --reset-option "
        "to submit, or evaluate without --submit"
    )


def _onnx_file(policy: str) -> Path | None:
    """The ONNX file an ``onnx:`` or ``baseline:`` policy spec names, if it is one."""
    from rlbench_suite.policies.specs import artifact_of

    try:
        path = artifact_of(policy)
    except (ValueError, LookupError):
        return None
    return path if path is not None and path.suffix == ".onnx" and path.is_file() else None


def _parse_reset_options(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings as a dict; values are JSON where they parse, else strings."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--reset-option expects KEY=VALUE (e.g. split=test), got {item!r}")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


def show_result(result: Result) -> None:
    """A table of a result's aggregates."""
    name = display_name(result.policy.get("spec") or result.policy.get("name", "?"))
    table = Table(title=f"{result.env_id}: {name}")
    for column in ("metric", "estimate", "95% interval"):
        table.add_column(column)
    table.add_column("method", overflow="fold")  # narrow terminals: folded, never cut short
    rows = dict(result.aggregates)
    if result.normalized_score is not None:
        rows["normalized_score"] = result.normalized_score
    for name, est in rows.items():
        table.add_row(name, number(est.point), f"[{number(est.low)}, {number(est.high)}]",
                      est.method)  # fmt: skip
    console.print(table)
    if result.normalization is not None:
        n = result.normalization
        console.print(f"normalized_score: {n.metric} on {n.references_from}'s references (random "
                      f"{number(n.random)}, expert {number(n.expert)}); {n.scale}",
                      soft_wrap=True)  # fmt: skip
    options = result.protocol.reset_options
    console.print(
        f"{result.protocol.episodes} episodes, protocol {result.protocol.protocol_id}"
        + (f" (reset options {options})" if options else "")
        + ", "
        f"{result.backend} x{result.workers}, {result.wall_time_s:.1f} s, {result.verification}"
    )


def checked_result(path: Path) -> Result:
    """A result file, read and validated (its figures against its own episodes and the
    references it names), then checked against its card where this install knows the card
    (``core.summary.summary_differences``). A figure that disagrees with the episodes is
    ``error: <file>: ...`` and exit 2; a normalized score on other references than the card's
    (a card's references change between versions) is a note, and the file is read."""
    from rlbench_suite.core.summary import summary_differences

    try:
        result = load_result(path)
    except ResultError as exc:
        raise fail(f"{exc}{_reference_hint(path)}") from None
    try:
        card = resolve_card(result.env_id)
    except UnknownEnvError:
        return result  # a card this install lacks: the file's own consistency is all we know
    unscored = result.model_copy(update={"normalized_score": None, "normalization": None})
    wrong = summary_differences(card, unscored)
    if wrong:
        raise fail(f"{path}: the result disagrees with its own episodes: " + "; ".join(wrong))
    stale = summary_differences(card, result)  # what is left: its references are not the card's
    if stale:  # consistent in itself (load_result): scored before the card changed, or edited
        errors.print(f"note: {path}'s normalized score is not on {card.id}'s references as the "
                     "card has them now (scored before they changed, or edited): "
                     + "; ".join(stale), soft_wrap=True, highlight=False, style="yellow")
    return result


def _reference_hint(path: Path) -> str:
    """``; normalization.<field> ... differs from <card>'s card, which has ...`` where a file
    that failed validation names references other than its card's (why its normalized score
    disagrees); empty otherwise."""
    from rlbench_suite.core.result import Normalization
    from rlbench_suite.core.summary import reference_differences

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        named = Normalization.model_validate(data["normalization"])
        card = resolve_card(str(data["env_id"]))
    except (OSError, ValueError, KeyError, TypeError, UnknownEnvError):
        return ""
    return "".join(f"; {line}" for line in reference_differences(card, named))


@results_app.command("show")
def results_show(files: Annotated[list[Path], typer.Argument(help="Result JSON files.")]) -> None:
    """Show the aggregates of result files."""
    for path in files:
        show_result(checked_result(path))


@app.command()
def reproduce(
    result_file: Annotated[
        Path, typer.Argument(help="A result JSON file, or a training run (folder or run.json).")
    ],
    workers: Annotated[int | None, typer.Option(min=1, help="Workers (default: all cores).")] = (
        None
    ),
    out: Annotated[
        Path | None, typer.Option(help="Training runs: re-train here (default: a temp folder).")
    ] = None,
    write: Annotated[
        bool, typer.Option("--write", help="Where the episodes differ, record the re-run's "
                           "episodes, aggregates and provenance in the result file (same "
                           "protocol, env spec and policy; refused otherwise).")
    ] = False,
    accept_rounding: Annotated[
        bool, typer.Option("--accept-rounding", help="Count returns that differ only in their "
                           f"last bits (relative {ROUNDING:g}: another CPU's floating point; "
                           "lengths and successes equal) as reproduced, exit 0. Without it "
                           "any difference exits 1.")
    ] = False,
) -> None:  # fmt: skip
    """Re-run a result's evaluation from its protocol and policy, or re-train a training run
    from its record and compare the final evaluations; report any difference."""
    from rlbench_suite.baselines.reproduce_run import is_training_run
    from rlbench_suite.evaluation.reproduce import (
        compare_runs,
        provenance_changes,
        rerun,
        rescored,
        rounding_only,
    )

    if is_training_run(result_file):
        if write:
            raise fail("--write takes a result file; a training run is re-trained elsewhere "
                       "(--out) and compared, never rewritten")  # fmt: skip
        if accept_rounding:
            raise fail("--accept-rounding takes a result file; a training run's re-training "
                       "is compared exactly (its learning curve and policy too)")  # fmt: skip
        from rlbench_suite.cli.reproduce_run_command import reproduce_training_run

        reproduce_training_run(result_file, out, workers or 1)
        return

    original = checked_result(result_file)
    try:
        again = rerun(original, workers=workers)
    except (ValueError, LookupError, FileNotFoundError) as exc:
        raise fail(exc) from None
    differences = compare_runs(original, again)
    for change in provenance_changes(original, again):
        console.print(Text.assemble(("provenance:", "yellow"), f" {change}"))
    if not differences:
        console.print(Text.assemble(("reproduced", "green"),
                                    f": {original.protocol.episodes} episodes identical"))
        return
    rounding = rounding_only(original, again)
    if rounding is None:
        for line in differences:
            console.print(Text.assemble(("differs:", "red"), f" {line}"))
    else:
        count, largest = rounding
        why = (f"only in the last bits of {counted(count, 'episode')} (max |diff| "
               f"{largest:.2g}): another CPU's floating point (returns within relative "
               f"{ROUNDING:g}; lengths and successes identical)")  # fmt: skip
        if accept_rounding and not write:
            console.print(Text.assemble(("reproduced", "green"), f" (--accept-rounding): "
                                        f"the re-run differs {why}"))  # fmt: skip
            return
        hint = "" if write else "; --accept-rounding counts that as reproduced"
        console.print(Text.assemble(("differs", "red"), f" {why}{hint}"))
    if not write:
        raise typer.Exit(1)
    try:
        rescored(original, again).save(result_file)
    except ValueError as exc:
        raise fail(exc) from None
    console.print(f"wrote the re-run into {result_file} ({counted(len(differences), 'episode')} "
                  "differed)")  # fmt: skip
