"""One point of a loop nest of the native loops (``_Point``): loads, the ops' scalar
bodies, stores, each value computed once; :mod:`tdsl.backend.llvm.loops_emit` builds the
nests around it."""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects import arith, memref
from xdsl.ir import Operation, SSAValue

from tdsl.backend.llvm.loops_common import Storage, _Code, _is_reduction, _mark_reassoc, loops_bug
from tdsl.backend.llvm.loops_plan import _GroupPlan
from tdsl.dialects.kernel_plan import Dims, carry_dims
from tdsl.dialects.structured import (
    ReductionOp,
    Scan,
    constant_value,
    convert_scalar,
    element_body,
    element_of,
    element_type,
    reduction_of,
    structured,
)


class _Point:
    """One point of a loop nest: loads, the scalar bodies, stores; each value once."""

    def __init__(
        self,
        group: _GroupPlan,
        code: _Code,
        coords: dict[int, SSAValue],
        starts: dict[int, SSAValue],
        storage: dict[SSAValue, Storage],
        carries: Mapping[Operation, Storage] | None = None,
    ) -> None:
        self.group = group
        self.code = code
        self.coords = coords
        self.starts = starts
        self.storage = storage
        self.carries: Mapping[Operation, Storage] = carries or {}
        self.memo: dict[tuple[SSAValue, Dims], SSAValue] = {}
        self._zero: SSAValue | None = None

    def indices(
        self, dims: Dims, tiled: bool, origin: tuple[tuple[int, SSAValue], ...] = ()
    ) -> list[SSAValue]:
        out: list[SSAValue] = []
        origins = dict(origin)
        for d in dims:
            if d is None:
                if self._zero is None:
                    self._zero = self.code.index(0)
                out.append(self._zero)
            elif d in origins:
                out.append(self.code.insert(arith.SubiOp(self.coords[d], origins[d])))
            elif tiled and d in self.starts:
                out.append(self.code.insert(arith.SubiOp(self.coords[d], self.starts[d])))
            else:
                out.append(self.coords[d])
        return out

    def load(self, where: Storage, dims: Dims) -> SSAValue:
        indices = self.indices(dims, where.tiled, where.origin)
        if where.axes:
            indices = [indices[k] for k in where.axes]
        return self.code.insert(memref.LoadOp.get(where.ref, indices))

    def store(self, value: SSAValue, where: Storage, dims: Dims) -> None:
        indices = self.indices(dims, where.tiled, where.origin)
        if where.axes:
            indices = [indices[k] for k in where.axes]
        self.code.b.insert(memref.StoreOp.get(value, where.ref, indices))

    def value(self, v: SSAValue, dims: Dims) -> SSAValue:
        """``v`` at this point, read along ``dims``.

        Computed operands first, in operand order, depth first, with an explicit
        stack: a chain of thousands of element-wise ops is as deep as it is long,
        and no Python recursion may depend on the program's size."""
        found = self.memo.get((v, dims))
        if found is not None:
            return found
        body = self.group.body
        stack: list[tuple[SSAValue, Dims, bool]] = [(v, dims, False)]
        while stack:
            w, wdims, ready = stack.pop()
            if (w, wdims) in self.memo:
                continue
            p = self._computed_here(w)
            if p is not None and not ready:
                stack.append((w, wdims, True))
                for i in reversed(range(len(p.operands))):
                    key = (p.operands[i], body.reads[(p, i)])
                    if key not in self.memo:
                        stack.append((*key, False))
                continue
            self.memo[(w, wdims)] = self._value_here(w, wdims)
        return self.memo[(v, dims)]

    def _computed_here(self, v: SSAValue) -> Operation | None:
        """The op whose scalar body computes ``v`` at this point from its operands'
        values; None where ``v`` is a constant or is loaded from storage."""
        body = self.group.body
        p = body.producer(v)
        if v in body.constants or p is None or v in self.storage:
            return None
        return p

    def _value_here(self, v: SSAValue, dims: Dims) -> SSAValue:
        """``v`` read along ``dims``, its operands' values (if computed) in the memo."""
        group, body = self.group, self.group.body
        p = body.producer(v)
        owner = v.owner
        if v in body.constants:
            data = constant_value(owner) if isinstance(owner, Operation) else None
            if data is None or data.size != 1:
                raise loops_bug(
                    "a constant of more than one element inside a group (tdsl-tile hoists them)",
                    owner if isinstance(owner, Operation) else None,
                )
            # (.item(): an integer exactly, beyond 2**53 too; float() rounded it)
            return self.code.scalar(data.reshape(()).item(), element_type(v))
        if p is None:
            return self.load(self.storage[v], dims)
        if v in group.staged and v in self.storage:  # staged in an output, maybe widened
            return convert_scalar(self.code.b, self.load(self.storage[v], dims), element_type(v))
        if v in self.storage:  # a BLAS result, a stored value, or a reduction's accumulator
            raw = self.load(self.storage[v], dims)
            if self.storage[v].final or p in group.blas or p in group.gemm or not _is_reduction(p):
                return raw
            more = [self.load(w, dims) for w in group.more_storage.get(p, ())]
            return reduction_of(p).scalar_finalize_state(self.code.b, [raw, *more], body.count(p))
        s = structured(p)
        if s is None:
            raise loops_bug(f"'{p.name}' does not implement the structured-op interface", p)
        args = [self.memo[(w, body.reads[(p, i)])] for i, w in enumerate(p.operands)]
        if p in self.carries:  # a scan: the next running value of this row
            if not isinstance(p, Scan):
                raise loops_bug(f"'{p.name}' carries running values but is no scan", p)
            cdims = carry_dims(group.body, p)
            carry = self.load(self.carries[p], cdims)
            running = p.scalar_scan(self.code.b, carry, args)
            self.store(running, self.carries[p], cdims)
            self.memo[(v, body.dims[v])] = running
            return running
        if isinstance(p, Scan):  # along an axis of extent 1: the identity and the element
            loop = p.carried_loops()[0]
            start = self.code.scalar(loop.start, element_of(loop.dtype))
            running = p.scalar_scan(self.code.b, start, args)
            self.memo[(v, body.dims[v])] = running
            return running
        results = element_body(p, self.code.b, args)
        for r, x in zip(p.results, results, strict=True):
            self.memo[(r, body.dims[r])] = x
        return results[list(p.results).index(v)]  # pyright: ignore[reportArgumentType]

    def accumulate(self, op: Operation, where: Storage) -> None:
        body = self.group.body
        args = [self.value(w, body.reads[(op, i)]) for i, w in enumerate(op.operands)]
        dims = body.dims[op.results[0]]
        places = [where, *self.group.more_storage.get(op, ())]
        state = [self.load(w, dims) for w in places]
        combined = reduction_of(op).scalar_accumulate(self.code.b, state, args)
        if isinstance(op, ReductionOp) and op.REORDERS:
            for c in combined:
                _mark_reassoc(c)
        for c, w in zip(combined, places, strict=True):
            self.store(c, w, dims)
