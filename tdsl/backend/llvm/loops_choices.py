"""Two choices of the native loops' plan (:class:`~tdsl.backend.llvm.loops_plan._GroupPlan`):
which matmuls a BLAS call computes (:func:`blas_output`), and which values a sweep
also stores in an output's slice for a later sweep to read back (:func:`output_staging`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue

from tdsl.backend.llvm.loops_common import (  # pyright: ignore[reportPrivateUsage]
    _dim_set,  # pyright: ignore[reportPrivateUsage]
    _holds_exactly,  # pyright: ignore[reportPrivateUsage]
    _is_contraction,  # pyright: ignore[reportPrivateUsage]
    _is_reduction,  # pyright: ignore[reportPrivateUsage]
)
from tdsl.dialects.kernel_plan import GroupBody
from tdsl.dialects.structured import element_type, tensor_shape

if TYPE_CHECKING:
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]


def output_staging(plan: _GroupPlan) -> dict[SSAValue, int]:
    """Element-wise values that a reduction reads in the sweep that computes them and
    that an output's element-wise chain reads in a later sweep (softmax's
    ``exp(x - max)``: summed, then divided by the sum): the first sweep also stores
    each in its output's slice, and the later one reads it back instead of computing
    it again.  Only where the sweeps of a row share hoisted loops (the row is still in
    cache), and only when nothing but that chain reads the value after its sweep.
    The output's element type must hold the value's exactly: the same, or a wider
    float (an f32 ``exp`` in an f64 result is stored widened and read back
    narrowed, which gives the same f32)."""
    body = plan.body
    staged: dict[SSAValue, int] = {}
    for p in body.ops:
        if _is_reduction(p) or p in plan.blas or len(p.results) != 1:
            continue
        v = p.results[0]
        if v in plan.stored:
            continue
        level = plan.level[p]
        readers = [u.operation for u in v.uses if u.operation in body.members]
        if not any(_is_reduction(r) and plan.level[r] == level for r in readers):
            continue
        point = _dim_set(body.dims[v])
        chain: set[SSAValue] = set()
        frontier = [v]
        ok = True
        while frontier and ok:
            w = frontier.pop()
            if w in chain:
                continue
            chain.add(w)
            for use in w.uses:
                user = use.operation
                if user not in body.members:
                    continue
                if _is_reduction(user):
                    # only v itself, and only in its own sweep
                    ok = w is v and plan.level[user] == level
                elif len(user.results) != 1 or _dim_set(body.dims[user.results[0]]) != point:
                    ok = False
                else:
                    frontier.append(user.results[0])
                if not ok:
                    break
        if not ok:
            continue
        outputs = [k for k, w in enumerate(body.outputs) if w in chain]
        if len(outputs) != 1:
            continue
        k = outputs[0]
        q = body.producer(body.outputs[k])
        if (
            q is None
            or q is p
            or plan.level[q] <= level
            or body.outputs.count(body.outputs[k]) != 1
            or body.output_dims[k] != body.dims[v]
            or not _holds_exactly(element_type(body.outputs[k]), element_type(v))
            or k in plan.blas.values()
            or k in plan.in_output.values()
            or k in staged.values()
        ):
            continue
        staged[v] = k
    return staged


def blas_output(body: GroupBody, op: Operation) -> int | None:
    """The output a 2-D matmul on group inputs may write with BLAS, if any: the one
    output whose element-wise chain alone reads it, point by point, and that holds
    the matmul's element type."""
    if not _is_contraction(op):
        return None
    a, b = op.operands
    if len(tensor_shape(a)) != 2 or len(tensor_shape(b)) != 2:
        return None
    if body.producer(a) is not None or body.producer(b) is not None:
        return None
    if str(element_type(op.results[0])) not in ("f32", "f64"):
        return None
    result = op.results[0]
    point = _dim_set(body.dims[result])
    seen: set[SSAValue] = set()
    frontier = [result]
    while frontier:
        v = frontier.pop()
        if v in seen:
            continue
        seen.add(v)
        if _dim_set(body.dims[v]) != point:
            return None  # read along other dims (broadcast, reduced): not in place
        for use in v.uses:
            user = use.operation
            if user not in body.members:
                continue
            if _is_reduction(user) or len(user.results) != 1:
                return None
            frontier.append(user.results[0])
    outputs = [k for k, v in enumerate(body.outputs) if v in seen]
    if (
        len(outputs) != 1
        or body.output_dims[outputs[0]] != body.dims[result]
        or element_type(body.outputs[outputs[0]]) != element_type(result)
    ):
        return None  # (an f32 matmul whose chain is cast to an f64 output: not in place)
    return outputs[0]
