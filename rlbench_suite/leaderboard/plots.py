"""Server-side plots (matplotlib to SVG), cached by their data: the same data, the same SVG.

Drawing is most of the time of a page with a plot and of a static export (one plot per
result), so each plot is kept in memory (the last :data:`MAX_CACHED`) and, once
:func:`use_disk_cache` names a folder (``rlbench leaderboard serve`` and ``export`` name
:func:`~rlbench_suite.paths.plot_cache_dir`), on disk, by a digest of its function, its data,
matplotlib's version and this module's source: a plot drawn once, by the server or an
export, is not drawn again, and a change of either draws it anew."""

from __future__ import annotations

import functools
import hashlib
import io
import os
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

MAX_CACHED = 256
_disk_cache: Path | None = None


def use_disk_cache(folder: Path | None) -> None:
    """Keep the plots drawn from now on under ``folder`` too (``None``: in memory only)."""
    global _disk_cache
    _disk_cache = folder


@functools.cache
def _drawing_version() -> str:
    """What the drawing depends on besides its data: matplotlib and this module."""
    source = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    return f"matplotlib {version('matplotlib')}, plots {source}"


def _cached(draw: Callable[..., str]) -> Callable[..., str]:
    """``draw`` (hashable arguments, an SVG back) cached in memory and on disk."""

    @functools.lru_cache(maxsize=MAX_CACHED)
    @functools.wraps(draw)
    def cached(*args) -> str:
        if _disk_cache is None:
            return draw(*args)
        key = repr((draw.__name__, args, _drawing_version())).encode()
        digest = hashlib.sha256(key).hexdigest()
        path = _disk_cache / digest[:2] / f"{digest}.svg"
        try:
            return path.read_text(encoding="utf-8")
        except OSError:
            pass
        svg = draw(*args)
        try:  # written whole, then moved: a reader never sees half a plot
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(f"{path.name}.{os.getpid()}.part")
            part.write_text(svg, encoding="utf-8")
            part.replace(path)
        except OSError:
            pass  # a read-only data dir: drawn again next time
        return svg

    return cached


def _svg(figure) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    # no date in the metadata: the same data gives the same bytes, in any process
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _figure(width: float = 6.4, height: float = 3.2):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "rlbench"  # stable ids: the same data gives the same bytes
    return plt.subplots(figsize=(width, height))


@_cached
def episode_returns(returns: tuple[float, ...], title: str) -> str:
    """Per-episode returns of one result, in episode order, with their mean."""
    figure, axes = _figure()
    axes.plot(range(1, len(returns) + 1), returns, marker="o", markersize=3, linewidth=1)
    mean = sum(returns) / len(returns)
    axes.axhline(mean, linestyle="--", color="grey", label=f"mean {mean:.4g}")
    axes.set_xlabel("episode")
    axes.set_ylabel("return")
    axes.set_title(title, fontsize=10)
    axes.legend(loc="best", fontsize=8)
    return _svg(figure)


@_cached
def score_distribution(groups: tuple[tuple[str, tuple[float, ...]], ...], scale: str) -> str:
    """Each ranked row's run scores (points) with their spread (box), best row on top."""
    figure, axes = _figure(height=max(1.6, 0.5 * len(groups) + 1))
    labels = [label for label, _ in groups][::-1]
    values = [list(scores) for _, scores in groups][::-1]
    if values:
        axes.boxplot(values, orientation="horizontal", widths=0.5)
        for index, scores in enumerate(values, start=1):
            axes.scatter(scores, [index] * len(scores), s=12, alpha=0.7, zorder=3)
        axes.set_yticks(range(1, len(labels) + 1), labels, fontsize=8)
    axes.set_xlabel(scale)
    return _svg(figure)


@_cached
def performance_profiles(
    taus: tuple[float, ...],
    curves: tuple[tuple[str, tuple[float, ...], tuple[float, ...], tuple[float, ...]], ...],
) -> str:
    """Fraction of runs x envs scoring above each threshold, with 95% bands."""
    figure, axes = _figure()
    for label, fraction, low, high in curves:
        axes.plot(taus, fraction, label=label)
        axes.fill_between(taus, low, high, alpha=0.2)
    axes.set_xlabel("normalized score threshold")
    axes.set_ylabel("fraction of runs above")
    axes.set_ylim(0, 1.02)
    if curves:
        axes.legend(loc="best", fontsize=8)
    return _svg(figure)
