"""A decomposition is checked when it is made: one that breaks its contract is a
located ``TdslIRError`` naming the op, never an assert or a wrong result later."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import Func
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.irdl import irdl_op_definition
from xdsl.parser import Parser

from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import Kernel
from tdsl.dialects.structured import RowLocalOp, checked_decomposition
from tdsl.dialects.tensordsl import TensorDSL
from tdsl.errors import TdslIRError
from tdsl.interpreters.scalar import reference_evaluate
from tdsl.pipeline import build_pipeline


class _Softmaxish(RowLocalOp):
    """A row-normalizing op with softmax's semantics (whole rows: NumPy's)."""

    assembly_format = "$input (`axis` `=` $axis^)? attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation, axis: int = -1) -> None:
        value = SSAValue.get(input)
        super().__init__(
            operands=[value], result_types=[value.type], properties={"axis": IntegerAttr(axis, i64)}
        )

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        return (td.softmax_array(args[0], self.axis_value),)

    def softmax(self) -> tuple[list[Operation], SSAValue]:
        found = td.SoftmaxOp(self.input, self.axis_value).decompose()
        return found


@irdl_op_definition
class DropsItsLastOp(_Softmaxish):
    """softmax whose decomposition leaves out the op computing the value it names."""

    name = "ext.drops_its_last"

    def decompose_rows(self) -> tuple[list[Operation], SSAValue]:
        ops, value = self.softmax()
        return ops[:-1], value


@irdl_op_definition
class StillNormalizesOp(_Softmaxish):
    """softmax 'decomposed' into a softmax: the row-normalizing dim is still there."""

    name = "ext.still_normalizes"

    def decompose_rows(self) -> tuple[list[Operation], SSAValue]:
        inner = td.SoftmaxOp(self.input, axis=-1)
        return [inner], inner.result


Ext = Dialect("ext", [DropsItsLastOp, StillNormalizesOp], [])


def parse(name: str) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL, Kernel, Ext):
        ctx.load_dialect(dialect)
    text = f"""
func.func @main(%x: tensor<4x512xf32>) -> tensor<4x512xf32> {{
  %0 = tensordsl.exp %x : tensor<4x512xf32>
  %1 = {name} %0 : tensor<4x512xf32> loc("prog.mlir":4:8)
  func.return %1 : tensor<4x512xf32>
}}
"""
    module = Parser(ctx, text, "prog.mlir").parse_module()
    module.verify()
    return module


CASES = {
    "ext.drops_its_last": "replaces the result by a value none of its ops computes",
    "ext.still_normalizes": "still holds the row-normalizing op 'tensordsl.softmax'",
}


def the_op(module: ModuleOp, name: str) -> Operation:
    return next(op for op in module.walk() if op.name == name)


@pytest.mark.parametrize("name", list(CASES))
def test_a_broken_decomposition_is_a_located_error(name: str) -> None:
    module = parse(name)
    with pytest.raises(TdslIRError) as err:
        checked_decomposition(the_op(module, name))
    assert f"'{name}': its decomposition {CASES[name]}" in err.value.message
    assert err.value.op is the_op(module, name)
    assert err.value.location is not None and (err.value.line, err.value.column) == (4, 8)


@pytest.mark.parametrize("name", list(CASES))
def test_tiling_a_row_longer_than_the_budget_reports_it(name: str) -> None:
    # a row of 512 at a budget of 64 runs decomposed: tdsl-tile checks it first
    module = parse(name)
    with pytest.raises(TdslIRError) as err:
        build_pipeline("tdsl-fuse{memory-budget=64},tdsl-tile").apply(Context(), module)
    assert CASES[name] in err.value.message
    assert err.value.location is not None and err.value.location.line == 4


def test_the_reference_interpreter_reports_it_too() -> None:
    module = parse("ext.drops_its_last")
    with pytest.raises(TdslIRError, match="none of its ops computes"):
        reference_evaluate(the_op(module, "ext.drops_its_last"))


@pytest.mark.parametrize(
    "name", ["tensordsl.softmax", "tensordsl.log_softmax", "tensordsl.layernorm"]
)
def test_tensordsl_decompositions_keep_the_contract(name: str) -> None:
    op = the_op(parse(name), name)
    found = checked_decomposition(op)
    assert found is not None and found[1].type == op.results[0].type
