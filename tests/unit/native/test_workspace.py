"""A native function keeps its workspace (the values passed between groups, the
groups' scratch and its threads' copies) for its next call
(:mod:`tdsl.runtime.workspace`): no call reads what an earlier one left there, calls
in flight at once each have their own, and a call still allocates all it uses when
none is kept."""

from __future__ import annotations

import concurrent.futures
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tdsl
from tdsl.runtime import workspace as ws
from tdsl.runtime.compile import native_unavailable_reason
from tdsl.runtime.native import NativeFunction

pytestmark = pytest.mark.skipif(
    native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
)

F32 = np.float32


def _softmax(x: Any) -> Any:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def heads(h: Any) -> Any:
    """Four attention heads split from one qkv product: a group per head (each
    splitting its rows over two threads, BLAS inside), windows and a join between."""
    q, k, v = np.split(h, 3, axis=-1)
    mask = (1 - np.tri(h.shape[0], dtype=h.dtype)) * F32(-1e10)
    outs = [
        _softmax(qh @ kh.T * F32(0.125) + mask) @ vh
        for qh, kh, vh in zip(
            np.split(q, 4, axis=-1), np.split(k, 4, axis=-1), np.split(v, 4, axis=-1), strict=True
        )
    ]
    return np.hstack(outs)


def chain(x: Any, w: Any) -> Any:
    """Two groups with a value passed between them (a reduction over the rows reads
    the whole of ``relu(x @ w)``)."""
    y = np.maximum(x @ w, F32(0))
    return y - np.sum(y, axis=0, keepdims=True) / F32(y.shape[0])


def _cases() -> dict[str, tuple[Callable[..., Any], Callable[[int], list[Any]]]]:
    def heads_args(seed: int) -> list[Any]:
        return [np.random.default_rng(seed).standard_normal((512, 768), dtype=F32)]

    def chain_args(seed: int) -> list[Any]:
        rng = np.random.default_rng(seed)
        return [
            rng.standard_normal((600, 300), dtype=F32),
            rng.standard_normal((300, 500), dtype=F32),
        ]

    return {"heads": (heads, heads_args), "chain": (chain, chain_args)}


CASES = _cases()


def _native(traced: Any) -> NativeFunction:
    (kernel,) = traced.kernels
    function = kernel.function
    assert isinstance(function, NativeFunction)
    return function


def _traced(name: str) -> tuple[Any, Callable[[int], list[Any]], Callable[..., Any]]:
    fn, make = CASES[name]
    traced = tdsl.trace(fn, target="native", threads=2)
    traced.compile(*make(0))
    return traced, make, fn


def _assert_close(got: Any, want: Any) -> None:
    """f32 products summed in another order than NumPy's BLAS: the error scales with
    the result's magnitude (about sqrt(K) roundings of it), not with each element, so
    ``chain``'s centred columns near zero take an absolute tolerance from the largest.
    A value left by an earlier call (NaN after ``fill(0xFF)``, or another input's) is
    far outside it."""
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6 * float(np.abs(want).max()))


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_call_reads_what_an_earlier_one_left(name: str) -> None:
    traced, make, fn = _traced(name)
    function = _native(traced)
    layout = function.workspace.layout
    assert layout.slots, "the workspace holds values"
    for seed in (1, 2, 1):
        args = make(seed)
        _assert_close(traced(*args), fn(*args))
        (kept,) = function.workspace.kept()  # kept, at least the workspace's bytes
        assert kept.nbytes >= layout.nbytes
        kept.fill(0xFF)  # NaN in every float the next call would read unwritten


def test_each_thread_copies_only_its_groups_scratch() -> None:
    traced, _, _ = _traced("heads")
    function = _native(traced)
    layout = function.workspace.layout
    split = [n for n, t in enumerate(function._threads) if t > 1]  # pyright: ignore[reportPrivateUsage]
    assert len(split) == 4, "each head shares its rows between two threads"
    for n in split:
        call = function.calls[n]
        scratch = {
            x
            for x in call.operands[2:]
            if isinstance(x, int) and function.args[x].role == "scratch"
        }
        (copies,) = layout.extra[n]
        assert set(copies) == scratch
    sizes = [
        sum(
            -(-int(np.prod(function.args[x].shape)) * function.args[x].dtype.itemsize // ws.ALIGN)
            * ws.ALIGN
            for x in {y for y in function.calls[n].operands[2:] if isinstance(y, int)}
            if function.args[x].role == "scratch"
        )
        for n in split
    ]
    # one arena for the first threads' scratch and one for the copies, a group's at a time
    assert layout.arena == max(sizes)
    starts = [min(c[0].values()) for n, c in layout.extra.items()]
    assert len(set(starts)) == 1 and layout.nbytes == starts[0] + max(sizes)


def test_calls_in_flight_at_once_have_their_own() -> None:
    traced, make, fn = _traced("chain")
    inputs = [make(seed) for seed in range(8)]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda args: traced(*args), inputs * 3))
    for args, got in zip(inputs * 3, results, strict=True):
        _assert_close(got, fn(*args))
    assert 1 <= len(_native(traced).workspace.kept()) <= 2


def test_as_many_are_kept_as_calls_were_in_flight_at_once() -> None:
    traced, _, _ = _traced("chain")
    workspace = ws.Workspace(_native(traced).workspace.layout)
    first, second = workspace.take(), workspace.take()  # two calls at once
    assert first[0] is not second[0] and first[1] % ws.ALIGN == second[1] % ws.ALIGN == 0
    workspace.give(first)
    workspace.give(second)
    assert len(workspace.kept()) == 2
    again = [workspace.take() for _ in range(3)]  # a third at once allocates its own
    assert {id(a[0]) for a in again[:2]} == {id(first[0]), id(second[0])}
    for a in again:
        workspace.give(a)
    assert len(workspace.kept()) == 3
    ws.release_workspaces()
    assert workspace.kept() == []


def _peak(call: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_a_call_allocates_its_workspace_unless_one_is_kept(monkeypatch: Any) -> None:
    traced, make, _ = _traced("chain")
    args = make(3)
    function = _native(traced)
    ws.release_workspaces()
    assert function.workspace.kept() == []
    # (the rest a call allocates, Python's objects and the threads' futures among
    # them, varies by a few KiB between calls)
    slack = 64 << 10
    nbytes = function.workspace.layout.nbytes
    assert nbytes > 4 * slack
    first = _peak(lambda: traced(*args))
    again = _peak(lambda: traced(*args))
    assert first - again >= nbytes - slack, (first, again, nbytes)
    ws.release_workspaces()
    assert _peak(lambda: traced(*args)) >= first - slack
    # a workspace over RETAIN_MAX is not kept: each call allocates its own
    monkeypatch.setattr(ws, "RETAIN_MAX", function.workspace.layout.nbytes - 1)
    ws.release_workspaces()
    traced(*args)
    assert function.workspace.kept() == []
