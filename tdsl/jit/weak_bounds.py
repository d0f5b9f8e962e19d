"""The range a weak integer argument must lie in (:func:`int_bounds`), from the IR of
its uses: NumPy 2 raises ``OverflowError`` for a Python int beyond the integer dtype it
meets, and computes Python's arithmetic on it (``s + 1``) exactly, where tdsl computes
it in int64; a call checks the argument against the range
(:attr:`~tdsl.jit.compiled.ArgSpec.bounds`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tdsl.jit.values import INT64_MAX, INT64_MIN


def int_bounds(arg: Any) -> tuple[int, int] | None:
    """The range a weak integer argument must lie in: what every integer type it is
    converted to (``tensordsl.cast`` of it to ``i32``, ``ui64``) holds, where NumPy 2
    checks a Python int (-1 does not fit uint64 either), and what its arithmetic with
    literals needs (:func:`_arithmetic_steps`); None when that is int64's.

    A conversion that only ``where`` branches read is not checked: ``np.where`` wraps a
    Python int to the branch's dtype (NumPy 2.4: ``np.where(c, u8, 300)`` holds 44), any
    int in [-2**63, 2**64).  When every use is such, that is the range (above int64's,
    the call passes the same low bits as an int64: :data:`WRAPPED_HIGH`).

    The results of the arithmetic are bounded first, from the last back to ``arg``,
    without recursion: a chain of 600 ``+ 1`` is as deep as the program."""
    from tdsl.dialects.structured import is_int

    if not is_int(arg):  # a weak float: a Python int passed for it
        return (INT64_MIN, INT64_MAX) if _meets_integers(arg) else None
    bounds: dict[Any, tuple[int, int] | None] = {}
    steps: dict[Any, list[tuple[str, int, int, Any]]] = {}
    stack = [arg]
    while stack:
        value = stack[-1]
        if value not in steps:  # (first visit: its results go first)
            steps[value] = _arithmetic_steps(value)
            stack.extend(r for *_, r in steps[value] if r not in steps)
            continue
        stack.pop()
        if value not in bounds:
            bounds[value] = _own_bounds(value, steps[value], bounds)
    return bounds[arg]


def _own_bounds(
    value: Any, steps: list[tuple[str, int, int, Any]], bounds: dict[Any, tuple[int, int] | None]
) -> tuple[int, int] | None:
    """:func:`int_bounds` of ``value``, whose arithmetic ``steps`` lead to results whose
    ``bounds`` are known."""
    from tdsl.dialects import tensordsl as td
    from tdsl.dialects.structured import is_int

    uses = list(value.uses)
    casts = [
        u.operation
        for u in uses
        if isinstance(u.operation, td.CastOp) and is_int(u.operation.result.type)
    ]
    checked = [cast for cast in casts if not _read_by_where_branches(cast.result)]
    # (a `where` branch of int64 itself reads it without a cast: wrapped as well)
    branches = [u for u in uses if isinstance(u.operation, td.WhereOp) and u.index > 0]
    if uses and len(casts) + len(branches) == len(uses) and not checked:
        return (INT64_MIN, WRAPPED_HIGH)
    ranges = [_range(cast) for cast in checked] + _clip_bound_ranges(value)
    # (a result that meets a float, or is compared, must be exact: int64's range; one
    # that only uint64 or `where` branches read may pass int64 by its low bits, as the
    # argument itself does: the int64 sum's bits are the exact sum's)
    for kind, c, index, result in steps:
        low, high = bounds[result] or (INT64_MIN, INT64_MAX)
        ranges.append(_inverse(kind, c, index, low, high))
    low = max([r[0] for r in ranges if r is not None] + [INT64_MIN])
    high = min([r[1] for r in ranges if r is not None] + [INT64_MAX])
    return None if (low, high) == (INT64_MIN, INT64_MAX) else (low, high)


def _range(cast: Any) -> tuple[int, int]:
    """The ints the integer type a ``tensordsl.cast`` converts to holds."""
    from tdsl.dialects.structured import numpy_dtype

    info = np.iinfo(numpy_dtype(cast.result.type))
    return (int(info.min), int(info.max))


def _clip_bound_ranges(arg: Any) -> list[tuple[int, int]]:
    """The ranges a weak integer ``arg`` must lie in as ``clip``'s bound of an integer
    array (the frontend's ``clip_operands``): clamped to the dtype's end on its own side
    first (``maximum(s, 0)`` for a uint8 lower bound), so that only the other side is
    checked, as NumPy 2 checks it."""
    from tdsl.dialects import tensordsl as td
    from tdsl.dialects.structured import is_int

    ranges: list[tuple[int, int]] = []
    for use in arg.uses:
        clamp = use.operation
        if not isinstance(clamp, td.MaximumOp | td.MinimumOp):
            continue
        end = _constant_operand(clamp, use.index)
        if end is None:
            continue
        for inner in clamp.results[0].uses:
            cast = inner.operation
            if isinstance(cast, td.CastOp) and is_int(cast.result.type):
                low, high = _range(cast)
                # (only a clamp to within the type lets the other side go unchecked)
                if isinstance(clamp, td.MaximumOp) and end >= low:
                    ranges.append((INT64_MIN, high))
                elif isinstance(clamp, td.MinimumOp) and end <= high:
                    ranges.append((low, INT64_MAX))
    return ranges


def _arithmetic_steps(arg: Any) -> list[tuple[str, int, int, Any]]:
    """The int64 arithmetic the frontend computes on a weak integer ``arg`` with literals
    (``s + 1``, ``2 - s``, ``s * 3``, ``-s``, ``~s``, ``s // 4``, ``s >> 2``, ``s << 2``,
    ``s * s``: ``s ** 2``), each as (kind, constant, ``arg``'s operand index, result):
    for it to be Python's, which is exact, ``arg`` must lie where each result's own range
    maps back to (:func:`_inverse`).  A result beyond int64 wrapped (``a * (s + 1)`` of a
    float ``a`` flipped its sign at ``s = 2**63 - 1``), and one beyond the integer dtype
    it met was not NumPy's OverflowError (``u8 + s // 2`` at ``s = 600``; both found by
    fuzzing).  Arithmetic of two weak integers, ``&``, ``|``, ``^`` and ``%`` are not
    bounded so."""
    from tdsl.dialects import tensordsl as td

    steps: list[tuple[str, int, int, Any]] = []
    seen: set[Any] = set()  # (s * s uses s twice: one step)
    for use in arg.uses:
        op = use.operation
        if op in seen or len(op.results) != 1 or op.results[0].type != arg.type:
            continue  # (a return, a tensor's op)
        seen.add(op)
        c = _constant_operand(op, use.index)
        if isinstance(op, td.LeftShiftOp | td.RightShiftOp):
            if use.index != 0 or c is None or c < 0:
                continue  # (s << k is s * 2**k; s >> k is s // 2**k: k >= 64 too)
            kind, c = ("mul" if isinstance(op, td.LeftShiftOp) else "floordiv"), 2**c
        elif isinstance(op, td.MulOp) and op.operands[0] is op.operands[1]:
            kind = "square"
        elif isinstance(op, td.NegOp | td.InvertOp):
            kind = "neg" if isinstance(op, td.NegOp) else "invert"
        elif c is not None and isinstance(op, td.AddOp | td.SubOp | td.MulOp):
            kind = {td.AddOp: "add", td.SubOp: "sub", td.MulOp: "mul"}[type(op)]
        elif c and isinstance(op, td.FloorDivideOp) and use.index == 0:
            kind = "floordiv"
        else:
            continue
        steps.append((kind, c or 0, use.index, op.results[0]))
    return steps


def _inverse(kind: str, c: int, index: int, low: int, high: int) -> tuple[int, int] | None:
    """The ints ``s`` whose result by ``kind`` (with the constant ``c``, ``s`` its operand
    ``index``) lies in ``[low, high]``: an interval (its bound on one side only where
    that is all that holds, ``s * s``), or None for any."""
    if kind == "neg":
        return (-high, -low)
    if kind == "invert":  # (~s is -s - 1)
        return (-high - 1, -low - 1)
    if kind == "add":
        return (low - c, high - c)
    if kind == "sub":
        return (low + c, high + c) if index == 0 else (c - high, c - low)
    if kind == "square":  # (s * s <= high; above low whenever low <= 0, as here)
        root = math.isqrt(high) if high >= 0 else -1
        return (-root, root) if root >= 0 else (1, 0)
    if kind == "floordiv":  # (s // c in [low, high])
        if c > 0:
            return (low * c, high * c + c - 1)
        return (high * c + c + 1, low * c)
    if c == 0:  # (s * 0 is 0 whatever s is: any s, or none where 0 is out of range)
        return None if low <= 0 <= high else (1, 0)
    ends = (low, high) if c > 0 else (high, low)  # (s * c: divided by c, flipped if c < 0)
    return (-(-ends[0] // c), ends[1] // c)


def _constant_operand(op: Any, index: int) -> int | None:
    """The integer constant that is ``op``'s other operand than ``index``, if any."""
    from tdsl.dialects import tensordsl as td

    if len(op.operands) != 2:
        return None
    constant = op.operands[1 - index].owner
    if not isinstance(constant, td.ConstantOp):
        return None
    value = td.dense_to_numpy(constant.value)
    return int(value.reshape(())) if value.size == 1 else None


WRAPPED_HIGH = 2**64 - 1
"""The upper bound of a weak integer that only ``where`` branches read (:func:`int_bounds`):
a Python int above int64's range is passed as the int64 of the same bits."""


def _meets_integers(arg: Any) -> bool:
    """Whether a weak float argument meets an integer or bool tensor (one the frontend
    cast to float to meet it), itself or through arithmetic with literals alone, not as
    a ``where`` condition: there NumPy 2 raises ``OverflowError`` for a Python int beyond
    int64 (``u8 + 2**70``, ``u8 + s * 2``; or compares it exactly), which tdsl, taking it
    as a float, would not."""
    from tdsl.dialects import tensordsl as td
    from tdsl.dialects.structured import is_bool, is_int

    weak, work = {arg}, [arg]
    while work:
        for use in work.pop().uses:
            op = use.operation
            if isinstance(op, td.WhereOp) and use.index == 0:
                continue
            others = [o for o in op.operands if o not in weak]
            for o in others:
                source = o.owner.input if isinstance(o.owner, td.CastOp) else None
                if source is not None and (is_int(source) or is_bool(source)):
                    return True
            if all(isinstance(o.owner, td.ConstantOp) for o in others):
                fresh = [r for r in op.results if r not in weak]
                weak.update(fresh)
                work.extend(fresh)
    return False


def _read_by_where_branches(value: Any) -> bool:
    from tdsl.dialects import tensordsl as td

    uses = list(value.uses)
    return bool(uses) and all(
        isinstance(use.operation, td.WhereOp) and use.index in (1, 2) for use in uses
    )


__all__ = ["WRAPPED_HIGH", "int_bounds"]
