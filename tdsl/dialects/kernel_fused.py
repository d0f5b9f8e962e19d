"""``kernel.yield`` and ``kernel.fused``, with :class:`GroupOp`, the base both group ops
share (the body's ops and the check of its region's signature), and the helpers that
print a tile's maps and scratch buffers as attributes (:func:`dim_map`,
:func:`buffer_type`).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import I64, AffineMapAttr, IntegerAttr, MemRefType, StringAttr, i64
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import (
    IsolatedFromAbove,
    IsTerminator,
    OpTrait,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from tdsl.defaults import MAX_OPTION
from tdsl.dialects.kernel_plan import Buffer
from tdsl.dialects.structured import TensorConstr, dims_map, element_of, numpy_dtype


@dataclass(frozen=True)
class InGroup(OpTrait):
    """The op's parent is a group op (``kernel.fused`` or ``kernel.tile``: the subclasses
    of :class:`GroupOp`, one of which lives in a module above this one)."""

    def verify(self, op: Operation) -> None:
        parent = op.parent_op()
        if parent is None or isinstance(parent, GroupOp):
            return
        raise VerifyException(
            f"'{op.name}' expects parent op to be one of 'kernel.fused', 'kernel.tile'"
        )


def _yield_traits() -> tuple[OpTrait, ...]:
    return (IsTerminator(), InGroup(), Pure())


def _types_str(types: Sequence[Attribute]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends the body of a ``kernel.fused`` or ``kernel.tile``, returning its values.

    ```mlir
    kernel.yield %0, %1 : tensor<8x8xf32>, tensor<8xf32>
    ```
    """

    name = "kernel.yield"

    values = var_operand_def()

    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = lazy_traits_def(_yield_traits)

    def __init__(self, *values: SSAValue | Operation) -> None:
        super().__init__(operands=[[SSAValue.get(v) for v in values]])


class GroupOp(IRDLOperation, abc.ABC):
    """What ``kernel.fused`` and ``kernel.tile`` share: operands, results, a name and a body.

    The body's block arguments stand for the operands; it ends in
    ``kernel.yield`` with the results.
    """

    inputs = var_operand_def(TensorConstr)
    outputs = var_result_def(TensorConstr)
    group = opt_prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect(), IsolatedFromAbove())

    @property
    def group_name(self) -> str | None:
        return None if self.group is None else self.group.data

    def body_ops(self) -> tuple[tuple[Operation, ...], tuple[SSAValue, ...]]:
        """The ops of the body (terminator excluded) and the values it yields."""
        ops = list(self.body.block.ops)
        term = ops.pop() if ops and isinstance(ops[-1], YieldOp) else None
        return tuple(ops), tuple(term.operands) if term is not None else ()

    def check_region_signature(
        self, arg_types: Sequence[Attribute], yield_types: Sequence[Attribute], what: str
    ) -> None:
        block = self.body.block
        got = [a.type for a in block.args]
        if got != list(arg_types):
            raise VerifyException(
                f"'{self.name}' op body arguments {_types_str(got)} do not match the {what} "
                f"{_types_str(arg_types)}"
            )
        term = block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException(f"'{self.name}' op body must end in kernel.yield")
        yielded = [v.type for v in term.values]
        if yielded != list(yield_types):
            raise VerifyException(
                f"'{self.name}' op body yields {_types_str(yielded)} but the op expects "
                f"{_types_str(yield_types)}"
            )


@irdl_op_definition
class FusedOp(GroupOp):
    """A fusion group: ops that run as one kernel and materialize only its results.

    The body's block arguments stand for the operands (same types, same order);
    the body computes on whole tensors and yields the results.  A value the
    rest of the function uses is a result; every other intermediate stays
    inside.  ``group`` names the group in reports and in generated code;
    ``budget`` is the memory budget (in elements) that ``tdsl-fuse`` was given,
    which ``tdsl-tile`` then schedules the group under.  ``scratch``, when
    present, is the scratch the group's tiles may use instead: what the values
    the plan materializes between groups leave of the budget, or, where no
    plan fits the budget, the least scratch the chosen plan needs
    (``group "g1" budget 4096 scratch 2048``).

    ```mlir
    %y = kernel.fused(%x, %w, %b) group "g0" budget 1000000 : (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<64x256xf32> {
    ^bb0(%x1: tensor<64x128xf32>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>):
      %0 = tensordsl.matmul %x1, %w1 : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
      %1 = tensordsl.add %0, %b1 : (tensor<64x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
      %2 = tensordsl.relu %1 : tensor<64x256xf32>
      kernel.yield %2 : tensor<64x256xf32>
    }
    ```
    """

    name = "kernel.fused"

    budget = opt_prop_def(IntegerAttr[I64])
    scratch = opt_prop_def(IntegerAttr[I64])

    assembly_format = (
        "`(` $inputs `)` (`group` $group^)? (`budget` $budget^)? (`scratch` $scratch^)? "
        "attr-dict `:` functional-type($inputs, $outputs) $body"
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        group: str | None = None,
        budget: int | None = None,
        scratch: int | None = None,
    ) -> None:
        props: dict[str, Attribute] = {}
        if group is not None:
            props["group"] = StringAttr(group)
        if budget is not None:
            props["budget"] = IntegerAttr(budget, i64)
        if scratch is not None:
            props["scratch"] = IntegerAttr(scratch, i64)
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            regions=[body],
            properties=props,
        )

    @property
    def budget_value(self) -> int | None:
        return None if self.budget is None else self.budget.value.data

    @property
    def scratch_value(self) -> int | None:
        """The scratch the group's tiles may use, when ``tdsl-fuse`` recorded one."""
        return None if self.scratch is None else self.scratch.value.data

    def verify_(self) -> None:
        if self.budget is not None and self.budget.value.data <= 0:
            raise VerifyException(
                f"'{self.name}' op memory budget {self.budget.value.data} must be positive"
            )
        if self.budget is not None and self.budget.value.data > MAX_OPTION:
            # (as the memory-budget option: the native loops' plan is made under it)
            raise VerifyException(
                f"'{self.name}' op memory budget {self.budget.value.data} must be at most "
                "2**62, as the memory-budget option"
            )
        if self.scratch is not None and self.scratch.value.data < 0:
            raise VerifyException(
                f"'{self.name}' op scratch {self.scratch.value.data} must not be negative"
            )
        self.check_region_signature(
            [v.type for v in self.inputs], [r.type for r in self.outputs], "operands"
        )


def dim_map(num_dims: int, dims: Sequence[int | None]) -> AffineMapAttr:
    """The map whose result ``j`` is ``d<dims[j]>``, or the constant 0 (a broadcast dim) for None."""
    return AffineMapAttr(dims_map(num_dims, dims))


def buffer_type(buffer: Buffer) -> MemRefType:
    """A scratch buffer as recorded on ``kernel.tile``: ``memref<4096xf32>``."""
    return MemRefType(element_of(buffer.dtype), [buffer.elements])


def memref_buffer(t: MemRefType) -> Buffer:
    """The scratch buffer ``kernel.tile`` records as ``t`` (:func:`buffer_type`'s inverse;
    the verifier checks that ``t`` is one)."""
    return Buffer(numpy_dtype(t.get_element_type()), t.get_shape()[0])
