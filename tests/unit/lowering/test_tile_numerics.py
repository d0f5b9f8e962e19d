"""Tiled IR computes what fused IR computes, and every tile's scratch fits its budget.

Random fused groups of element-wise and row-local ops (with broadcasting,
matmul, transposes and constants) on random shapes are tiled under random
budgets; the interpreter runs the fused and the tiled module, and both are
compared with NumPy evaluating the same expression directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from xdsl.builder import ImplicitBuilder
from xdsl.dialects.builtin import Float32Type, Float64Type, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region, SSAValue

from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp
from tdsl.dialects.kernel_plan import plan_scratch
from tdsl.transforms.tile import tile

run_mod = pytest.importorskip("tdsl.interpreters.run")

Array = np.ndarray[Any, np.dtype[Any]]

UNARY: dict[str, tuple[Callable[[SSAValue], td.UnaryOp], Callable[[Array], Array]]] = {
    "relu": (td.ReluOp, lambda x: np.maximum(x, 0)),
    "exp": (td.ExpOp, np.exp),
    "tanh": (td.TanhOp, np.tanh),
    "sigmoid": (td.SigmoidOp, lambda x: 1 / (1 + np.exp(-x))),
    "abs": (td.AbsOp, np.abs),
    "neg": (td.NegOp, np.negative),
}
BINARY: dict[
    str, tuple[Callable[[SSAValue, SSAValue], td.BinaryOp], Callable[[Array, Array], Array]]
] = {
    "add": (td.AddOp, np.add),
    "sub": (td.SubOp, np.subtract),
    "mul": (td.MulOp, np.multiply),
    "maximum": (td.MaximumOp, np.maximum),
    "minimum": (td.MinimumOp, np.minimum),
}
REDUCE: dict[str, tuple[type[td.ReductionOp], Callable[..., Array]]] = {
    "sum": (td.SumOp, np.sum),
    "max": (td.MaxOp, np.max),
    "mean": (td.MeanOp, np.mean),
}


def np_softmax(x: Array) -> Array:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


@dataclass
class Case:
    """A random fused group: the module, its inputs and the NumPy reference."""

    rows: int
    cols: int
    inner: int
    dtype: np.dtype[Any]
    arg_shapes: list[tuple[int, ...]] = field(default_factory=lambda: list[tuple[int, ...]]())
    steps: list[Callable[[ImplicitBuilderState], None]] = field(
        default_factory=lambda: list[Callable[[ImplicitBuilderState], None]]()
    )
    has_softmax: bool = False


@dataclass
class ImplicitBuilderState:
    """Values built so far, in IR and as NumPy arrays, by shape category."""

    ir: dict[str, list[SSAValue]]
    ref: dict[str, list[Array]]
    computed: list[tuple[SSAValue, Array]]


SHAPES = ("full", "rowstat", "col", "row", "lhs", "rhs", "flipped", "total")


def _shape(case: Case, kind: str) -> tuple[int, ...]:
    r, c, k = case.rows, case.cols, case.inner
    return {
        "full": (r, c),
        "rowstat": (r, 1),
        "col": (c,),
        "row": (1, c),
        "lhs": (r, k),
        "rhs": (k, c),
        "flipped": (c, r),
        "total": (),
    }[kind]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    case = Case(
        rows=draw(st.integers(1, 40)),
        cols=draw(st.integers(1, 128)),
        inner=draw(st.integers(1, 8)),
        dtype=np.dtype(draw(st.sampled_from([np.float32, np.float64]))),
    )
    # Every group reads one full-size input; the others are drawn.
    kinds = ["full", *draw(st.lists(st.sampled_from(SHAPES), max_size=4))]
    case.arg_shapes = [_shape(case, k) for k in kinds]
    arg_kinds = kinds

    n_ops = draw(st.integers(1, 7))
    for _ in range(n_ops):
        op = draw(
            st.sampled_from(
                [
                    "unary",
                    "binary",
                    "binary",
                    "softmax",
                    "reduce",
                    "total",
                    "matmul",
                    "transpose",
                    "const",
                ]
            )
        )
        if op == "unary":
            name = draw(st.sampled_from(sorted(UNARY)))
            kind = draw(st.sampled_from(["full", "rowstat"]))
            pick = draw(st.integers(0, 10**6))

            def unary(
                s: ImplicitBuilderState, name: str = name, kind: str = kind, pick: int = pick
            ) -> None:
                if not s.ir[kind]:
                    return
                i = pick % len(s.ir[kind])
                build, ref = UNARY[name]
                _push(s, kind, build(s.ir[kind][i]).result, ref(s.ref[kind][i]))

            case.steps.append(unary)
        elif op == "binary":
            name = draw(st.sampled_from(sorted(BINARY)))
            rhs_kind = draw(st.sampled_from(["full", "rowstat", "col", "row", "scalar", "total"]))
            picks = (draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6)))
            scalar = draw(st.floats(-2, 2, allow_nan=False, width=32))
            swap = draw(st.booleans())

            def binary(
                s: ImplicitBuilderState,
                name: str = name,
                rhs_kind: str = rhs_kind,
                picks: tuple[int, int] = picks,
                scalar: float = scalar,
                swap: bool = swap,
            ) -> None:
                lhs_i = picks[0] % len(s.ir["full"])
                lhs, lhs_ref = s.ir["full"][lhs_i], s.ref["full"][lhs_i]
                if rhs_kind == "scalar":
                    const = td.ConstantOp.splat(scalar, td.element_type(lhs))
                    rhs, rhs_ref = const.result, np.asarray(scalar, dtype=lhs_ref.dtype)
                else:
                    if not s.ir[rhs_kind]:
                        return
                    j = picks[1] % len(s.ir[rhs_kind])
                    rhs, rhs_ref = s.ir[rhs_kind][j], s.ref[rhs_kind][j]
                if swap:
                    lhs, rhs, lhs_ref, rhs_ref = rhs, lhs, rhs_ref, lhs_ref
                build, ref = BINARY[name]
                _push(s, "full", build(lhs, rhs).result, ref(lhs_ref, rhs_ref))

            case.steps.append(binary)
        elif op == "softmax":
            case.has_softmax = True
            pick = draw(st.integers(0, 10**6))

            def softmax(s: ImplicitBuilderState, pick: int = pick) -> None:
                i = pick % len(s.ir["full"])
                _push(s, "full", td.SoftmaxOp(s.ir["full"][i]).result, np_softmax(s.ref["full"][i]))

            case.steps.append(softmax)
        elif op == "reduce":
            name = draw(st.sampled_from(sorted(REDUCE)))
            pick = draw(st.integers(0, 10**6))

            def reduce(s: ImplicitBuilderState, name: str = name, pick: int = pick) -> None:
                i = pick % len(s.ir["full"])
                cls, ref = REDUCE[name]
                value = cls(s.ir["full"][i], axis=-1, keepdims=True).result
                _push(s, "rowstat", value, ref(s.ref["full"][i], axis=-1, keepdims=True))

            case.steps.append(reduce)
        elif op == "total":
            name = draw(st.sampled_from(sorted(REDUCE)))
            pick = draw(st.integers(0, 10**6))

            def total(s: ImplicitBuilderState, name: str = name, pick: int = pick) -> None:
                i = pick % len(s.ir["full"])
                cls, ref = REDUCE[name]
                _push(s, "total", cls(s.ir["full"][i]).result, ref(s.ref["full"][i]))

            case.steps.append(total)
        elif op == "matmul" and "lhs" in arg_kinds and "rhs" in arg_kinds:
            pick = draw(st.integers(0, 10**6))
            relu_lhs = draw(st.booleans())

            def matmul(
                s: ImplicitBuilderState, pick: int = pick, relu_lhs: bool = relu_lhs
            ) -> None:
                lhs, lhs_ref = s.ir["lhs"][0], s.ref["lhs"][0]
                if relu_lhs:  # a row-local prologue on the left operand
                    lhs, lhs_ref = td.ReluOp(lhs).result, np.maximum(lhs_ref, 0)
                j = pick % len(s.ir["rhs"])
                _push(s, "full", td.MatmulOp(lhs, s.ir["rhs"][j]).result, lhs_ref @ s.ref["rhs"][j])

            case.steps.append(matmul)
        elif op == "transpose" and "flipped" in arg_kinds:

            def transpose(s: ImplicitBuilderState) -> None:
                _push(s, "full", td.TransposeOp(s.ir["flipped"][0]).result, s.ref["flipped"][0].T)

            case.steps.append(transpose)
        elif op == "const":
            data = np.asarray(
                draw(st.lists(st.floats(-2, 2, width=32), min_size=case.cols, max_size=case.cols))
            )

            def const(s: ImplicitBuilderState, data: Array = data) -> None:
                element = td.element_type(s.ir["full"][0])
                c = td.ConstantOp(td.dense_from_numpy(data, element))
                _push(s, "col", c.result, data.astype(td.numpy_dtype(element)))

            case.steps.append(const)
    return case


def _push(s: ImplicitBuilderState, kind: str, value: SSAValue, ref: Array) -> None:
    s.ir[kind].append(value)
    s.ref[kind].append(np.asarray(ref))
    if not isinstance(value.owner, td.ConstantOp):
        s.computed.append((value, np.asarray(ref)))


def build(
    case: Case, budget: int, extra_outputs: int, inputs: list[Array]
) -> tuple[ModuleOp, list[Array]]:
    """The module ``@main`` holding one ``kernel.fused`` of the case, and the expected results."""
    element: Attribute = Float32Type() if case.dtype == np.float32 else Float64Type()
    arg_types = [TensorType(element, shape) for shape in case.arg_shapes]
    body = Block(arg_types=arg_types)
    state = ImplicitBuilderState(
        ir={k: [] for k in SHAPES}, ref={k: [] for k in SHAPES}, computed=[]
    )
    for arg, array, shape in zip(body.args, inputs, case.arg_shapes, strict=True):
        for kind in SHAPES:
            if _shape(case, kind) == shape:
                state.ir[kind].append(arg)
                state.ref[kind].append(array)
    with ImplicitBuilder(body):
        for step in case.steps:
            step(state)
        if not state.computed:
            _push(state, "full", td.ExpOp(state.ir["full"][0]).result, np.exp(state.ref["full"][0]))
        outputs = [state.computed[-1]]
        for value, ref in state.computed[-1 - extra_outputs : -1]:
            outputs.append((value, ref))
        YieldOp(*[v for v, _ in outputs])
    fn = FuncOp("main", (arg_types, [v.type for v, _ in outputs]))
    fused = FusedOp(
        list(fn.body.block.args),
        [v.type for v, _ in outputs],
        Region(body),
        group="g0",
        budget=budget,
    )
    fn.body.block.add_op(fused)
    fn.body.block.add_op(ReturnOp(*fused.results))
    module = ModuleOp([fn])
    module.verify()
    return module, [ref for _, ref in outputs]


def check_tiles(module: ModuleOp, budget: int) -> None:
    """Every tile fits: recorded scratch is the plan's and within the budget."""
    assert not [op for op in module.walk() if isinstance(op, FusedOp)]
    for op in module.walk():
        if isinstance(op, TileOp):
            assert op.scratch_buffers == plan_scratch(op.schedule()).buffers
            assert op.scratch_value <= budget


def assert_close(got: tuple[Array, ...], want: list[Array], dtype: np.dtype[Any]) -> None:
    rtol = 2e-5 if dtype == np.float32 else 1e-10
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w.astype(dtype), rtol=rtol, atol=rtol, equal_nan=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=cases(),
    budget=st.one_of(st.integers(64, 400), st.integers(64, 5_000), st.integers(64, 1_000_000)),
    extra_outputs=st.integers(0, 2),
    seed=st.integers(0, 2**32 - 1),
)
def test_tiled_equals_fused(case: Case, budget: int, extra_outputs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    inputs = [rng.uniform(-2, 2, size=shape).astype(case.dtype) for shape in case.arg_shapes]
    with np.errstate(all="ignore"):
        module, expected = build(case, budget, extra_outputs, inputs)
        fused_out = run_mod.run_function(module, "main", *inputs)
        tiled = tile(module)  # rows longer than the budget run decomposed, in passes
        tiled.verify()
        check_tiles(tiled, budget)
        tile_ops = [op for op in tiled.walk() if isinstance(op, TileOp)]
        event(f"{len(tile_ops)} tile op(s)")
        event("tiled" if any(t.tiles_value != t.space_value for t in tile_ops) else "one tile")
        tiled_out = run_mod.run_function(tiled, "main", *inputs)
    assert_close(fused_out, expected, case.dtype)
    assert_close(tiled_out, [np.asarray(x) for x in fused_out], case.dtype)


PIPELINE_CASES: list[tuple[str, dict[str, tuple[int, ...]], Callable[..., Array]]] = [
    (
        "relu(x @ w + b)",
        {"x": (300, 64), "w": (64, 128), "b": (128,)},
        lambda x, w, b: np.maximum(x @ w + b, 0),
    ),
    ("softmax(A + B)", {"A": (50, 700), "B": (50, 700)}, lambda a, b: np_softmax(a + b)),
    (
        "sum(exp(A) * B, axis=1)",
        {"A": (200, 300), "B": (200, 300)},
        lambda a, b: np.sum(np.exp(a) * b, axis=1),
    ),
    ("A / (1 + exp(-A))", {"A": (100, 100)}, lambda a: a / (1 + np.exp(-a))),
    ("sum(exp(A))", {"A": (100, 100)}, lambda a: np.sum(np.exp(a))),
    (
        "softmax(relu(x @ w + b)) * 2",
        {"x": (300, 64), "w": (64, 128), "b": (128,)},
        lambda x, w, b: np_softmax(np.maximum(x @ w + b, 0)) * 2,
    ),
]


@pytest.mark.parametrize("budget", [700, 5_000, 1_000_000])
@pytest.mark.parametrize(("expr", "shapes", "reference"), PIPELINE_CASES)
def test_fuse_then_tile_matches_numpy(
    expr: str, shapes: dict[str, tuple[int, ...]], reference: Callable[..., Array], budget: int
) -> None:
    frontend = pytest.importorskip("tdsl.frontend")
    fuse_mod = pytest.importorskip("tdsl.transforms.fuse")
    module = frontend.to_tensordsl(expr, shapes=shapes, dtypes="float32")
    tiled = tile(fuse_mod.fuse(module, budget))
    tiled.verify()
    check_tiles(tiled, budget)
    rng = np.random.default_rng(7)
    args = [rng.uniform(-1, 1, size=s).astype(np.float32) for s in shapes.values()]
    got = run_mod.run_function(tiled, "main", *args)
    assert_close(got, [np.asarray(reference(*args))], np.dtype(np.float32))
