"""Long loop bodies in parts, and each constant once per function, so that the LLVM
conversion and LLVM's time stay linear in a program's length.

The loops lowering makes the constants each loop nest needs where it builds the nest:
about half the ops of a long chain's loops were ``arith.constant`` (1,845 of them the
index 0).  :func:`unique_constants` keeps one of each (value bits and type) at the start
of its function, as MLIR's canonicalizer hoists and uniques constants.

A group's function holds all its loop nests one after another, inside the loops over
its tiles and rows.  LLVM's loop passes (``IndVarSimplify``, ``LoopRotate``, the
inliner's function simplification) take time that grows faster than the function:
a chain of 2,000 ops, 509 loop nests in one body, took 11.5 s to optimize where 1,000
ops took 4.1 s.  So ``tdsl-lower-to-loops`` moves the loop nests of a long body into
functions of their own, each of about :data:`PART_OPS` ops, called in order from where
they were (``@main_g0_part0``, ``@main_g0_part1``, ...; marked ``noinline``), once the
body holds more than :data:`OUTLINE_OPS` ops.  The code each part runs is the code the
body ran: the calls cost one per row or tile per part.

A part is a run of the body's ops whose values no later op reads (a cut where nothing
crosses: :func:`unique_constants` runs first, so the constants stand before every nest),
starting at a loop nest (the body's leading index arithmetic stays where it is).  What
it reads from outside becomes its arguments, but for constants, which it makes again.  Its memrefs must be the function's own arguments or
its ``alloca`` buffers: distinct buffers, as the function's are, so the parts keep the
``noalias`` of its arguments (a view of another argument would share its bytes; a body
that passes one is left whole).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator

from tdsl.backend.llvm.loops_common import ROLES_ATTR
from tdsl.ir_text import Names

OUTLINE_OPS = 6_000
"""A function whose body (its ops and theirs) holds more ops than this is outlined."""

PART_OPS = 2_000
"""The ops a part holds at least (its last nest may take it past this); a tail of fewer
than a quarter of this stays in the body."""


def unique_constants(module: ModuleOp) -> None:
    """One ``arith.constant`` per value and type in each function of ``module``, at the
    start of its body (floats are told apart by their bits: ``-0.0`` is not ``0.0``)."""
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
            continue
        entry = fn.body.block
        kept: dict[tuple[object, ...], arith.ConstantOp] = {}
        last: Operation | None = None  # (in the order they first appear)
        for op in list(fn.walk()):
            if not isinstance(op, arith.ConstantOp):
                continue
            key = _constant_key(op)
            if key is None:
                continue
            first = kept.get(key)
            if first is None:
                kept[key] = op
                op.detach()
                Rewriter.insert_op(
                    op, InsertPoint.at_start(entry) if last is None else InsertPoint.after(last)
                )
                last = op
            else:
                op.results[0].replace_all_uses_with(first.results[0])
                op.detach()
                op.erase()


def _constant_key(op: arith.ConstantOp) -> tuple[object, ...] | None:
    value = op.value
    if isinstance(value, FloatAttr):
        return (op.results[0].type, struct.pack("<d", value.value.data))
    if isinstance(value, IntegerAttr):
        return (op.results[0].type, value.value.data)
    return None  # (a dense constant keeps its place)


def outline_long_bodies(module: ModuleOp) -> None:
    """Outline the long bodies of ``module``'s group functions in parts (in place)."""
    for fn in list(module.ops):
        if not isinstance(fn, func.FuncOp) or not fn.body.blocks or ROLES_ATTR in fn.attributes:
            continue  # (the entry function only calls the groups)
        if _count(fn) - 1 > OUTLINE_OPS:
            _outline(module, fn, _heaviest_block(fn.body.block))


def _count(op: Operation) -> int:
    return sum(1 for _ in op.walk())


def _heaviest_block(block: Block) -> Block:
    """The loop body that holds (nearly) all of ``block``'s ops: the body of the loops
    over tiles and rows that hold the nests."""
    while True:
        counts = [(_count(op), op) for op in block.ops]
        total = sum(c for c, _ in counts)
        largest, op = max(counts, key=lambda item: item[0])
        if not isinstance(op, scf.ForOp) or 10 * largest < 9 * total:
            return block
        block = op.body.block


def _outline(module: ModuleOp, fn: func.FuncOp, block: Block) -> None:
    ops = [op for op in block.ops if not op.has_trait(IsTerminator)]
    position = {op: k for k, op in enumerate(ops)}

    def top(op: Operation) -> int:
        """The position of the op of ``block`` that holds ``op`` (past the end: none)."""
        while op.parent is not block:
            parent = op.parent_op()
            if parent is None:
                return len(ops)
            op = parent
        return position.get(op, len(ops))

    last_read = [
        max((top(use.operation) for r in op.results for use in r.uses), default=-1) for op in ops
    ]
    parts: list[tuple[int, int]] = []
    start: int | None = None
    size = read_until = 0
    for k, op in enumerate(ops):
        if start is None:
            if not op.regions:
                continue  # a part starts at a loop nest
            start, size, read_until = k, 0, -1
        size += _count(op)
        read_until = max(read_until, last_read[k])
        if size >= PART_OPS and read_until <= k:
            parts.append((start, k + 1))
            start = None
    if start is not None and read_until < len(ops) and size >= PART_OPS // 4:
        parts.append((start, len(ops)))
    anchor: Operation = fn
    symbols = Names({op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)})
    for n, (first, end) in enumerate(parts):
        name = symbols.fresh(f"{fn.sym_name.data}_part{n}")  # (a user's may have it)
        made = _outline_part(fn, block, ops[first:end], name)
        if made is not None:
            module.body.block.insert_op_after(made, anchor)
            anchor = made


def _outline_part(
    fn: func.FuncOp, block: Block, ops: Sequence[Operation], name: str
) -> func.FuncOp | None:
    """Move ``ops`` (consecutive ops of ``block`` whose values only they read) into a new
    function ``name``, called where they were; None (nothing moved) when they read a
    memref that is not ``fn``'s argument or ``alloca``."""
    inside = set(ops)

    def within(op: Operation | None) -> bool:
        while op is not None:
            if op in inside:
                return True
            if op.parent is block:
                return False
            op = op.parent_op()
        return False

    free: dict[SSAValue, None] = {}
    for top in ops:
        for op in top.walk():
            for v in op.operands:
                owner = v.owner
                defined = owner if isinstance(owner, Operation) else owner.parent_op()
                if isinstance(v, BlockArgument) and defined is not None and within(defined):
                    continue
                if isinstance(owner, Operation) and within(owner):
                    continue
                free.setdefault(v)
    args = [v for v in free if not isinstance(v.owner, arith.ConstantOp)]
    for v in args:
        if isinstance(v.type, MemRefType):
            own_arg = isinstance(v, BlockArgument) and v.owner is fn.body.block
            if not own_arg and not isinstance(v.owner, memref.AllocaOp):
                return None  # a view shares another argument's bytes: keep the body whole
    part = func.FuncOp(name, ([v.type for v in args], []))
    part.attributes["passthrough"] = ArrayAttr([StringAttr("noinline")])
    body = part.body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(args, body.args, strict=True))
    for a, v in zip(body.args, args, strict=True):
        a.name_hint = v.name_hint
    for v in free:
        if isinstance(v.owner, arith.ConstantOp):
            made = v.owner.clone()
            body.add_op(made)
            mapping[v] = made.results[0]
    call = func.CallOp(name, args, [])
    block.insert_op_before(call, ops[0])
    for top in ops:
        top.detach()
        body.add_op(top)
        for op in top.walk():
            if any(v in mapping for v in op.operands):
                op.operands = [mapping.get(v, v) for v in op.operands]
    body.add_op(func.ReturnOp())
    return part
