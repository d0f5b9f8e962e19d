"""Decomposing row-normalizing ops (``softmax``) for :mod:`tdsl.transforms.tile`.

:func:`decomposed_copy` copies a group's ops with each op that declares a
decomposition replaced by it (for the fusion analysis and the backends to
measure and run), and ``decompose_in_place`` rewrites one op of a
``kernel.fused`` body into its decomposition.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
)
from xdsl.rewriter import Rewriter

from tdsl.dialects.kernel import FusedOp
from tdsl.dialects.structured import (
    Decomposable,
    SweepDecomposable,
    checked_decomposition,
)


def decomposes(op: Operation, sweeps: bool = False) -> bool:
    """Whether ``op`` has a decomposition (with ``sweeps``, one into sweeps too:
    :class:`~tdsl.dialects.structured.SweepDecomposable`)."""
    if isinstance(op, Decomposable):
        return op.decomposes()
    return sweeps and isinstance(op, SweepDecomposable) and op.decomposes_in_sweeps()


def any_decomposes(ops: Sequence[Operation], sweeps: Collection[Operation] = ()) -> bool:
    return any(decomposes(op, op in sweeps) for op in ops)


def decomposed_copy(
    ops: Sequence[Operation],
    outputs: Sequence[SSAValue],
    inputs: Sequence[SSAValue] = (),
    copied: dict[SSAValue, SSAValue] | None = None,
    *,
    with_users: bool = False,
    sweeps: Collection[Operation] = (),
) -> tuple[list[Operation], list[SSAValue], list[SSAValue]] | None:
    """``ops`` copied into a detached block with every op that has a decomposition
    replaced by it: (ops, outputs, inputs) of the copy, or None when nothing decomposes
    (with ``with_users``, None also when no op decomposes with its user).

    ``with_users`` first replaces each op that decomposes with its one user (``softmax``
    feeding a ``matmul``: ``softmax_matmul``, flash attention's online softmax) by the op
    replacing both: ``tdsl-tile`` weighs that form and the plain one (the native loops,
    which take key rows whole and call BLAS for the ``matmul``, and Dask take the plain
    one).  The ops of ``sweeps`` (of ``ops``) that decompose into sweeps of plain
    reductions decompose too (``logsumexp``, where the native loops run it so).

    The copy's inputs are block arguments standing for ``inputs`` (in that
    order), then for the other values ``ops`` read from outside.  ``copied``, when
    given, receives each value of ``ops`` that is not decomposed, to its copy.  The IR
    is not touched: ``tdsl-fuse`` sizes groups this way, and ``tdsl-tile`` builds the
    ``kernel.tile`` of a decomposed part from the copy.
    """
    if not any_decomposes(ops, sweeps):
        return None
    members = set(ops)
    block = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    for v in [*inputs, *(v for op in ops for v in op.operands if v.owner not in members)]:
        if v not in mapping:
            mapping[v] = block.insert_arg(v.type, len(block.args))
            mapping[v].name_hint = v.name_hint
    swept: set[Operation] = set()  # (the copies of the ops of sweeps)
    for op in ops:
        block.add_op(new := op.clone(value_mapper=mapping))
        if op in sweeps:
            swept.add(new)
    copied_outputs = [mapping[v] for v in outputs]
    replaced = _decompose_with_users(block, copied_outputs) if with_users else {}
    if with_users and not replaced:
        return None
    copied_outputs = [replaced.get(v, v) for v in copied_outputs]
    if copied is not None:
        copied.update(
            (r, replaced.get(mapping[r], mapping[r]))
            for op in ops
            if not decomposes(op, op in sweeps)
            for r in op.results
        )
    for op in list(block.ops):
        decomposed = checked_decomposition(op, op in swept)
        if decomposed is not None:
            new_ops, value = decomposed
            for new in new_ops:
                new.location = op.location
            Rewriter.replace_op(op, new_ops, [value])
            copied_outputs = [value if v is op.results[0] else v for v in copied_outputs]
    return list(block.ops), copied_outputs, list(block.args)


def decomposed_forms(
    ops: Sequence[Operation], outputs: Sequence[SSAValue], inputs: Sequence[SSAValue] = ()
) -> list[tuple[list[Operation], list[SSAValue], list[SSAValue]]]:
    """The decomposed copies of ``ops`` ``tdsl-tile`` weighs (each as
    :func:`decomposed_copy` gives it), first the one where a ``softmax`` decomposes with
    the ``matmul`` it feeds (flash attention's online softmax), if any, then the plain one."""
    forms = (decomposed_copy(ops, outputs, inputs, with_users=w) for w in (True, False))
    return [form for form in forms if form is not None]


def _decompose_with_users(block: Block, outputs: Sequence[SSAValue]) -> dict[SSAValue, SSAValue]:
    """Replace each op of ``block`` that decomposes with its one user (``softmax`` with the
    ``matmul`` it feeds, :meth:`~tdsl.dialects.op_interfaces.Decomposable.decompose_with_user`)
    by the op replacing both, unless the group yields the op's own result: the user's
    results, to the new op's."""
    replaced: dict[SSAValue, SSAValue] = {}
    for op in list(block.ops):
        if not isinstance(op, Decomposable) or any(r in outputs for r in op.results):
            continue
        fused = op.decompose_with_user()
        if fused is None:
            continue
        user, new = fused
        new.location = user.location
        replaced.update(zip(user.results, new.results, strict=True))
        Rewriter.replace_op(user, new)
        Rewriter.erase_op(op)
    return replaced


def decompose_in_place(op: object, fused: FusedOp, rewriter: PatternRewriter) -> bool:
    """Replace ``op`` (of ``fused``'s body) by its decomposition; False when it has none."""
    if not isinstance(op, Operation) or op.parent_block() is not fused.body.block:
        return False
    decomposed = checked_decomposition(op)
    if decomposed is None:
        return False
    new_ops, value = decomposed
    for new in new_ops:
        new.location = op.location
    rewriter.replace(op, new_ops, [value])
    return True
