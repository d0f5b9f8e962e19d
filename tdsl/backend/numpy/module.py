"""Code for a whole module: one Python function per ``func.func``.

A function body is a sequence of groups.  ``kernel.fused`` and ``kernel.tile``
ops are groups of their own; each maximal run of top-level structured ops
(unfused IR) is emitted like a whole-array fused group.

The contract of a generated function ``f(a, b, ..., *, out=None)``:

- The positional parameters are the ``func.func``'s arguments, in order,
  named after the IR block arguments (renamed where a name is not a Python
  identifier or is taken: ``np``, ``out``).  They are arrays of exactly the
  argument types' shapes and dtypes; nothing is checked.  Inputs are never
  written.
- ``out`` is keyword-only.  ``None``: every result is a fresh array.
  Otherwise a sequence with one array per result, each of exactly that
  result's shape and dtype (any strides); result ``i`` is written into
  ``out[i]``.  The group computing a result writes it there directly, with no
  extra copy; a result that is an argument, a constant or a view of one, or a
  value returned a second time, is copied in with ``np.copyto``.  The out
  arrays must not share memory with the inputs or with each other (nothing
  checks this: the JIT does).
- The function returns its one result, or a tuple of its results (``None``
  for none): the fresh arrays, or with ``out`` the arrays ``out[i]``
  themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Operation, SSAValue

from tdsl.backend.numpy.group import GroupSource, ModuleState, emit_group
from tdsl.backend.numpy.source import (
    Writer,
    array_expr,
    display,
    identifier,
    index_text,
    shape_expr,
)
from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import FusedOp, TileOp
from tdsl.dialects.kernel_plan import GroupBody, PlanError
from tdsl.dialects.structured import is_constant, structured
from tdsl.dtypes import dtype_expr
from tdsl.errors import TdslIRError
from tdsl.ir_text import Names
from tdsl.transforms.locations import op_location

OUT = "out"
"""The keyword-only parameter of every generated function that takes the result arrays."""

_TAKE = '''\
def _take(a, indices, axis, where="", out=None):
    """np.take(a, indices, axis), into ``out`` if given; an index out of range is a
    TdslIndexError (at ``where``, the gather's ``file:line:col``)."""
    n = a.shape[axis]
    bad = (indices < -n) | (indices >= n)
    if bad.any():
        from tdsl.errors import index_error

        raise index_error(int(indices[bad].flat[0]), axis, n, where)
    # (checked: "wrap" takes each index as "raise" would, and writes out unbuffered)
    taken = np.take(a, indices, axis=axis, out=out, mode="wrap")
    return np.asarray(taken)  # (a 0-d array, not NumPy's scalar)
'''
"""The gather of the numpy target (a module-level helper)."""

_PARALLEL = '''\
_POOL = []
_POOL_LOCK = threading.Lock()


def _parallel(fn, n, step, nthreads, *args):
    """Run fn(lo, hi, *args) on nthreads chunks of range(n) cut at multiples of step."""
    if not _POOL:
        with _POOL_LOCK:
            if not _POOL:
                _POOL.append(
                    concurrent.futures.ThreadPoolExecutor(_THREADS - 1, thread_name_prefix="tdsl")
                )
    tiles = -(-n // step)
    chunk = -(-tiles // nthreads) * step
    futures = [_POOL[0].submit(fn, lo, min(lo + chunk, n), *args) for lo in range(chunk, n, chunk)]
    try:
        fn(0, min(chunk, n), *args)
    finally:
        concurrent.futures.wait(futures)
    for f in futures:
        f.result()
'''


@dataclass
class _Value:
    """A function-level value: its Python name, and whether it is a fresh array."""

    expr: str
    fresh: bool


def whole_body(
    ops: Sequence[Operation], outputs: Sequence[SSAValue], inputs: Sequence[SSAValue]
) -> GroupBody:
    """A group computed on whole arrays: no iteration space, every dim taken whole.

    How ``kernel.fused`` bodies and runs of top-level ops run: as one tile.
    """
    dims: dict[SSAValue, tuple[int | None, ...]] = {}
    for v in [*inputs, *(r for op in ops for r in op.results)]:
        dims[v] = (None,) * len(td.tensor_shape(v))
    reads: dict[tuple[Operation, int], tuple[int | None, ...]] = {}
    for op in ops:
        for i, v in enumerate(op.operands):
            dims.setdefault(v, (None,) * len(td.tensor_shape(v)))
            reads[(op, i)] = dims[v]
        if not is_constant(op) and structured(op) is None:
            raise TdslIRError(f"numpy target: cannot emit '{op.name}' in a group", op=op)
    constants = frozenset(r for op in ops if is_constant(op) for r in op.results)
    return GroupBody(
        extents=(),
        kinds=(),
        ops=tuple(op for op in ops if not is_constant(op)),
        dims=dims,
        reads=reads,
        outputs=tuple(outputs),
        output_dims=tuple((None,) * len(td.tensor_shape(v)) for v in outputs),
        constants=constants,
    )


def _group_label(op: FusedOp | TileOp, name: str) -> str:
    if isinstance(op, TileOp):
        kinds = ", ".join(str(k) for k in op.iterator_types)
        return (
            f"group {name}: kernel.tile space {list(op.space_value)} ({kinds}) tiles "
            f"{list(op.tiles_value)} scratch {op.scratch_value}"
        )
    budget = f" budget {op.budget_value}" if op.budget_value is not None else ""
    return f"group {name}: kernel.fused{budget}"


class _FunctionEmitter:
    def __init__(self, fn: func.FuncOp, state: ModuleState, pyname: str) -> None:
        self.fn = fn
        self.state = state
        self.pyname = pyname
        self.names = Names()
        self.names.reserve("np", OUT)
        self.values: dict[SSAValue, _Value] = {}
        # each returned value -> its first position among the results (its out array)
        self.result_index: dict[SSAValue, int] = {}
        ret = fn.body.block.last_op
        if isinstance(ret, func.ReturnOp):
            for i, v in enumerate(ret.arguments):
                self.result_index.setdefault(v, i)
        self.w = Writer()
        self.groups = 0
        self.joins: dict[td.ConcatenateOp, str] = {}
        """Each join's buffer (made at the start of the function)."""
        self.into: dict[SSAValue, str] = {}
        """Group results that a join alone reads: written into the join's buffer (the
        slice, as a NumPy expression, that the group takes as its output array)."""
        self.written: set[SSAValue] = set()
        """The values of :attr:`into` their groups wrote (not bound as a view)."""

    def value_name(self, value: SSAValue) -> str:
        if value.name_hint is None:
            return self.names.numbered("v")
        return self.names.fresh(identifier(value.name_hint, "v"))

    def run(self) -> Writer:
        block = self.fn.body.block
        params: list[str] = []
        for i, arg in enumerate(block.args):
            name = self.names.fresh(identifier(arg.name_hint, f"arg{i}"))
            params.append(name)
            self.values[arg] = _Value(name, False)
        self.w.line(f"def {self.pyname}({', '.join([*params, f'*, {OUT}=None'])}):")
        with self.w.indent():
            self.w.line(f'"""func.func @{display(self.fn.sym_name.data)}."""')
            self.join_buffers()
            pending: list[Operation] = []
            for op in block.ops:
                if isinstance(op, FusedOp | TileOp):
                    self.flush(pending)
                    self.group(op)
                elif isinstance(op, func.ReturnOp):
                    self.flush(pending)
                    self.ret(op)
                elif isinstance(op, td.SliceOp | td.ReshapeOp):
                    self.flush(pending)
                    self.view(op)
                elif isinstance(op, td.ConcatenateOp):
                    self.flush(pending)
                    self.join(op)
                elif isinstance(op, td.TakeOp):
                    self.flush(pending)
                    self.take(op)
                elif structured(op) is not None or is_constant(op):
                    pending.append(op)
                else:
                    raise TdslIRError(f"numpy target: cannot emit '{op.name}' in a function", op=op)
        return self.w

    def view(self, op: td.SliceOp | td.ReshapeOp) -> None:
        """A window or a reshape of a value held whole: NumPy's view of it (a reshape
        copies where the layout allows no view), bound to a name."""
        name = self.value_name(op.result)
        source = self.values[op.input].expr
        if isinstance(op, td.SliceOp):
            self.w.line(f"{name} = {source}{op.index_text()}")
        else:
            self.w.line(f"{name} = np.reshape({source}, {td.tensor_shape(op.result)})")
        self.values[op.result] = _Value(name, False)

    def take(self, op: td.TakeOp) -> None:
        """A gather: NumPy's ``take``, an index out of range a ``TdslIndexError``."""
        name = self.value_name(op.result)
        helper = self.state.consts.function("_take", _TAKE)
        source, indices = (self.values[v].expr for v in (op.input, op.indices))
        where = op_location(op)
        at = f", {'' if where is None else str(where)!r}"
        if op.result in self.result_index:  # (a result: into its `out` array, if given)
            at += f", None if {OUT} is None else {OUT}[{self.result_index[op.result]}]"
        self.w.line(f"{name} = {helper}({source}, {indices}, {op.axis_value}{at})")
        self.values[op.result] = _Value(name, True)

    def join_buffers(self) -> None:
        """Make each join's buffer first (its result's ``out`` array when it is returned),
        so that the groups whose results it alone reads write them into it."""
        for op in self.fn.body.block.ops:
            if not isinstance(op, td.ConcatenateOp):
                continue
            name = self.value_name(op.result)
            shape = td.tensor_shape(op.result)
            alloc = f"np.empty({shape_expr(shape)}, {dtype_expr(td.numpy_dtype(op.result.type))})"
            if op.result in self.result_index:
                alloc = f"{alloc} if {OUT} is None else {OUT}[{self.result_index[op.result]}]"
            self.w.line(f"{name} = {alloc}")
            self.joins[op] = name
            for v, part in zip(op.inputs, op.parts(), strict=True):
                alone = v.get_user_of_unique_use() is op  # (not a list: a join reads n values)
                if isinstance(v.owner, FusedOp | TileOp) and alone and v not in self.into:
                    self.into[v] = f"{name}{index_text(part)}"

    def join(self, op: td.ConcatenateOp) -> None:
        """A join: its buffer, the operands not written into it copied in."""
        name = self.joins[op]
        for v, part in zip(op.inputs, op.parts(), strict=True):
            if v in self.written:
                continue  # its group wrote it in place
            self.w.line(f"{name}{index_text(part)} = {self.values[v].expr}")
        self.values[op.result] = _Value(name, True)

    def flush(self, ops: list[Operation]) -> None:
        """Emit a run of top-level ops as one whole-array group."""
        if not ops:
            return
        inside = set(ops)
        found: dict[SSAValue, None] = {}
        for op in ops:
            for v in op.operands:
                if v.owner not in inside:
                    found.setdefault(v)
        inputs = list(found)
        outs = [
            r for op in ops for r in op.results if any(u.operation not in inside for u in r.uses)
        ]
        label = "tensordsl ops (not fused)"
        group = GroupSource(
            label=label,
            title=label,
            name=f"{self.pyname}_ops",
            body=whole_body(ops, outs, inputs),
            tiles=(),
            recorded=None,
            inputs=inputs,
            input_exprs=[self.values[v].expr for v in inputs],
            out_names=[self.value_name(r) for r in outs],
            bind_views=True,
            allocs=self.out_allocs(outs),
        )
        self.emit(group, outs)
        ops.clear()

    def group(self, op: FusedOp | TileOp) -> None:
        name = op.group.data if op.group is not None else f"k{self.groups}"
        self.groups += 1
        block = op.body.block
        outs: list[SSAValue] = list(op.outputs)
        if isinstance(op, TileOp):
            try:
                body = op.group_body()
                staged, sweeps = op.recorded_plan(body)
            except PlanError as err:
                raise TdslIRError(f"numpy target: {err}", op=op) from err
            tiles, recorded = op.tiles_value, op.scratch_value
        else:
            ops, yielded = op.body_ops()
            body = whole_body(ops, yielded, list(block.args))
            tiles, recorded = (), None
            staged, sweeps = frozenset[Operation](), None
        source = GroupSource(
            label=_group_label(op, display(name)),
            title=f"group {display(name)}",
            name=f"{self.pyname}_{identifier(name, 'g')}",
            body=body,
            tiles=tiles,
            recorded=recorded,
            inputs=list(block.args),
            input_exprs=[self.values[v].expr for v in op.inputs],
            out_names=[self.value_name(r) for r in outs],
            allocs=self.out_allocs(outs),
            staged=staged,
            sweeps=sweeps,
        )
        self.emit(source, outs)

    def out_allocs(self, outs: Sequence[SSAValue]) -> dict[int, str]:
        """The group outputs that are results: allocated unless ``out`` gives their array;
        and those a join alone reads: its buffer's slice."""
        allocs = {
            k: f"{{}} if {OUT} is None else {OUT}[{self.result_index[r]}]"
            for k, r in enumerate(outs)
            if r in self.result_index
        }
        allocs.update({k: self.into[r] for k, r in enumerate(outs) if r in self.into})
        return allocs

    def emit(self, group: GroupSource, outs: Sequence[SSAValue]) -> None:
        fresh = emit_group(group, self.state, self.w, self.names)
        for r, name, f in zip(outs, group.out_names, fresh, strict=True):
            self.values[r] = _Value(name, f)
            if f and r in self.into:
                self.written.add(r)

    def ret(self, op: func.ReturnOp) -> None:
        # A result its group wrote (into out[i] when given) is returned as is;
        # an argument, a constant, a view, or a value returned twice is copied.
        fresh: list[str] = []
        given: list[str] = []
        copies: list[str] = []
        seen: set[SSAValue] = set()
        for i, v in enumerate(op.arguments):
            val = self.values[v]
            if val.fresh and v not in seen:
                fresh.append(val.expr)
                given.append(val.expr)
            else:
                fresh.append(f"{val.expr}.copy()")
                given.append(f"{OUT}[{i}]")
                copies.append(f"np.copyto({OUT}[{i}], {val.expr})")
            seen.add(v)
        if not fresh:
            self.w.line("return None")
            return
        if copies:
            self.w.line(f"if {OUT} is not None:")
            with self.w.indent():
                for line in copies:
                    self.w.line(line)
                self.w.line(f"return {', '.join(given)}")
        self.w.line(f"return {', '.join(fresh)}")


def emit_module(module: ModuleOp, threads: int = 1) -> str:
    """The Python source of every ``func.func`` in ``module``."""
    state = ModuleState(threads=threads)
    state.names.reserve("np", "concurrent", "threading", "TDSL_FUNCTIONS")
    functions: list[tuple[str, str]] = []
    bodies = Writer()
    for op in module.ops:
        if not isinstance(op, func.FuncOp):  # (llvm.func: IR past the numpy target's)
            raise TdslIRError(
                f"numpy target: cannot emit '{op.name}': it takes tensordsl IR, fused or "
                "tiled (func.func of tensors)",
                op=op,
            )
        if any(isinstance(t, MemRefType) for t in op.function_type.inputs.data):
            raise TdslIRError(
                f"numpy target: @{op.sym_name.data} is loops-stage IR (memref arguments, "
                "after tdsl-lower-to-loops); the numpy target takes tensordsl IR, fused or "
                "tiled (func.func of tensors)",
                note="drop --lower-to-loops for -t numpy, or compile the loops natively: "
                "--convert-to-llvm -t llvm",
                op=op,
            )
    for op in module.walk():
        if not isinstance(op, func.FuncOp):
            continue
        if op.is_declaration:
            raise TdslIRError(f"numpy target: func.func @{op.sym_name.data} has no body")
        pyname = state.names.fresh(identifier(op.sym_name.data, "kernel"))
        functions.append((op.sym_name.data, pyname))
        body = _FunctionEmitter(op, state, pyname).run()
        # the loop functions of its groups come right before the function
        bodies.lines.extend(state.helpers.lines)
        state.helpers.lines.clear()
        bodies.lines.extend(body.lines)
        bodies.line()
        bodies.line()

    sections: list[list[str]] = []
    if state.consts.arrays or state.fills.blocks:
        consts = ["# constants; zero blocks make np.maximum(x, zeros) take NumPy's fast path"]
        consts += [f"{name} = {array_expr(arr)}" for name, arr in state.consts.arrays.items()]
        consts += list(state.fills.definitions())
        sections.append(consts)
    for source in state.consts.functions.values():
        sections.append(source.rstrip("\n").splitlines())
    if state.uses_pool:
        sections.append([f"_THREADS = {threads}", *_PARALLEL.splitlines()])

    out = Writer()
    out.line(f'"""NumPy code generated by tdsl (numpy target, threads={threads})."""')
    out.line()
    if state.uses_pool:
        out.line("import concurrent.futures")
        out.line("import threading")
        out.line()
    out.line("import numpy as np")
    out.line()
    out.line()
    for section in sections:
        out.lines.extend(section)
        out.line()
        out.line()
    out.lines.extend(bodies.lines)
    table = ", ".join(f"{name!r}: {py}" for name, py in functions)
    out.line(f"TDSL_FUNCTIONS = {{{table}}}")
    return out.text()
