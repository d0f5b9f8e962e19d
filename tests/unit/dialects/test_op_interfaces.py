"""The op interfaces are small, and an op implements only those it needs.

:class:`~tdsl.dialects.structured.StructuredOpInterface` holds the structured op
proper (and its reduction members); what only some ops are is one small interface
of :mod:`tdsl.dialects.op_interfaces` each.  The planners ask the interfaces, not op
classes: ``ext.mm``, a matrix product of another dialect defined here, is a
contraction to ``tdsl-fuse`` because it implements
:class:`~tdsl.dialects.op_interfaces.Contraction`, and the same op without it is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import Builtin, ModuleOp, f32
from xdsl.dialects.func import Func
from xdsl.ir import Attribute, Block, Dialect, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def
from xdsl.parser import Parser

from tdsl.dialects import op_interfaces
from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import FusedOp, Kernel
from tdsl.dialects.op_interfaces import Contraction, Decomposable, LanguageFunction, Scan
from tdsl.dialects.structured import (
    Combiner,
    FloatTensorConstr,
    IteratorType,
    PartialOps,
    Reduction,
    StructuredOpInterface,
    dims_map,
    element_type,
    numpy_dtype,
    tensor_shape,
    tensor_type,
)
from tdsl.frontend.ir_gen import FUNCTIONS
from tdsl.interpreters.run import run_function
from tdsl.pipeline import build_pipeline

Array = np.ndarray[Any, Any]

SMALL = (LanguageFunction, Contraction, Decomposable, Scan, Reduction, PartialOps)

STRUCTURED_MEMBERS = {
    # the structured op proper
    "loop_extents",
    "iterator_types",
    "indexing_maps",
    "infer_result_types",
    "retyped",
    "evaluate",
    "scalar_body",
    "F16_IN_F32",
    "IN_PLACE",
    # the numpy target's hooks
    "is_view",
    "numpy_workspace",
    "fuses_producer",
}

REDUCTION_MEMBERS = {
    # the state and its three regions
    "accumulator",
    "scalar_accumulate",
    "scalar_merge",
    "scalar_finalize_state",
    "evaluate_state",
    # one component: a ufunc merges, and the state methods derive from these
    "combiner",
    "accumulator_dtype",
    "evaluate_partial",
    "finalize",
    "finalizes",
    "scalar_combine",
    "scalar_finalize",
}


def members(cls: type) -> set[str]:
    """The public members ``cls`` declares itself (methods, properties, class data)."""
    return {n for n in (*vars(cls), *vars(cls).get("__annotations__", {})) if not n.startswith("_")}


@pytest.mark.parametrize("iface", SMALL, ids=lambda c: c.__name__)
def test_each_interface_is_small(iface: type) -> None:
    assert 0 < len(members(iface)) <= 12, sorted(members(iface))
    assert not members(iface) & members(StructuredOpInterface), "a member lives in one interface"
    assert iface.__doc__ and len(iface.__doc__) > 200, "say what it means and who reads it"


def test_the_structured_op_interface_keeps_only_the_structured_op() -> None:
    assert members(StructuredOpInterface) == STRUCTURED_MEMBERS
    for gone in ("FUNCTION", "CONTRACTION", "RECOMPUTABLE", "PREFERS_WHOLE", "carried_loops"):
        assert not hasattr(StructuredOpInterface, gone)


def test_the_interfaces_are_what_they_were_split_from() -> None:
    assert members(LanguageFunction) == {
        "FUNCTION",
        "OPERATOR",
        "ARITY",
        "MIN_ARITY",
        "PARAMS",
        "POSITIONAL",
        "SEQUENCE",
        "SEVERAL",
        "bool_inputs_as",
        "int_inputs_as",
        "signature",
        "from_call",
    }
    assert members(Contraction) == {"materialized_operands", "recomputable", "prefer_whole_dims"}
    assert members(Decomposable) == {"decompose", "decomposes", "decompose_with_user"}
    assert members(Scan) == {"carried_loops", "evaluate_scan", "scalar_scan"}
    assert members(Reduction) == REDUCTION_MEMBERS
    assert members(PartialOps) == {"partial_ops", "finalize_ops"}
    assert set(op_interfaces.__all__) >= {c.__name__ for c in SMALL[:4]}


@pytest.mark.parametrize(
    ("op", "implements"),
    [
        (td.ExpOp, {LanguageFunction}),
        (td.AddOp, {LanguageFunction}),
        (td.WhereOp, {LanguageFunction}),
        (td.SumOp, {LanguageFunction, Reduction, PartialOps}),
        (td.LogSumExpOp, {LanguageFunction, Reduction, PartialOps}),
        (td.VarOp, {LanguageFunction, Reduction}),
        (td.TransposeOp, {LanguageFunction}),
        (td.MatmulOp, {LanguageFunction, Contraction, Reduction}),
        (td.SoftmaxOp, {LanguageFunction, Decomposable}),
        (td.LayerNormOp, {LanguageFunction, Decomposable}),
        (td.CumsumOp, {LanguageFunction, Scan}),
        (td.CumprodOp, {LanguageFunction, Scan}),
        (td.CastOp, {LanguageFunction}),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_an_op_implements_only_what_it_needs(op: type, implements: set[type]) -> None:
    assert issubclass(op, StructuredOpInterface)
    assert {i for i in SMALL if issubclass(op, i)} == implements


def test_the_function_table_is_made_of_language_functions() -> None:
    for name, info in FUNCTIONS.items():
        assert issubclass(info.op, LanguageFunction) and name == info.op.FUNCTION
    # and an op of the dialect the language does not spell does not carry the interface
    for op in td.TensorDSL.operations:
        if issubclass(op, LanguageFunction):
            assert op.FUNCTION is not None or op.OPERATOR is not None, op.name


def values(*shapes: tuple[int, ...]) -> tuple[SSAValue, ...]:
    return tuple(Block(arg_types=[tensor_type(f32, s) for s in shapes]).args)


def test_matmul_keeps_its_columns_and_contraction_whole() -> None:
    a, b, v = values((2, 3, 5), (5, 7), (5,))
    mm = td.MatmulOp(a, b)  # loops: batch, rows, columns, contraction
    assert mm.prefer_whole_dims() == (2, 3)
    assert mm.materialized_operands() == (1,) and not mm.recomputable()
    assert td.MatmulOp(a, v).prefer_whole_dims() == (2,)  # a vector has no columns


# --------------------------------------------------------------------------- a foreign contraction


class _MatrixProduct(IRDLOperation, StructuredOpInterface, Reduction):
    """``lhs @ rhs`` of two matrices; loops: rows, columns, contraction."""

    lhs = operand_def(FloatTensorConstr)
    rhs = operand_def(FloatTensorConstr)
    result = result_def(FloatTensorConstr)
    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        a, b = (tensor_shape(t) for t in operand_types)
        return (tensor_type(element_type(operand_types[0]), (a[0], b[1])),)

    def loop_extents(self) -> tuple[int, ...]:
        (m, k), (_, n) = tensor_shape(self.lhs), tensor_shape(self.rhs)
        return (m, n, k)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        return (IteratorType.PARALLEL, IteratorType.PARALLEL, IteratorType.REDUCTION)

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        return (dims_map(3, (0, 2)), dims_map(3, (2, 1)), dims_map(3, (0, 1)))

    def evaluate(self, *args: Array) -> tuple[Array, ...]:
        return (np.asarray(self.evaluate_partial(*args), dtype=numpy_dtype(self.result.type)),)

    def combiner(self) -> Combiner:
        return Combiner("add", 0.0)

    def evaluate_partial(self, *args: Array) -> Array:
        return np.asarray(np.matmul(args[0], args[1]), dtype=self.accumulator_dtype())

    def scalar_combine(self, b: Builder, acc: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        product = b.insert(arith.MulfOp(args[0], args[1])).result
        return b.insert(arith.AddfOp(acc, product)).result


@irdl_op_definition
class MmOp(_MatrixProduct, Contraction):
    """A matrix product that says it is a contraction.

    ```mlir
    %2 = ext.mm %0, %1 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    ```
    """

    name = "ext.mm"


@irdl_op_definition
class PlainMmOp(_MatrixProduct):
    """The same matrix product, structured and nothing else.

    ```mlir
    %2 = ext.plain_mm %0, %1 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    ```
    """

    name = "ext.plain_mm"


Ext = Dialect("ext", [MmOp, PlainMmOp], [])


def program(op: str) -> str:
    return f"""
func.func @main(%x: tensor<8x16xf32>, %y: tensor<16x4xf32>) -> tensor<8x4xf32> {{
  %0 = tensordsl.exp %y : tensor<16x4xf32>
  %1 = {op} %x, %0 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  func.return %1 : tensor<8x4xf32>
}}
"""


def fused(op: str) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, Func, td.TensorDSL, Kernel, Ext):
        ctx.load_dialect(dialect)
    module = Parser(ctx, program(op)).parse_module()
    build_pipeline("tdsl-fuse{memory-budget=1000000}").apply(ctx, module)
    module.verify()
    return module


def groups(module: ModuleOp) -> list[list[str]]:
    return [
        [o.name for o in g.body.block.ops if o.name != "kernel.yield"]
        for g in module.walk()
        if isinstance(g, FusedOp)
    ]


def test_a_foreign_contraction_is_planned_as_one() -> None:
    """The right operand of a contraction is read from memory: ``exp(y)`` is computed in a
    group of its own, for ``ext.mm`` as for ``tensordsl.matmul``; the same product that is
    not a contraction fuses with it."""
    assert issubclass(MmOp, Contraction) and not issubclass(PlainMmOp, Contraction)
    assert groups(fused("tensordsl.matmul")) == [["tensordsl.exp"], ["tensordsl.matmul"]]
    assert groups(fused("ext.mm")) == [["tensordsl.exp"], ["ext.mm"]]
    assert groups(fused("ext.plain_mm")) == [["tensordsl.exp", "ext.plain_mm"]]
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    y = rng.uniform(-1, 1, (16, 4)).astype(np.float32)
    for op in ("ext.mm", "ext.plain_mm"):
        (got,) = run_function(fused(op), "main", x, y)
        np.testing.assert_allclose(got, x @ np.exp(y), rtol=1e-5, atol=1e-5)


def test_a_foreign_contraction_keeps_its_columns_and_contraction_whole() -> None:
    x, y = values((8, 16), (16, 4))
    mm = MmOp.create(operands=[x, y], result_types=[tensor_type(f32, (8, 4))])
    # by default, from its indexing maps: the columns and the contraction
    assert mm.prefer_whole_dims() == (1, 2)
