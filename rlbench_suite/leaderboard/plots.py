"""Server-side plots (matplotlib to SVG), cached by their data: the same data, the same SVG."""

from __future__ import annotations

import functools
import io

MAX_CACHED = 256


def _svg(figure) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _figure(width: float = 6.4, height: float = 3.2):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "rlbench"  # stable ids: the same data gives the same bytes
    return plt.subplots(figsize=(width, height))


@functools.lru_cache(maxsize=MAX_CACHED)
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


@functools.lru_cache(maxsize=MAX_CACHED)
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


@functools.lru_cache(maxsize=MAX_CACHED)
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
