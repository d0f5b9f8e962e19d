"""Random programs over random chunkings, for the Dask tests (threaded and distributed).

The programs are the random expressions of ``tests/unit/random_expressions.py``
(NumPy's value of each computed from its own expression tree).  Each input is a
NumPy array or a Dask array with random chunks along every axis: chunks that
cut rows, columns, both or none, uneven last chunks, and inputs read along one
dim with different chunks.  Tree reductions reorder sums, so results are
compared with a tolerance (tight for float64).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from hypothesis import assume, event
from hypothesis import strategies as st
from random_expressions import Case, random_inputs

from tdsl import JITTensorKernel

Array = np.ndarray[Any, Any]


@st.composite
def chunked(draw: st.DrawFn, case: Case) -> dict[str, tuple[int, ...] | None]:
    """Per input: None (a NumPy array) or the chunk size along each axis; at least one
    input is a Dask array."""
    assume(case.order)
    out: dict[str, tuple[int, ...] | None] = {}
    for k, name in enumerate(case.order):
        shape = case.shapes[name]
        if k > 0 and draw(st.integers(0, 3)) == 0:
            out[name] = None
        else:
            # small chunks half the time: most dims cut, uneven last chunks
            out[name] = tuple(
                draw(st.integers(1, max(1, extent // draw(st.sampled_from([1, 2])))))
                for extent in shape
            )
    return out


def inputs_for(
    case: Case, chunks: dict[str, tuple[int, ...] | None], seed: int
) -> tuple[dict[str, Array], dict[str, Any]]:
    import dask.array as da

    arrays = random_inputs(case, seed)
    given = {
        name: a if chunks[name] is None else da.from_array(a, chunks=chunks[name])
        for name, a in arrays.items()
    }
    return arrays, given


def compute_case(jit: JITTensorKernel, case: Case, given: dict[str, Any], **options: Any) -> Any:
    """``case`` on ``given`` through ``jit``: a Dask array, computed (with ``options``)."""
    import dask.array as da

    result = jit(case.text, **given)
    assert isinstance(result, da.Array), case.text
    layers = " ".join(str(name) for name in result.dask.layers)
    for what in ("pass", "aggregate", "rechunk", ".1_"):
        event(f"graph has {what}: {what in layers}")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log of a value NumPy also logs
        return result.compute(**options)
