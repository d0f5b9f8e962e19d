"""Buffer assignment for a lowered group body.

Every computed value (a ``temp`` :class:`~.program.Var`) gets a *slot*: a
scratch buffer, allocated once per call with the shape of a full tile and
reused across tiles, or the slice of a group output it is finally stored in.

- A value the body yields is computed straight into its output slice; so is,
  walking back, the chain of element-wise operands that die where the next
  link is computed (``relu(a) + b*c - d`` writes ``relu(a)`` into the output
  and updates it in place).  ``np.matmul(x, w, out=out)`` then needs no
  scratch at all when its epilogue is element-wise.
- An element-wise op overwrites an operand that dies there and has its exact
  shape and dtype (NumPy handles exact overlap without a copy).
- Otherwise the value takes a dead scratch buffer of its layout and dtype,
  the most recently freed first (it is warm in cache), or a new one.

Only values of one layout share a buffer, so a buffer never needs reshaping
and a remainder tile uses a prefix of it (``buf[:n0]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tdsl.lowering.numpy_emit.layout import Layout, Tiling
from tdsl.lowering.numpy_emit.program import Instr, Program, Var


@dataclass(frozen=True)
class Buffer:
    """A scratch buffer shaped like a full tile of ``layout``."""

    index: int
    layout: Layout
    dtype: np.dtype[np.floating]


@dataclass(frozen=True)
class OutSlot:
    """The current tile's slice of group output ``index``."""

    index: int


Slot = Buffer | OutSlot


@dataclass
class Plan:
    """Where each computed value lives, and the outputs that need a final copy."""

    slots: dict[Var, Slot] = field(default_factory=dict[Var, Slot])
    buffers: list[Buffer] = field(default_factory=list[Buffer])
    copies: list[tuple[int, Var]] = field(default_factory=list[tuple[int, Var]])

    def scratch_elements(self, tiling: Tiling) -> int:
        """Elements of scratch one call (one thread) allocates with this tiling."""
        return sum(tiling.full_elements(b.layout) for b in self.buffers)


def _last_uses(program: Program, copies_at_end: Sequence[Var]) -> dict[Var, int]:
    last: dict[Var, int] = {}

    def use(v: Var, i: int) -> None:
        r = v.root()
        if r.kind == "temp":
            last[r] = max(last.get(r, -1), i)

    for i, ins in enumerate(program.instrs):
        for p in ins.operands:
            use(p, i)
        last.setdefault(ins.result, i)
    for v in copies_at_end:
        use(v, len(program.instrs))
    return last


def _can_overwrite(ins: Instr, i: int, p: Var, result: Var, last: dict[Var, int]) -> bool:
    """Whether ``ins`` (at index ``i``) may write its result over operand ``p``."""
    return (
        ins.elementwise
        and p.kind == "temp"
        and p.base is None
        and last[p] == i
        and p.layout == result.layout
        and p.dtype == result.dtype
        # another operand viewing p differently (p.T) would overlap inexactly
        and all(q is p or q.root() is not p for q in ins.operands)
    )


def plan_buffers(
    program: Program, out_layouts: Sequence[Layout], out_dtypes: Sequence[np.dtype[np.floating]]
) -> Plan:
    """Assign a slot to every computed value of ``program``."""
    plan = Plan()
    direct: dict[Var, int] = {}
    for k, v in enumerate(program.yields):
        if (
            v.kind == "temp"
            and v.base is None
            and v not in direct
            and v.layout == out_layouts[k]
            and v.dtype == out_dtypes[k]
        ):
            direct[v] = k
        else:
            plan.copies.append((k, v))
    last = _last_uses(program, [v for _, v in plan.copies] + list(direct))

    # walk each output's element-wise chain back: all of it can live in the output
    hints = dict(direct)
    producer = {ins.result: (i, ins) for i, ins in enumerate(program.instrs)}
    for v, k in direct.items():
        cur = v
        while True:
            i, ins = producer[cur]
            nxt = next(
                (
                    p
                    for p in ins.operands
                    if p not in hints and p is not cur and _can_overwrite(ins, i, p, cur, last)
                ),
                None,
            )
            if nxt is None:
                break
            hints[nxt] = k
            cur = nxt

    free: list[Buffer] = []
    for i, ins in enumerate(program.instrs):
        r = ins.result
        slot: Slot | None = None
        if r in hints:
            slot = OutSlot(hints[r])
        else:
            for p in ins.operands:
                ps = plan.slots.get(p)
                if isinstance(ps, Buffer) and _can_overwrite(ins, i, p, r, last):
                    slot = ps
                    break
        if slot is None:
            match = [b for b in free if b.layout == r.layout and b.dtype == r.dtype]
            if match:
                slot = match[-1]
                free.remove(slot)
            else:
                slot = Buffer(len(plan.buffers), r.layout, r.dtype)
                plan.buffers.append(slot)
        plan.slots[r] = slot
        dying = {p.root() for p in ins.operands if p.root().kind == "temp"}
        if last[r] == i:
            dying.add(r)
        for p in dying:
            ps = plan.slots[p]
            if last[p] == i and isinstance(ps, Buffer) and (p is r or ps != slot):
                free.append(ps)
    return plan
