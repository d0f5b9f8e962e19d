"""tdsl kernels on a ``distributed.LocalCluster`` of two worker processes.

One cluster serves the module (starting one takes seconds).  Workers rebuild
each kernel from its IR text and options (the target among them) and compile
it once per process: the client process compiles no task kernel at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from chunked_expressions import chunked, compute_case, inputs_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_expressions import cases, check

from tdsl import JITTensorKernel
from tdsl.dask import tasks
from tdsl.runtime.compile import native_unavailable_reason

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    # the scheduler's HTTP server on a free port (":0"): with the dashboard off (None) it
    # still took 8787, and two test processes starting a cluster at once (pytest -n 2
    # spreads this module's tests over both) failed with "Port 8787 is already in use"
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with cluster, distributed.Client(cluster, set_as_default=False) as client:
        yield client


JIT = JITTensorKernel(memory_budget=64, threads=1)


def softmax(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_kernels_are_rebuilt_and_compiled_once_in_each_worker_process(client: Any) -> None:
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((30, 20)), rng.standard_normal((20, 12)), rng.standard_normal(12)
    here = tasks.cache_info()
    result = JIT(
        "softmax(x @ w + b)",
        x=da.from_array(x, chunks=(7, 9)),
        w=da.from_array(w, chunks=(9, 5)),
        b=b,
    )
    np.testing.assert_allclose(client.compute(result).result(), softmax(x @ w + b), rtol=1e-10)
    column_sums = JIT("sum(relu(x), axis=0)", x=da.from_array(x, chunks=(4, 20)))
    got = client.compute(column_sums).result()
    np.testing.assert_allclose(got, np.maximum(x, 0).sum(axis=0), rtol=1e-10)
    assert tasks.cache_info() == here, "the client compiled no task kernel"
    infos = client.run(tasks.cache_info)
    assert len(infos) == 2 and sum(i.misses for i in infos.values()) > 0
    for info in infos.values():
        assert info.currsize == info.misses, "a worker compiled a kernel twice"


@pytest.mark.skipif(native_unavailable_reason() is not None, reason="no native target here")
def test_workers_run_the_native_target_when_the_jit_picked_it(client: Any) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((24, 10))
    jit = JITTensorKernel(memory_budget=64, threads=1, target="native")
    before = client.run(tasks.compiled_targets)
    result = jit("softmax(x) * 2 + sum(x, axis=0)", x=da.from_array(x, chunks=(5, 4)))
    got = client.compute(result).result()
    np.testing.assert_allclose(got, softmax(x) * 2 + x.sum(axis=0), rtol=1e-10)
    after = client.run(tasks.compiled_targets)
    new = sum(after[w].get("native", 0) - before[w].get("native", 0) for w in after)
    assert new > 0, "the workers compiled native kernels"
    for info in client.run(tasks.cache_info).values():
        assert info.currsize == info.misses, "a worker compiled a kernel twice"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(0, 2**16))
def test_random_programs_on_the_cluster_equal_numpy(
    client: Any, data: st.DataObject, seed: int
) -> None:
    case = data.draw(cases(dtypes=("f32", "f64"), max_dim=5))
    chunks = data.draw(chunked(case))
    arrays, given_values = inputs_for(case, chunks, seed)
    check(case, arrays, compute_case(JIT, case, given_values, scheduler=client))
