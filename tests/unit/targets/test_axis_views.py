"""Views that move axes: ``expand_dims``, ``squeeze`` (views of their operand), and
``swapaxes``, ``moveaxis`` and ``transpose`` with positional axes (transposes), each
as NumPy's function, on every target, fused with what reads them and tiled under small
budgets; NumPy's positional parameters (``sum(x, 0)``); and their errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from all_targets import TARGETS, run_on

from tdsl.errors import TdslError, TdslSyntaxError, TdslTypeError
from tdsl.frontend import to_tensordsl
from tdsl.transforms.fuse import fuse
from tdsl.transforms.tile import tile

Array = np.ndarray[Any, Any]

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Z = RNG.standard_normal((2, 3, 5)).astype(np.float32)
A = RNG.standard_normal(6)
B = RNG.standard_normal(5)
U = RNG.standard_normal((1, 4, 1, 3))

CASES: list[tuple[str, dict[str, Array], Any]] = [
    ("expand_dims(x, 0) + 1", {"x": X}, lambda x: np.expand_dims(x, 0) + 1),
    ("exp(expand_dims(x, axis=-1))", {"x": X}, lambda x: np.exp(np.expand_dims(x, -1))),
    ("expand_dims(x, (0, 3)) * 2", {"x": X}, lambda x: np.expand_dims(x, (0, 3)) * 2),
    ("expand_dims(a, 1) * b", {"a": A, "b": B}, lambda a, b: np.expand_dims(a, 1) * b),
    (
        "sum(expand_dims(a, 1) * b, axis=0)",
        {"a": A, "b": B},
        lambda a, b: np.sum(np.expand_dims(a, 1) * b, axis=0),
    ),
    ("squeeze(u) + 1", {"u": U}, lambda u: np.squeeze(u) + 1),
    ("squeeze(u, 2) * 3", {"u": U}, lambda u: np.squeeze(u, 2) * 3),
    ("squeeze(u, axis=(0, -2)) - 1", {"u": U}, lambda u: np.squeeze(u, (0, -2)) - 1),
    (
        "squeeze(max(x, axis=1, keepdims=True), 1)",
        {"x": X},
        lambda x: np.squeeze(np.max(x, axis=1, keepdims=True), 1),
    ),
    ("softmax(squeeze(u), axis=0)", {"u": U}, None),
    ("swapaxes(z, 0, 2) + 1", {"z": Z}, lambda z: np.swapaxes(z, 0, 2) + 1),
    ("exp(swapaxes(z, axis1=-1, axis2=1))", {"z": Z}, lambda z: np.exp(np.swapaxes(z, -1, 1))),
    ("moveaxis(z, 0, -1) * 2", {"z": Z}, lambda z: np.moveaxis(z, 0, -1) * 2),
    ("moveaxis(z, (0, 1), (2, 0))", {"z": Z}, lambda z: np.moveaxis(z, (0, 1), (2, 0))),
    ("np.transpose(z, (1, 0, 2)) + 1", {"z": Z}, lambda z: np.transpose(z, (1, 0, 2)) + 1),
    ("sum(x, 0)", {"x": X}, lambda x: np.sum(x, 0)),
    ("max(z, (0, 2))", {"z": Z}, lambda z: np.max(z, (0, 2))),
    ("expand_dims(x > 0, 0)", {"x": X}, lambda x: np.expand_dims(x > 0, 0)),
    ("broadcast_to(b, (3, 5)) * 2", {"b": B}, lambda b: np.broadcast_to(b, (3, 5)) * 2),
    ("broadcast_to(x[:1], (2, 3, 4))", {"x": X}, lambda x: np.broadcast_to(x[:1], (2, 3, 4))),
    (
        "sum(broadcast_to(b, (4, 5)), axis=0)",
        {"b": B},
        lambda b: np.sum(np.broadcast_to(b, (4, 5)), 0),
    ),
    ("broadcast_to(x, (3, 4))", {"x": X}, lambda x: x),
    ("broadcast_to(x > 0, (2, 3, 4))", {"x": X}, lambda x: np.broadcast_to(x > 0, (2, 3, 4))),
]


def softmax0(u: Array) -> Array:
    s = np.squeeze(u)
    e = np.exp(s - s.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


PLANNED_OTHERWISE_AT_4 = {
    "sum(expand_dims(a, 1) * b, axis=0)",
    "max(z, (0, 2))",
    "expand_dims(x > 0, 0)",
    "sum(broadcast_to(b, (4, 5)), axis=0)",
    "broadcast_to(x > 0, (2, 3, 4))",
}
"""The cases whose tiled IR at budget 4 differs from the one at 10**6 on some target.
The inputs are small: every other case has the same tiled IR, and so the same code on
every target, at both budgets (compared case by case when this was written), and runs
at 10**6 only."""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("budget", "text", "arrays", "want"),
    [
        pytest.param(budget, *case, id=f"{budget}-{case[0]}")
        for case in CASES
        for budget in ((4, 10**6) if case[0] in PLANNED_OTHERWISE_AT_4 else (10**6,))
    ],
)
def test_views_are_numpys(
    target: str, budget: int, text: str, arrays: dict[str, Array], want: Any
) -> None:
    got = run_on(target, budget, text, **arrays)
    expected = softmax0(*arrays.values()) if want is None else want(*arrays.values())
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=2e-6)


def test_views_fuse_and_round_trip_in_custom_and_generic_form() -> None:
    module = to_tensordsl(
        "squeeze(expand_dims(x, (0, 2)), axis=0) * 2 + swapaxes(y, 0, 1)",
        shapes={"x": (3, 4), "y": (1, 3, 4)},
    )
    text = str(module)
    assert "tensordsl.expand_dims %x axes [0, 2] : tensor<3x4xf64> -> tensor<1x3x1x4xf64>" in text
    assert "tensordsl.squeeze %0 axes [0] : tensor<1x3x1x4xf64> -> tensor<3x1x4xf64>" in text
    assert "tensordsl.transpose %y perm [1, 0, 2]" in text
    fused = fuse(module)
    assert len([op for op in fused.walk() if op.name == "kernel.fused"]) == 1
    tiled = tile(fused, memory_budget=4)
    for stage in (module, fused, tiled):
        from xdsl.context import Context
        from xdsl.dialects.builtin import Builtin
        from xdsl.dialects.func import Func
        from xdsl.parser import Parser
        from xdsl.printer import Printer

        from tdsl.dialects.kernel import Kernel
        from tdsl.dialects.tensordsl import TensorDSL

        ctx = Context()
        for dialect in (Builtin, Func, TensorDSL, Kernel):
            ctx.load_dialect(dialect)
        assert str(Parser(ctx, str(stage)).parse_module()) == str(stage)
        import io

        out = io.StringIO()
        Printer(stream=out, print_generic_format=True).print_op(stage)
        assert str(Parser(ctx, out.getvalue()).parse_module()) == str(stage)


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        (
            "squeeze(x, 0)",
            TdslTypeError,
            "cannot squeeze axis 0 of a tensor of shape 3x4: its extent is 3, not 1",
        ),
        ("squeeze(x, axis=2)", TdslTypeError, "axis 2 is out of range for `squeeze` of f64[3, 4]"),
        ("expand_dims(x, 3)", TdslTypeError, "axis 3 is out of range for `expand_dims` of its"),
        ("expand_dims(x, (0, 0))", TdslTypeError, "names axis 0 twice"),
        ("expand_dims(x)", TdslTypeError, "`expand_dims` needs `axis` (signature: expand_dims"),
        ("swapaxes(x, 0)", TdslTypeError, "`swapaxes` needs `axis2`"),
        ("swapaxes(x, (0, 1), 1)", TdslTypeError, "`axis1` of `swapaxes` must be an integer"),
        ("moveaxis(x, (0, 1), 0)", TdslTypeError, "as many destinations as sources"),
        ("sum(x, 0, axis=1)", TdslSyntaxError, "`sum` got two values for `axis`"),
        ("transpose(x, (0, 0))", TdslTypeError, "not a permutation"),
        ("max(x, y)", TdslTypeError, "use `maximum(a, b)`"),
        (
            "broadcast_to(x, (4, 3))",
            TdslTypeError,
            "cannot broadcast a tensor of shape 3x4 to shape 4x3",
        ),
        (
            "broadcast_to(x, (4,))",
            TdslTypeError,
            "cannot broadcast a tensor of shape 3x4 to shape 4",
        ),
    ],
)
def test_bad_views_are_located_errors(text: str, error: type[TdslError], message: str) -> None:
    with pytest.raises(error) as info:
        to_tensordsl(text, shapes={"x": (3, 4), "y": (3, 4)})
    assert message in str(info.value)
    assert "<expr>:1:" in str(info.value)
