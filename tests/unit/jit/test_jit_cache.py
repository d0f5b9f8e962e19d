"""The kernel cache: keys, hits, LRU eviction, statistics, and thread safety."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from tdsl.jit import CacheInfo, CompiledKernel, JITTensorKernel


def test_compile_hits_return_the_same_kernel() -> None:
    jit = JITTensorKernel()
    shapes = {"A": (4, 4), "B": (4, 4)}
    first = jit.compile("relu(A)+B", shapes)
    assert jit.cache_info() == CacheInfo(hits=0, misses=1, maxsize=256, currsize=1)
    assert jit.compile("relu(A)+B", {"B": [4, 4], "A": (4, 4)}) is first  # order, lists
    # float64 is the default: spelled out or not, one kernel
    assert jit.compile("relu(A)+B", shapes, "f64") is first
    assert jit.compile("relu(A)+B", shapes, {"A": np.float64}) is first
    assert jit.compile("relu(A)+B", shapes, {"A": "f32"}) is not first
    assert jit.cache_info().hits == 3


def test_key_covers_source_shapes_dtypes_and_options() -> None:
    jit = JITTensorKernel()
    base = jit.compile("relu(A)+B", {"A": (4,), "B": (4,)}, "f32")
    others = [
        jit.compile("relu(A) + B", {"A": (4,), "B": (4,)}, "f32"),
        jit.compile("relu(A)+B", {"A": (5,), "B": (5,)}, "f32"),
        jit.compile("relu(A)+B", {"A": (4,), "B": (4,)}, "f64"),
        JITTensorKernel(memory_budget=64).compile("relu(A)+B", {"A": (4,), "B": (4,)}, "f32"),
        JITTensorKernel(threads=2).compile("relu(A)+B", {"A": (4,), "B": (4,)}, "f32"),
    ]
    assert all(o is not base for o in others)
    assert len({id(o) for o in others}) == len(others)


def test_one_shot_calls_count_as_hits(rng: np.random.Generator) -> None:
    jit = JITTensorKernel()
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    for _ in range(5):
        jit("A*B", A=a, B=b)
    info = jit.cache_info()
    assert (info.hits, info.misses, info.currsize) == (4, 1, 1)
    jit("A*B", A=a.astype(np.float32), B=b.astype(np.float32))
    jit("A*B", A=a, B=b)
    info = jit.cache_info()
    assert (info.hits, info.misses, info.currsize) == (5, 2, 2)


def test_lru_eviction_and_clear() -> None:
    jit = JITTensorKernel(cache_size=2)
    k1 = jit.compile("relu(A)", {"A": (1,)})
    k2 = jit.compile("relu(A)", {"A": (2,)})
    assert jit.compile("relu(A)", {"A": (1,)}) is k1  # k1 is now the most recent
    jit.compile("relu(A)", {"A": (3,)})  # evicts k2
    assert jit.cache_info().currsize == 2
    assert jit.compile("relu(A)", {"A": (1,)}) is k1
    k2_again = jit.compile("relu(A)", {"A": (2,)})
    assert k2_again is not k2
    assert jit.cached_kernels() == [k1, k2_again]  # least recently used first
    jit.cache_clear()
    assert jit.cached_kernels() == []
    assert jit.cache_info() == CacheInfo(0, 0, 2, 0)


def test_threads_compiling_concurrently() -> None:
    jit = JITTensorKernel()
    exprs = ["relu(A)+B", "A*B-A", "softmax(A)+B", "sum(exp(A)*B, axis=1)"]
    workers = 4
    barrier = threading.Barrier(workers)
    kernels: list[list[CompiledKernel]] = [[] for _ in range(workers)]
    errors: list[BaseException] = []
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))

    def work(i: int) -> None:
        try:
            barrier.wait()
            for expr in exprs[i:] + exprs[:i]:  # every thread compiles every expression
                fn = jit.compile(expr, {"A": (6, 5), "B": (6, 5)})
                kernels[i].append(fn)
                out: Any = jit(expr, A=a, B=b)
                np.testing.assert_allclose(out, fn(A=a, B=b))
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    by_expr: dict[str, set[int]] = {}
    for per_thread in kernels:
        for fn in per_thread:
            by_expr.setdefault(fn.expression, set()).add(id(fn))
    assert all(len(ids) == 1 for ids in by_expr.values()), "one kernel per key"
    info = jit.cache_info()
    assert info.misses == len(exprs) and info.currsize == len(exprs)
    assert info.hits + info.misses == 2 * workers * len(exprs)


@pytest.mark.parametrize("threads", [1, 2])
def test_one_kernel_called_from_several_threads_at_once(threads: int) -> None:
    # Scratch buffers must not be shared between concurrent calls of one kernel.
    shapes = {"A": (300, 64), "B": (300, 64)}
    fn = JITTensorKernel(memory_budget=2_000, threads=threads).compile(
        "softmax(A) * B + relu(A)", shapes
    )
    rng = np.random.default_rng(threads)
    inputs = [(rng.standard_normal((300, 64)), rng.standard_normal((300, 64))) for _ in range(4)]
    barrier = threading.Barrier(len(inputs))
    outputs: list[Any] = [None] * len(inputs)

    def work(i: int) -> None:
        barrier.wait()
        a, b = inputs[i]
        for _ in range(20):
            outputs[i] = fn(A=a, B=b)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    for (a, b), out in zip(inputs, outputs, strict=True):
        e = np.exp(a - a.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True) * b + np.maximum(a, 0)
        np.testing.assert_allclose(out, want, rtol=1e-9, atol=1e-12)
