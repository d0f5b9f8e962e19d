"""``prod`` multiplies in NumPy's order on every target, its reduction dim cut into tiles
or not: NumPy's product is sequential (the running product times each element in turn,
in memory order for a product of every axis), and a product is not associative.  The
numpy target multiplied each tile's product into the running one: up to 31 ulp off, and
fifteen 1e30 and fifteen 1e-30 in tiles of 15 gave inf * 0 = nan where NumPy gives inf
(found by fuzzing ``tdsl.trace``).  Over several axes the product was nested, one axis
at a time: the last ulp off (found by a second fuzzer)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import tdsl


@pytest.mark.parametrize("budget", [16, 64, 1000, None])
def test_products_are_numpys_bit_for_bit(jit_target: str, budget: int | None) -> None:
    rng = np.random.default_rng(11)
    y = (1 + rng.standard_normal((3, 4, 40)) * 0.3).astype(np.float32)
    big = np.array([[1e30] * 15 + [1e-30] * 15, [1e-30] * 15 + [1e30] * 15])

    def fn(y: Any, big: Any) -> Any:
        a = np.abs(y)  # (computed in the kernel: its tiles are the kernel's)
        return (
            np.prod(a, axis=-1),
            np.prod(a, axis=0, keepdims=True),
            np.prod(a, axis=1, dtype=np.float64),
            np.prod(a),
            np.prod(a, keepdims=True),
            np.prod(a[0, 0]),
            np.prod(np.abs(big), axis=1),
            np.prod(np.abs(big)),
            np.prod(a, axis=(0, 2)),
            np.prod(a.astype(np.float64), axis=(2, 0), keepdims=True),
            np.prod(np.abs(big), axis=(0, 1)),
            np.prod(a.astype(np.float16), axis=-1),
            np.prod(y > 1, axis=-1),
        )

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = fn(y, big)
        got = tdsl.trace(fn, memory_budget=budget)(y, big)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert (g.dtype, g.shape) == (w.dtype, w.shape), k
        assert np.array_equal(g, w, equal_nan=True), (k, g, w)


def test_products_over_dask_chunks_are_numpys() -> None:
    """Dask chunks cutting a product's axis: the axis is rechunked whole (as a scan's),
    not reduced as a tree of the chunks' products, which gave nan for inf."""
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(2)
    y = (1 + rng.standard_normal((6, 40)) * 0.3).astype(np.float32)
    big = np.array([[1e30] * 15 + [1e-30] * 15, [1e-30] * 15 + [1e30] * 15])
    functions = (
        lambda y: np.prod(np.abs(y), axis=1),
        lambda y: np.prod(np.abs(y), axis=0),
        lambda y: np.prod(np.abs(y)),
    )
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for array in (y, big):
            for chunks in ((2, 10), (1, 7)):
                for fn in functions:
                    got = np.asarray(tdsl.trace(fn)(da.from_array(array, chunks=chunks)))
                    want = fn(array)
                    assert (got.dtype, got.shape) == (want.dtype, want.shape)
                    assert np.array_equal(got, want), (chunks, got, want)
