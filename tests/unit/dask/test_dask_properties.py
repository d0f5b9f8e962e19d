"""Random programs over random chunkings: ``.compute()`` on the threaded scheduler equals NumPy.

The programs and chunkings are those of ``chunked_expressions.py`` (extents up
to 5); the budgets 16 and 1e6 group the ops differently; the tasks run the
numpy target, or the native one where it runs.
"""

from __future__ import annotations

import pytest
from chunked_expressions import chunked, compute_case, inputs_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_expressions import cases, check

from tdsl import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

dask = pytest.importorskip("dask")

TARGETS = ("numpy",) if native_unavailable_reason() is not None else ("numpy", "native")
JITS = {
    (budget, target): JITTensorKernel(memory_budget=budget, threads=1, target=target)
    for budget in (16, 1_000_000)
    for target in TARGETS
}


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.data(), st.sampled_from(sorted(JITS)), st.integers(0, 2**16))
def test_random_programs_over_random_chunks_equal_numpy(
    data: st.DataObject, jit: tuple[int, str], seed: int
) -> None:
    case = data.draw(cases(dtypes=("f32", "f64"), max_dim=5))
    chunks = data.draw(chunked(case))
    arrays, given_values = inputs_for(case, chunks, seed)
    got = compute_case(JITS[jit], case, given_values, scheduler="threads", num_workers=2)
    check(case, arrays, got)
