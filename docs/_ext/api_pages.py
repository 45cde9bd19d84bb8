"""Sphinx extension: the API reference, a page per public package with every module in it.

The modules are found by walking the packages, so a new module appears in the reference
without editing a page; their docstrings are rendered by ``sphinx.ext.autodoc``. Pages go to
``api/`` (generated, not committed), written only when their text changes.

A function or class a package re-exports from its own modules (in its ``__all__``; for
``rlbench_suite`` itself, from anywhere in the suite) is documented under that public path
(``rlbench_suite.make_multiagent``, ``rlbench_suite.datasets.load``), the shortest one where
several export it, and left out of the module that defines it, which links to it instead.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

from env_pages import write_pages

PACKAGES = {
    "rlbench_suite.core": "The contracts: cards, catalog, scoring, protocol, Result, metrics.",
    "rlbench_suite.policies": "The Policy protocol, its adapters and `--policy` strings.",
    "rlbench_suite.wrappers": "The standardized wrappers: statistics, action masks, "
    "multi-agent converters, text wrappers, SB3 and vector adapters.",
    "rlbench_suite.evaluation": "The evaluation harness and analysis.",
    "rlbench_suite.baselines": "Training, tuning, the zoo.",
    "rlbench_suite.datasets": "Offline datasets: building, storage, loading, the cache, "
    "remotes and downloads, the mirror.",
    "rlbench_suite.leaderboard": "The leaderboard: database, storing and ranking results, "
    "verification, the site and API.",
    "rlbench_suite.demo": "`rlbench demo`: the whole suite at work in one command.",
}
AUTODOC_EXCLUDED = "model_config,model_fields,model_computed_fields,model_post_init"
"""conf.py's ``exclude-members`` (an ``:exclude-members:`` option replaces the default's)."""
TOP_LEVEL = {
    "rlbench_suite": "Registering the cards, `make_multiagent`, `register_cards`.",
    "rlbench_suite.registry": "Registration with Gymnasium and PettingZoo.",
    "rlbench_suite.previews": "Pictures and transcripts of environments (`rlbench info --render`).",
}


def modules_of(package: str) -> list[str]:
    """``package`` and its modules (not private ones, not ``__main__``), sorted."""
    found = [package]
    path = importlib.import_module(package).__path__
    for info in pkgutil.walk_packages(path, prefix=f"{package}."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return sorted(found)


def public_paths() -> dict[str, str]:
    """Defining path -> public path (``rlbench_suite.registry.make_multiagent`` ->
    ``rlbench_suite.make_multiagent``) of every function and class that ``rlbench_suite``
    exports in its ``__all__``, or a documented package exports from its own modules (a core
    contract that ``evaluation`` re-exports stays core's): the shortest such path."""
    found: dict[str, str] = {}
    for package in ["rlbench_suite", *PACKAGES]:  # shortest first
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            where = getattr(obj, "__module__", None)
            home = "rlbench_suite." if package == "rlbench_suite" else f"{package}."
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or not str(
                    where).startswith(home):  # fmt: skip
                continue
            found.setdefault(f"{where}.{obj.__qualname__}", f"{package}.{name}")
    return found


def _directive(public: str) -> str:
    package, name = public.rsplit(".", 1)
    obj = getattr(importlib.import_module(package), name)
    return f".. auto{'class' if inspect.isclass(obj) else 'function'}:: {public}"


def _automodule(module: str, public: dict[str, str] | None = None) -> list[str]:
    """autodoc writes reStructuredText, so its directive goes in an ``eval-rst`` block; the
    module's re-exported names are left out of it (and linked to), the names ``module``
    re-exports documented after it."""
    public = public_paths() if public is None else public
    moved = {d.rsplit(".", 1)[1]: p for d, p in public.items() if d.rsplit(".", 1)[0] == module}
    block = [f".. automodule:: {module}"]
    if moved:
        skipped = ",".join(sorted(moved))
        block.append(f"   :exclude-members: {AUTODOC_EXCLUDED},{skipped}")
    block += [_directive(p) for p in sorted(public.values()) if p.rsplit(".", 1)[0] == module]
    lines = ["```{eval-rst}", *block, "```", ""]
    if moved:
        links = ", ".join(f"{{py:obj}}`{p}`" for p in sorted(moved.values()))
        lines += [f"Documented under their public paths: {links}.", ""]
    return lines


def package_page(package: str, summary: str) -> str:
    public = public_paths()
    lines = [f"# `{package}`", "", summary, ""]
    for module in modules_of(package):
        if module != package:
            lines += [f"## `{module}`", ""]
        lines += _automodule(module, public)
    return "\n".join(lines)


def pages() -> dict[str, str]:
    """Page name -> text: an index, one page per package, one for the top-level modules."""
    named = {package.rsplit(".", 1)[1]: package for package in PACKAGES}
    top = ["# `rlbench_suite` and its top-level modules", ""]
    for module, summary in TOP_LEVEL.items():
        top += [f"## `{module}`", "", summary, "", *_automodule(module)]
    index = ["# API reference", "", "Generated from the docstrings of the public modules.", "",
             "| package | what |", "| --- | --- |",
             *(f"| [`{p}`]({n}.md) | {PACKAGES[p]} |" for n, p in named.items()),
             "| [`rlbench_suite`](toplevel.md) | registry, previews |", "",
             "```{toctree}", ":hidden:", "", *named, "toplevel", "```", ""]  # fmt: skip
    result = {"index": "\n".join(index), "toplevel": "\n".join(top)}
    result.update({name: package_page(p, PACKAGES[p]) for name, p in named.items()})
    return result


def write(out: Path) -> dict[str, int]:
    """Write the pages into ``out`` (see :func:`env_pages.write_pages`)."""
    return write_pages(out, pages())


def import_all() -> None:
    """Import every documented module before autodoc reads any: documenting a pydantic model
    with ``extra="allow"``, autodoc writes a string into ``pydantic.BaseModel.__annotations__``
    (``'Dict[str, Any] | None'`` for ``__pydantic_extra__``) that pydantic cannot resolve, so
    a model of that kind defined afterwards (FastAPI's, the leaderboard's) fails to build."""
    for package in [*PACKAGES, *TOP_LEVEL]:
        for module in modules_of(package) if package in PACKAGES else [package]:
            importlib.import_module(module)


def _on_builder_inited(app: Any) -> None:
    import_all()
    write(Path(app.srcdir) / "api")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
