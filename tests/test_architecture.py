"""The package's shape: a light core of contracts, no import cycles, complete provenance."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

from rlbench_suite.core.catalog import cards
from rlbench_suite.core.provenance import PACKAGES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rlbench_suite"
HEAVY = ("mujoco", "pybullet", "minigrid", "torch", "ray", "stable_baselines3", "onnxruntime")


def _imported_after(statement: str) -> dict:
    """Run ``statement`` in a fresh interpreter; report the modules it imported and whether
    any environment was built (gymnasium's and PettingZoo's ``make`` are trapped first)."""
    probe = f"""
import json, sys
import gymnasium, gymnasium.envs.registration as registration
made = []
def trap(*args, **kwargs):
    made.append(str(args[:1]))
    raise RuntimeError("an environment was built")
gymnasium.make = registration.make = gymnasium.make_vec = registration.make_vec = trap
{statement}
print(json.dumps({{"modules": sorted(sys.modules), "made": made}}))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    "statement",
    [
        "import rlbench_suite.core",
        "from rlbench_suite.core.result import Result, load_result",
        "from rlbench_suite.core import cards, catalog, metrics, protocol, scoring, summary",
        "from rlbench_suite.evaluation import Result, EvalProtocol, load_result",
    ],
)
def test_the_contracts_import_no_simulator_torch_or_ray(statement):
    seen = _imported_after(statement)
    heavy = [m for m in seen["modules"] if m.split(".")[0] in HEAVY]
    assert heavy == [], f"{statement!r} imported {heavy[:10]}"
    assert seen["made"] == [], f"{statement!r} built environments: {seen['made']}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Every import between the package's modules, lazy (in-function) ones included;
    imports under ``if TYPE_CHECKING:`` are left out (they never run)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = name.split(".")
                    if path.name != "__init__.py":
                        package = package[:-1]
                    package = package[: len(package) - node.level + 1]
                    base = ".".join(package + ([node.module] if node.module else []))
                targets = [f"{base}.{alias.name}" for alias in node.names] or [base]
            for target in targets:
                found = resolve(target) if target.startswith("rlbench_suite") else None
                if found and found != name:
                    graph[name].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_core_imports_nothing_of_the_suite_outside_core():
    outside = {
        (module, target)
        for module, targets in import_graph().items()
        if module.startswith("rlbench_suite.core")
        for target in targets
        if not target.startswith("rlbench_suite.core") and target != "rlbench_suite.resources"
    }
    assert outside == set()


LEADERBOARD_EXTRA = {
    "rlbench_suite.leaderboard.worker": (
        "rlbench_suite.evaluation", "rlbench_suite.registry", "rlbench_suite.policies"),
    # the site as a dataset remote: the cache's layout and the mirror's Range rules
    "rlbench_suite.leaderboard.dataset_files": (
        "rlbench_suite.datasets.cache", "rlbench_suite.datasets.server"),
    # the tournament Elo of competitive cards: the tournaments' statistics (numpy only)
    "rlbench_suite.leaderboard.elo": ("rlbench_suite.evaluation.ratings",),
    # a self-reported result against the server's re-run: `rlbench reproduce`'s comparison
    "rlbench_suite.leaderboard.reconcile": ("rlbench_suite.evaluation.reproduce",),
}  # fmt: skip
"""What a leaderboard module (and those whose names it prefixes) may import beyond core."""


def test_the_leaderboard_imports_only_core_and_the_worker_the_harness():
    allowed = ("rlbench_suite.core", "rlbench_suite.resources", "rlbench_suite.leaderboard")
    outside = {
        (module, target)
        for module, targets in import_graph().items()
        if module.startswith("rlbench_suite.leaderboard")
        for target in targets
        if not target.startswith(allowed)
        and not any(
            module.startswith(prefix) and target.startswith(extra)
            for prefix, extra in LEADERBOARD_EXTRA.items()
        )
    }
    assert outside == set()


# Requirements that no result depends on: the command line, card editing, remotes.
NOT_IN_RESULTS = {"typer", "rich", "tomlkit", "platformdirs", "fsspec", "filelock", "s3fs",
                  "pyyaml", "optuna", "cloudpickle"}  # fmt: skip
RESULT_EXTRAS = ("classic", "robotics", "multiagent", "text", "baselines", "datasets",
                 "distributed")  # fmt: skip
SIMULATORS_VIA_GYMNASIUM = ("mujoco", "box2d")  # gymnasium's own extras


def _name(requirement: str) -> str:
    for stop in "<>=[;! ":
        requirement = requirement.split(stop)[0]
    return requirement.strip().lower().replace("_", "-")


def test_provenance_records_every_library_a_result_depends_on():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    required = list(project["dependencies"])
    for extra in RESULT_EXTRAS:
        required += project["optional-dependencies"][extra]
    names = {_name(r) for r in required} | set(SIMULATORS_VIA_GYMNASIUM)
    missing = sorted(names - set(PACKAGES) - NOT_IN_RESULTS)
    assert missing == [], f"add {missing} to rlbench_suite.core.provenance.PACKAGES"


def test_provenance_records_every_package_an_environment_comes_from():
    distributions = importlib.metadata.packages_distributions()
    missing = set()
    for card in cards().values():
        top = card.entry_point.split(":")[0].split(".")[0]
        for dist in distributions.get(top, ["rlbench-suite"]):
            if dist.lower().replace("_", "-") not in PACKAGES:
                missing.add((card.id, dist))
    assert missing == set()
