"""A sum's reordering as LLVM loop metadata, not as a fast-math flag.

``tdsl-lower-to-loops`` marks the accumulator update of a ``sum`` or ``mean``
``reassoc`` (:func:`tdsl.backend.llvm.loops_common._mark_reassoc`): the additions
into the accumulator may take another order, which LLVM needs to vectorize the
reduction (several partial sums).  Handed to LLVM as it is, the flag says more:
InstCombine folds ``acc + x * -y`` into ``acc - x * y`` and gives the product it
makes the addition's flags, so ``(x0 * x1) * -x1`` is then reordered into
``x0 * (x1 * x1)``, which overflows where NumPy's order does not.

:func:`reorder_sums_by_loop_hints` runs on llvmlite's IR module, after xDSL's
conversion: it takes the flag off each such accumulator update and instead marks
the innermost loop holding it ``llvm.loop.vectorize.enable``.  A loop so marked
lets LLVM's loop vectorizer reorder the loop's reductions (as the flag did), and
nothing else: InstCombine never sees a flag.  A loop is marked only where every
other float recurrence in it combines in any order (a ``max``), or itself carried
the flag: a ``prod`` or a scan in the same loop keeps its order, and the sum then
adds in order too (correct, unvectorized); so does a sum beside a recurrence that is
more than one op on its carried value (``logsumexp``'s online state), or that
InstCombine makes so (a maximum of a select with a NaN arm), where LLVM, asked to
vectorize, would print that it could not.

An accumulator update is found as the lowering writes it: a float add whose
operand is loaded from an address the loop does not change and whose result is
stored back there, or whose operand is a phi of the loop's header fed by it.
"""

from __future__ import annotations

import math
from typing import Any

import llvmlite.ir as ir

FLOAT_ARITHMETIC = frozenset({"fadd", "fsub", "fmul", "fdiv", "frem"})
"""Ops whose result depends on the order a recurrence applies them in."""

VECTORIZE = "llvm.loop.vectorize.enable"

MIN_TRIPS = 4
"""The fewest iterations of a loop given the hint: a loop of 2, LLVM did not vectorize
(it found no reduction) and, since the hint asks for it, printed a warning that it
could not (a loop that short gains nothing from vector code anyway)."""


class _LoopID(ir.values.MDValue):
    """A distinct, self-referencing loop ID (``!N = distinct !{!N, hints...}``), as
    LLVM's loop metadata requires; llvmlite's ``add_metadata`` makes only uniqued
    nodes, and cannot refer to itself."""

    def __init__(self, module: ir.Module, hints: list[Any]) -> None:
        super().__init__(module, hints, name=str(len(module.metadata)))
        self.operands = (self, *hints)

    def descr(self, buf: list[str]) -> None:
        inner: list[str] = []
        super().descr(inner)
        buf += ("distinct ", *inner)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return id(self)


def reorder_sums_by_loop_hints(module: ir.Module) -> None:
    """Move each sum accumulator's ``reassoc`` flag in ``module`` to its innermost
    loop's ``llvm.loop.vectorize.enable`` hint (module docstring), in place."""
    hint: Any = None
    for function in module.functions:
        for loop in _innermost_loops(function):
            sums, ordered = _recurrences(loop)
            trips = _trip_count(loop)
            if not sums or ordered or (trips is not None and trips < MIN_TRIPS):
                continue
            if hint is None:
                hint = module.add_metadata(
                    [ir.MetaDataString(module, VECTORIZE), ir.Constant(ir.IntType(1), 1)]
                )
            loop.latch.terminator.set_metadata("llvm.loop", _LoopID(module, [hint]))
        for update in _accumulator_updates(function):
            update.flags.remove("reassoc")


def _accumulator_updates(function: ir.Function) -> list[ir.Instruction]:
    """The ``reassoc`` float adds of ``function`` that update an accumulator, in a
    loop over its reduction dim or (a column sum's, with a parallel loop inside)
    around it: each stored back to the address of the load it adds to, or fed back
    into the phi it adds to."""
    found: list[ir.Instruction] = []
    for block in function.blocks:
        for instruction in block.instructions:
            if isinstance(instruction, ir.StoreInstr):
                value, pointer = instruction.operands
                if _is_sum(value) and any(_reads(o, pointer) for o in value.operands):
                    found.append(value)
            elif isinstance(instruction, ir.PhiInstr):
                found += [
                    v for v, _ in instruction.incomings if _is_sum(v) and instruction in v.operands
                ]
    return list({id(i): i for i in found}.values())


def _is_sum(value: Any) -> bool:
    return isinstance(value, ir.Instruction) and value.opname == "fadd" and "reassoc" in value.flags


class _Loop:
    """The blocks ``blocks`` from a header to the latch branching back to it, in
    the function's block order (structured loops lowered by ``scf``-to-``cf`` keep
    a loop's blocks contiguous, a nested loop's inside its parent's)."""

    def __init__(self, blocks: list[ir.Block]) -> None:
        self.blocks = blocks
        self.header = blocks[0]
        self.latch = blocks[-1]
        self.members = {id(b) for b in blocks}

    def defines(self, value: Any) -> bool:
        return isinstance(value, ir.Instruction) and id(value.parent) in self.members

    def instructions(self) -> list[ir.Instruction]:
        return [i for b in self.blocks for i in b.instructions]


def _innermost_loops(function: ir.Function) -> list[_Loop]:
    """Loops whose blocks hold no other loop's back edge."""
    blocks = list(function.blocks)
    index = {id(b): n for n, b in enumerate(blocks)}
    spans: list[tuple[int, int]] = []
    for n, block in enumerate(blocks):
        terminator = block.terminator
        if terminator is None:
            continue
        for target in terminator.operands:
            if isinstance(target, ir.Block) and index.get(id(target), n + 1) <= n:
                spans.append((index[id(target)], n))
    innermost = [
        (h, t) for h, t in spans if not any((h, t) != s and h <= s[0] and s[1] <= t for s in spans)
    ]
    return [_Loop(blocks[h : t + 1]) for h, t in innermost]


def _trip_count(loop: _Loop) -> int | None:
    """The iterations of ``loop`` where its header counts a phi from one constant to
    another by a constant step (as ``scf.for`` with constant bounds lowers); else None."""
    branch = loop.header.terminator
    if not isinstance(branch, ir.ConditionalBranch):
        return None
    test = branch.operands[0]
    if not isinstance(test, ir.ICMPInstr) or test.op != "slt":
        return None
    index, bound = test.operands
    if not isinstance(index, ir.PhiInstr) or not isinstance(bound, ir.Constant):
        return None
    start = [v for v, b in index.incomings if id(b) not in loop.members]
    steps = [v for v, b in index.incomings if id(b) in loop.members]
    if len(start) != 1 or len(steps) != 1 or not isinstance(start[0], ir.Constant):
        return None
    step = steps[0]
    if not (
        isinstance(step, ir.Instruction) and step.opname == "add" and step.operands[0] is index
    ):
        return None
    by = step.operands[1]
    if not isinstance(by, ir.Constant) or not isinstance(by.constant, int) or by.constant <= 0:
        return None
    return max(0, -(-(int(bound.constant) - int(start[0].constant)) // by.constant))


def _recurrences(loop: _Loop) -> tuple[list[ir.Instruction], list[ir.Instruction]]:
    """The loop's float recurrences: the sum accumulator updates marked ``reassoc``,
    and the updates of other ones whose result depends on their order (the
    ``fastmath`` option's ``reassoc`` allows any order)."""
    sums: list[ir.Instruction] = []
    ordered: list[ir.Instruction] = []
    for update in _updates(loop):
        if _is_sum(update):
            sums.append(update)
        elif _folds_a_select(update) or (
            update.opname in FLOAT_ARITHMETIC and "reassoc" not in update.flags
        ):
            ordered.append(update)
    return sums, ordered + _composite_updates(loop)


MIN_MAX = ("llvm.maximum.", "llvm.minimum.", "llvm.maxnum.", "llvm.minnum.")


def _folds_a_select(update: ir.Instruction) -> bool:
    """Whether ``update`` is a ``max``/``min`` recurrence whose other operand is a
    select with a NaN or infinite arm (:func:`_absorbing`): InstCombine moves the
    select after the recurrence (``maximum(acc, select(c, nan, x))`` becomes
    ``select(c, nan, maximum(acc, x))``), where LLVM then finds no reduction and, where
    the loop's hint asks it to vectorize, prints that it could not (``mean(softmax(a) @
    e, axis=0, keepdims=True) + sum(log_softmax(softmax(a) @ e, axis=0), axis=0,
    keepdims=True)``, ``e`` one column: the mean's sum and the maximum of a quotient
    NaN where its divisor is infinite, in one loop; found by fuzzing)."""
    return (
        isinstance(update, ir.CallInstr)
        and update.callee.name.startswith(MIN_MAX)
        and any(
            isinstance(a, ir.SelectInstr) and any(_absorbing(o) for o in a.operands[1:])
            for a in update.args
        )
    )


def _absorbing(value: Any) -> bool:
    """Whether ``value`` is a float constant a ``max``/``min`` folds with any other
    operand (NaN or an infinity: ``maximum(acc, nan)`` is NaN, ``maximum(acc, -inf)``
    is ``acc``): a select between it and ``x`` moves after the recurrence, where one
    of ``0`` (a ``relu``) stays put and the loop vectorizes."""
    if not isinstance(value, ir.Constant) or not isinstance(value.constant, float):
        return False
    return math.isnan(value.constant) or math.isinf(value.constant)


def _composite_updates(loop: _Loop) -> list[ir.Instruction]:
    """The loop's float recurrences that are not one op on the carried value: stored to
    an address the loop does not change and loads before, or fed back into a phi of the
    header, from a value none of whose operands is that load or phi (``logsumexp``'s
    online state: a select between two rescaled totals).  LLVM finds no reduction there
    and, where the loop's hint asks it to vectorize, prints that it could not
    (``logsumexp(x - max(x, axis=0, keepdims=True)) + mean(x * mean(x, axis=1,
    keepdims=True))``: the online state and the mean's sum in one loop; found by
    fuzzing)."""
    found: list[ir.Instruction] = []
    instructions = loop.instructions()
    for n, value, pointer in _stored(loop):
        if not any(_reads(o, pointer) for o in value.operands) and any(
            _reads(i, pointer) for i in instructions[:n]
        ):
            found.append(value)
    for phi, value in _fed_back(loop):
        if phi not in value.operands:
            found.append(value)
    return found


def _updates(loop: _Loop) -> list[ir.Instruction]:
    """Each instruction computing a float value the loop carries to its next
    iteration: stored to an address the loop does not change, from a load of the
    same address, or fed back into a phi of the header."""
    found = [v for _, v, pointer in _stored(loop) if any(_reads(o, pointer) for o in v.operands)]
    return found + [value for _, value in _fed_back(loop)]


def _stored(loop: _Loop) -> list[tuple[int, ir.Instruction, Any]]:
    """The float values the loop computes and stores to an address it does not change:
    (the store's position among the loop's instructions, the value, the address)."""
    found: list[tuple[int, ir.Instruction, Any]] = []
    for n, store in enumerate(loop.instructions()):
        if not isinstance(store, ir.StoreInstr):
            continue
        value, pointer = store.operands
        if (
            _is_float(value.type)
            and isinstance(value, ir.Instruction)
            and loop.defines(value)
            and _invariant(pointer, loop)
        ):
            found.append((n, value, pointer))
    return found


def _fed_back(loop: _Loop) -> list[tuple[ir.PhiInstr, ir.Instruction]]:
    """The float phis of the loop's header with each value the loop feeds back into one."""
    return [
        (phi, value)
        for phi in loop.header.instructions
        if isinstance(phi, ir.PhiInstr) and _is_float(phi.type)
        for value, block in phi.incomings
        if id(block) in loop.members and loop.defines(value)
    ]


def _is_float(t: ir.Type) -> bool:
    element = t.element if isinstance(t, ir.VectorType) else t
    return isinstance(element, (ir.HalfType, ir.FloatType, ir.DoubleType))


def _invariant(value: Any, loop: _Loop) -> bool:
    """Whether ``value`` is the same in each iteration of ``loop``: defined outside
    it, or computed inside it from such values by arithmetic (an address)."""
    if not loop.defines(value):
        return True
    return _pure(value) and all(_invariant(o, loop) for o in value.operands)


def _pure(value: Any) -> bool:
    """Whether ``value`` is an instruction whose result only its operands decide."""
    return isinstance(value, ir.Instruction) and (
        isinstance(value, (ir.GEPInstr, ir.CastInstr, ir.SelectInstr, ir.CompareInstr))
        or type(value) is ir.Instruction
    )


def _reads(value: Any, pointer: Any) -> bool:
    """Whether ``value`` is a load of the address ``pointer`` computes."""
    return isinstance(value, ir.LoadInstr) and _same(value.operands[0], pointer)


def _same(p: Any, q: Any) -> bool:
    """Whether ``p`` and ``q`` are the same value: one value, equal constants, or the
    same arithmetic of the same values (the lowering computes an address again for
    each access)."""
    if p is q:
        return True
    if isinstance(p, ir.Constant) and isinstance(q, ir.Constant):
        return p.type == q.type and p.constant == q.constant
    return (
        _pure(p)
        and type(p) is type(q)
        and p.opname == q.opname
        and p.type == q.type
        and getattr(p, "source_etype", None) == getattr(q, "source_etype", None)
        and getattr(p, "flags", None) == getattr(q, "flags", None)
        and len(p.operands) == len(q.operands)
        and all(_same(a, b) for a, b in zip(p.operands, q.operands, strict=True))
    )
