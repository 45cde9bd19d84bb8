"""Element-wise ``exp`` and ``arctan2`` with the C library's bits on every x86-64 CPU.

numpy's float64 ``exp`` and ``arctan2`` have a code path for AVX-512 (numpy's ``X86_V4``) that
rounds differently from the C library's functions in about one value in twenty (``log`` in
one in 400; ``tanh``, ``sinh``, ``cosh``, ``tan``, ``arcsin``, ``arccos``, ``arctan``,
``expm1``, ``log1p``, ``log2``, ``log10``, ``cbrt``, ``exp2`` and ``power`` differ too; ``sin``,
``cos``, ``sqrt`` and ``hypot`` agree); its AVX2 and baseline paths call the C library. An env
computing its rewards or dynamics through them emitted other data on a CPU with AVX-512 than on
one without, so a dataset built on one did not rebuild on the other (QuadHover's, through its
reward's ``exp`` and its PID's ``arctan2``). An env whose data should rebuild anywhere takes
such functions from here (add one as :data:`_LIBM` does), not from numpy. The C library is
glibc's, which picks its own variants per CPU (FMA or not); the CPUs the cards were built on
agree.

These functions give the C library's values everywhere: numpy's ufunc where it agrees with
the C library on a probe of 4,096 values (checked once per process), else Python's ``math``
function (the C library's) element by element, about 35 times slower: 50 µs for 256 values.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

_PROBE_SIZE = 4096


@functools.cache
def _agrees_with_libm(name: str) -> bool:
    """Whether numpy's float64 ``name`` gives the C library's bits on a fixed probe."""
    rng = np.random.default_rng(20261130)
    args = [rng.normal(scale=3.0, size=_PROBE_SIZE) for _ in range(_ARITY[name])]
    ours = getattr(np, name)(*args)
    theirs = np.frompyfunc(_LIBM[name], len(args), 1)(*args).astype(np.float64)
    return bool(np.array_equal(ours, theirs))


def _libm_exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:  # numpy's exp gives inf there
        return math.inf


_LIBM: dict[str, Callable[..., float]] = {"exp": _libm_exp, "arctan2": math.atan2}
_ARITY = {"exp": 1, "arctan2": 2}


def _apply(name: str, *args: np.ndarray | float) -> np.ndarray | np.float64:
    arrays = [np.asarray(a, dtype=np.float64) for a in args]
    if _agrees_with_libm(name):
        return getattr(np, name)(*arrays)
    out = np.asarray(np.frompyfunc(_LIBM[name], len(arrays), 1)(*arrays), dtype=np.float64)
    return out if out.ndim else out[()]


def exp(x: np.ndarray | float) -> np.ndarray | np.float64:
    """``np.exp(x)`` in float64, with the C library's ``exp`` bits on any CPU."""
    return _apply("exp", x)


def arctan2(y: np.ndarray | float, x: np.ndarray | float) -> np.ndarray | np.float64:
    """``np.arctan2(y, x)`` in float64, with the C library's ``atan2`` bits on any CPU."""
    return _apply("arctan2", y, x)
