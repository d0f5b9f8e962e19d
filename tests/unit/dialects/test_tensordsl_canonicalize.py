"""tensordsl canonicalization patterns, run through xDSL's own CanonicalizePass.

Each case checks which ops remain and that the canonicalized function computes
what the original computes (by the interpreter, against NumPy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, Float32Type, ModuleOp, TensorType
from xdsl.dialects.func import Func, FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.transforms.canonicalize import CanonicalizePass

from tdsl.dialects import tensordsl as td
from tdsl.interpreters.run import run_function

F32 = Float32Type()
Body = Callable[..., Any]


def module_of(arg_types: Sequence[Attribute], body: Body) -> ModuleOp:
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block):
        built = body(*block.args)
        results = [SSAValue.get(v) for v in (built if isinstance(built, tuple) else (built,))]
        ReturnOp(*results)
    module = ModuleOp([FuncOp("main", (list(arg_types), [r.type for r in results]), Region(block))])
    module.verify()
    return module


def canonicalize(module: ModuleOp) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, Func, td.TensorDSL):
        ctx.load_dialect(dialect)
    result = module.clone()
    CanonicalizePass().apply(ctx, result)
    result.verify()
    return result


def remaining(module: ModuleOp) -> list[str]:
    """The names of the ops left in @main, return excluded."""
    main = module.body.block.first_op
    assert isinstance(main, FuncOp)
    return [op.name for op in main.body.block.ops if not isinstance(op, ReturnOp)]


def returns_arguments(module: ModuleOp) -> list[int | None]:
    """For each returned value, the index of the argument it is, or None."""
    main = module.body.block.first_op
    assert isinstance(main, FuncOp)
    ret = main.body.block.last_op
    assert isinstance(ret, Operation)
    args = list(main.body.block.args)
    return [args.index(v) if v in args else None for v in ret.operands]


def zero(shape: Sequence[int] = (), sign: float = 1.0) -> td.ConstantOp:
    return td.ConstantOp.splat(0.0 * sign, F32, shape)


def one(shape: Sequence[int] = ()) -> td.ConstantOp:
    return td.ConstantOp.splat(1.0, F32, shape)


X = TensorType(F32, [4, 8])
V = TensorType(F32, [8])

CASES: list[tuple[str, Sequence[Attribute], Body, list[str], list[int | None]]] = [
    ("relu(relu)", [X], lambda x: td.ReluOp(td.ReluOp(x)), ["tensordsl.relu"], [None]),
    ("neg(neg)", [X], lambda x: td.NegOp(td.NegOp(x)), [], [0]),
    ("neg(neg(neg))", [X], lambda x: td.NegOp(td.NegOp(td.NegOp(x))), ["tensordsl.neg"], [None]),
    ("transpose(transpose)", [X], lambda x: td.TransposeOp(td.TransposeOp(x)), [], [0]),
    # x + -0.0 and x - 0.0 are x for every float; x + 0.0 and x - -0.0 are +0.0 at x = -0.0
    ("x+(-0)", [X], lambda x: td.AddOp(x, zero(sign=-1.0)), [], [0]),
    ("-0+x", [X], lambda x: td.AddOp(zero((8,), -1.0), x), [], [0]),
    ("x+(-zeros)", [X], lambda x: td.AddOp(x, zero((4, 8), -1.0)), [], [0]),
    ("x-0", [X], lambda x: td.SubOp(x, zero((1, 8))), [], [0]),
    ("x+0", [X], lambda x: td.AddOp(x, zero()), ["tensordsl.constant", "tensordsl.add"], [None]),
    (
        "x-(-0)",
        [X],
        lambda x: td.SubOp(x, zero(sign=-1.0)),
        ["tensordsl.constant", "tensordsl.sub"],
        [None],
    ),
    ("x*1", [X], lambda x: td.MulOp(x, one()), [], [0]),
    ("1*x", [X], lambda x: td.MulOp(one((4, 1)), x), [], [0]),
    ("x/1", [X], lambda x: td.DivOp(x, one()), [], [0]),
    (
        "x+0 broadcasting x",
        [V],
        lambda v: td.AddOp(v, zero((4, 8))),
        ["tensordsl.constant", "tensordsl.add"],
        [None],
    ),
    (
        "1*x broadcasting x",
        [V],
        lambda v: td.MulOp(one((2, 8)), v),
        ["tensordsl.constant", "tensordsl.mul"],
        [None],
    ),
    ("0-x", [X], lambda x: td.SubOp(zero(), x), ["tensordsl.constant", "tensordsl.sub"], [None]),
    ("1/x", [X], lambda x: td.DivOp(one(), x), ["tensordsl.constant", "tensordsl.div"], [None]),
    ("x*0", [X], lambda x: td.MulOp(x, zero()), ["tensordsl.constant", "tensordsl.mul"], [None]),
    ("x+1", [X], lambda x: td.AddOp(x, one()), ["tensordsl.constant", "tensordsl.add"], [None]),
    (
        "x+[0,1,...]",
        [X],
        lambda x: td.AddOp(x, td.ConstantOp(td.dense_from_numpy(np.arange(8.0), F32))),
        ["tensordsl.constant", "tensordsl.add"],
        [None],
    ),
    (
        "relu(neg(relu))",
        [X],
        lambda x: td.ReluOp(td.NegOp(td.ReluOp(x))),
        ["tensordsl.relu", "tensordsl.neg", "tensordsl.relu"],
        [None],
    ),
    ("dead ops", [X], lambda x: (td.ExpOp(x), x)[1], [], [0]),
]


@pytest.mark.parametrize(
    "arg_types,body,ops,returned", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_canonicalization(
    arg_types: Sequence[Attribute], body: Body, ops: list[str], returned: list[int | None]
) -> None:
    module = module_of(arg_types, body)
    result = canonicalize(module)
    assert remaining(result) == ops
    assert returns_arguments(result) == returned
    rng = np.random.default_rng(0)
    args = [
        rng.standard_normal(tuple(t.get_shape())).astype(np.float32)
        for t in arg_types
        if isinstance(t, TensorType)
    ]
    with np.errstate(divide="ignore"):
        (before,) = run_function(module, "main", *args)
        (after,) = run_function(result, "main", *args)
    np.testing.assert_array_equal(after, before)
