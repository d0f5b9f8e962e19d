"""``memref`` to xDSL's ``llvm`` dialect for memrefs of static shape and strides.

A memref value is an ``!llvm.ptr`` to its element at index 0 (see
:mod:`tdsl.backend.llvm.llvm_types`): the element at ``[i, j, ...]`` is at element
offset ``i * s0 + j * s1 + ...`` from it, with the strides ``s`` of the type's
layout (row-major for the identity layout).  The layout's static ``offset`` is
not added: it describes where element 0 sits in the buffer the memref was cut
from, and the pointer already points there.

- ``memref.load``/``memref.store`` -> ``llvm.getelementptr inbounds`` plus
  ``llvm.load``/``llvm.store``; ``i1`` elements are bytes (``zext`` on store,
  ``icmp ne 0`` on load);
- ``memref.subview`` (static or dynamic offsets; the result type gives sizes and
  strides) -> the pointer moved by ``sum(offset_k * stride_k)``;
- ``memref.cast`` -> the same pointer;
- ``memref.alloca`` of a static shape and identity layout -> ``llvm.alloca`` of
  its elements (with the op's alignment, else 64 bytes): a stack array, which the
  group functions of ``tdsl-lower-to-loops`` allocate once at their entry.

Memrefs with a dynamic dimension, stride or offset are not lowered (left in
place, so the pass reports them), nor are ``alloc``/``dealloc``, reshapes and
the other ``memref`` ops.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from tdsl.backend.llvm.arith_to_llvm import icmp
from tdsl.backend.llvm.llvm_types import (
    insert,
    is_bool,
    memref_element,
    replace_op,
    storage_type,
    to_llvm,
)


def static_strides(t: Attribute) -> tuple[int, ...] | None:
    """The element strides of a memref type of static shape and strides, else None."""
    if not isinstance(t, MemRefType):
        return None
    if any(d == DYNAMIC_INDEX for d in t.get_shape()):
        return None
    strides = t.get_strides()
    if strides is None or any(s is None for s in strides):
        return None
    return tuple(s for s in strides if s is not None)


def element_offset(
    rewriter: PatternRewriter, indices: Sequence[SSAValue | int], strides: Sequence[int]
) -> SSAValue | int:
    """``sum(index_k * stride_k)`` as an ``i64`` value, or an int when all are static."""
    static = 0
    terms: list[SSAValue] = []
    for index, stride in zip(indices, strides, strict=True):
        if stride == 0:
            continue
        if isinstance(index, int):
            static += index * stride
            continue
        value = to_llvm(rewriter, index)
        if stride != 1:
            factor = insert(rewriter, llvm.ConstantOp(IntegerAttr(stride, i64), i64))
            value = insert(rewriter, llvm.MulOp(value, factor))
        terms.append(value)
    if not terms:
        return static
    total = terms[0]
    for term in terms[1:]:
        total = insert(rewriter, llvm.AddOp(total, term))
    if static:
        constant = insert(rewriter, llvm.ConstantOp(IntegerAttr(static, i64), i64))
        total = insert(rewriter, llvm.AddOp(total, constant))
    return total


def offset_pointer(
    rewriter: PatternRewriter, base: SSAValue, offset: SSAValue | int, element: Attribute
) -> SSAValue:
    """``base`` moved by ``offset`` elements of type ``element`` (``base`` itself for 0)."""
    if isinstance(offset, int) and offset == 0:
        return base
    gep = llvm.GEPOp.from_mixed_indices(base, [offset], element, inbounds=True)
    return insert(rewriter, gep)


def _element_pointer(
    rewriter: PatternRewriter, memref_value: SSAValue, indices: Sequence[SSAValue]
) -> tuple[SSAValue, Attribute] | None:
    strides = static_strides(memref_value.type)
    if strides is None:
        return None
    element = storage_type(memref_element(memref_value.type))
    offset = element_offset(rewriter, indices, strides)
    return offset_pointer(rewriter, to_llvm(rewriter, memref_value), offset, element), element


class LoadToLLVM(RewritePattern):
    """``memref.load`` -> ``llvm.getelementptr`` + ``llvm.load``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter) -> None:
        found = _element_pointer(rewriter, op.memref, op.indices)
        if found is None:  # no static strides
            return
        pointer, element = found
        value = insert(rewriter, llvm.LoadOp(pointer, element))
        if is_bool(op.res.type):
            zero = insert(rewriter, llvm.ConstantOp(IntegerAttr(0, 8), element))
            value = insert(rewriter, icmp(value, zero, "ne"))
        replace_op(rewriter, op, [value])


class StoreToLLVM(RewritePattern):
    """``memref.store`` -> ``llvm.getelementptr`` + ``llvm.store``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter) -> None:
        found = _element_pointer(rewriter, op.memref, op.indices)
        if found is None:  # no static strides
            return
        pointer, element = found
        value = to_llvm(rewriter, op.value)
        if is_bool(op.value.type):
            value = insert(rewriter, llvm.ZExtOp(value, element))
        rewriter.insert(llvm.StoreOp(value, pointer))
        rewriter.erase(op)


class SubviewToLLVM(RewritePattern):
    """``memref.subview`` -> the source pointer moved to the view's element 0."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.SubviewOp, rewriter: PatternRewriter) -> None:
        strides = static_strides(op.source.type)
        if strides is None or static_strides(op.result.type) is None:
            return
        dynamic = iter(op.offsets)
        offsets: list[SSAValue | int] = [
            next(dynamic) if o == DYNAMIC_INDEX else o for o in op.static_offsets.get_values()
        ]
        element = storage_type(memref_element(op.source.type))
        offset = element_offset(rewriter, offsets, strides)
        replace_op(
            rewriter, op, [offset_pointer(rewriter, to_llvm(rewriter, op.source), offset, element)]
        )


class CastToLLVM(RewritePattern):
    """``memref.cast`` between static types -> the same pointer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.CastOp, rewriter: PatternRewriter) -> None:
        if static_strides(op.source.type) is None or static_strides(op.dest.type) is None:
            return
        replace_op(rewriter, op, [to_llvm(rewriter, op.source)])


class AllocaToLLVM(RewritePattern):
    """``memref.alloca`` (static shape, identity layout) -> ``llvm.alloca``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocaOp, rewriter: PatternRewriter) -> None:
        t = op.memref.type
        if op.dynamic_sizes or op.symbol_operands:
            return
        if not isinstance(t.layout, NoneAttr) or any(d == DYNAMIC_INDEX for d in t.get_shape()):
            return
        count = 1
        for d in t.get_shape():
            count *= d
        size = insert(rewriter, llvm.ConstantOp(IntegerAttr(count, i64), i64))
        element = storage_type(memref_element(t))
        alignment = op.alignment.value.data if op.alignment is not None else 64
        replace_op(rewriter, op, [insert(rewriter, llvm.AllocaOp(size, element, alignment))])


MEMREF_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    LoadToLLVM(),
    StoreToLLVM(),
    SubviewToLLVM(),
    CastToLLVM(),
    AllocaToLLVM(),
)
"""Every pattern of this module."""
