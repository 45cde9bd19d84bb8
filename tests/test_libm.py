"""rlbench_suite.envs.libm: numpy's exp and arctan2 with the C library's bits on any CPU (on a
CPU with AVX-512, numpy's own differ in about one value in twenty, and QuadHover's data built
on an AMD EPYC with AVX2 did not rebuild there)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlbench_suite.envs import libm


@pytest.fixture(params=["as this CPU picks", "element by element"])
def path(request, monkeypatch):
    """Both code paths: numpy's ufunc where it agrees with the C library, and the fallback."""
    if request.param == "element by element":
        monkeypatch.setattr(libm, "_agrees_with_libm", lambda name: False)
    return request.param


def test_exp_and_arctan2_have_the_c_librarys_bits(path):
    rng = np.random.default_rng(7)
    x, y = rng.normal(scale=4.0, size=(2, 50_000))
    assert [v.hex() for v in libm.exp(x).tolist()] == [math.exp(v).hex() for v in x.tolist()]
    got = libm.arctan2(y, x).tolist()
    assert [v.hex() for v in got] == [math.atan2(a, b).hex() for a, b in zip(y, x, strict=True)]


def test_shapes_scalars_and_edges_behave_as_numpys(path):
    grid = np.linspace(-3.0, 3.0, 12).reshape(3, 4)
    out = libm.exp(grid)
    assert out.shape == (3, 4) and out.dtype == np.float64
    assert isinstance(libm.exp(0.5), np.float64) and libm.exp(0.5) == math.exp(0.5)
    assert isinstance(libm.exp(np.array(0.5)), np.float64)
    assert libm.arctan2(grid[0], 1.0).shape == (4,)  # broadcasting
    with np.errstate(over="ignore"):
        assert np.isinf(libm.exp(np.array([1000.0])))[0]  # numpy's inf, not OverflowError
    assert libm.exp(-np.inf) == 0.0 and np.isnan(libm.exp(np.nan))
    assert libm.arctan2(0.0, -1.0) == math.pi
