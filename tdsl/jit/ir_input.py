"""IR a user gives the JIT: as text (:func:`build_ir`) or as a module of IR objects
(:func:`build_module`, whose ops may come from any dialect), the stage of the pipeline
it is at, and a ``tensordsl`` function re-typed for new argument shapes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tdsl.errors import TdslError, TdslIRError, TdslTypeError, span_location
from tdsl.jit.calls import OUT
from tdsl.jit.compiled import CompiledKernel
from tdsl.jit.compiler import _collector_paused, _compile_module  # pyright: ignore[reportPrivateUsage]
from tdsl.jit.options import JitOptions

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp
    from xdsl.ir import Operation
    from xdsl.utils.lexer import Span

    from tdsl.ir_text import OpLocator

Shapes = tuple[tuple[int, ...], ...] | Mapping[str, tuple[int, ...]]
"""Argument shapes: one per argument in order, or by argument name."""


def ir_context() -> Context:
    """A context for IR text: builtin, func, tensordsl and kernel loaded, and every other
    dialect xDSL's universes name (a downstream project's, through its
    ``xdsl.universe`` entry point) registered, loaded when the text uses it."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.universe import Universe

    from tdsl.dialects.kernel import Kernel
    from tdsl.dialects.tensordsl import TensorDSL

    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL, Kernel):
        ctx.load_dialect(dialect)
    for name, factory in Universe.get_multiverse().all_dialects.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx


def build_ir(text: str, shapes: Shapes | None, options: JitOptions) -> CompiledKernel:
    """Compile the one ``func.func`` of a module of IR given as text (see
    :func:`build_module`); its ops may come from any dialect an ``xdsl.universe``
    entry point registers."""
    from xdsl.utils.exceptions import ParseError, VerifyException

    from tdsl.ir_text import LocatingParser, OpLocator

    parser: LocatingParser | None = None
    try:
        parser = LocatingParser(ir_context(), text, IR_NAME)  # (it reads the first token)
        module = parser.parse_module()
        _verify(module, OpLocator(parser.op_spans))
    except ParseError as err:  # (at its place in the text)
        raise TdslIRError(f"the IR does not parse: {err.msg}", span_location(err.span)) from None
    except VerifyException as err:  # (an attribute or type that does not verify, parsed)
        failed = None if parser is None else parser.failure_span
        where = None if failed is None else span_location(failed)
        raise TdslIRError(f"the IR does not verify: {err}", where) from None
    except TdslError:
        raise
    except Exception as err:  # a plain one of xDSL's (an i65 dense value, memref.load's)
        why = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        raise TdslIRError(f"the IR does not parse or verify: {why}") from None
    _place_ops(parser.op_spans)
    try:
        return build_module(module, shapes, options, text)
    except TdslError as err:  # (a pass's: at the line of its op, which a clone of it keeps)
        raise _at_its_line(err, OpLocator(parser.op_spans, 0, IR_NAME, text)) from None


IR_NAME = "<ir>"
"""The name of IR text in its errors' locations (``<ir>:3:10``)."""


def _place_ops(op_spans: Mapping[Operation, Span[str]]) -> None:
    """Give each parsed op that has no location the ``loc`` of its name in the text, as a
    frontend's ops have theirs: the passes run on clones (which keep it) and place their
    errors, and a group's, at it."""
    from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr, UnknownLoc

    for op, span in op_spans.items():
        if isinstance(op.location, UnknownLoc):
            where = span.get_location()
            op.location = FileLineColLoc(
                StringAttr(IR_NAME), IntAttr(where.line), IntAttr(where.col)
            )


def _at_its_line(err: TdslError, locator: OpLocator) -> TdslError:
    """``err`` at its op's line of the IR text, with that line and a caret; without the
    notes xDSL's pattern driver adds (the whole module, printed generically)."""
    from xdsl.ir import Operation

    where = err.location
    if where is not None and where.source_line is None:
        where = locator.file_location(where.file, where.line, where.column)
    elif where is None and isinstance(err.op, Operation):
        placed = locator.nearest(err.op)
        where = None if placed is None else placed[1]
    if where is not None and where.source_line is not None and isinstance(err.op, Operation):
        name = err.op.name  # (the caret under the op's name, as the parser's spans give it)
        if where.source_line.startswith(name, where.column - 1):
            where = replace(where, length=len(name))
    if where is err.location and not getattr(err, "__notes__", None):
        return err
    return type(err)(err.message, where, note=err.note, op=err.op)


def _verify(module: ModuleOp, locator: OpLocator) -> None:
    """Verify ``module``; an op that does not is a :class:`TdslIRError` at its line (or
    its nearest enclosing op's), the lines xDSL's constraints add as its note."""
    from tdsl.ir_text import find_verify_failure, first_line, op_message, verify_module

    try:
        verify_module(module)
    except Exception:
        found = find_verify_failure(module)
        if found is None:
            raise
        op, err = found
        first, details = first_line(str(err))
        placed = locator.nearest(op)
        where = None if placed is None else placed[1]
        raise TdslIRError(
            f"the IR does not verify: {op_message(op, first)}", where, note=details
        ) from None


def build_module(
    module: ModuleOp, shapes: Shapes | None, options: JitOptions, text: str | None = None
) -> CompiledKernel:
    """Compile the one ``func.func`` of ``module`` (which is not changed).

    The IR is ``tensordsl`` IR, or IR of a later stage of the pipeline
    (:func:`input_stage`): fused (``kernel.fused`` groups), where only
    ``tdsl-tile`` runs, or tiled (``kernel.tile`` groups), where no pass runs and
    every target runs the plan the IR records, edited by hand or not.  Its ops
    may be of any dialect whose ops implement the structured-op interface.

    With ``shapes`` (one per argument, or by argument name), a ``tensordsl``
    function is first re-typed for arguments of those shapes: each op keeps its
    properties and takes the result types its own type inference gives, as
    ``tdsl-tile`` re-types a group's body for a tile.  So one text serves every
    shape its ops accept.  The arguments are named as the IR names them (``a0``,
    ``a1``, ... where it does not, or names them twice); none is weak.
    """
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp

    functions = [op for op in module.ops if isinstance(op, FuncOp)]
    if len(functions) != 1 or len(module.body.block.ops) != 1:
        raise TdslIRError(f"expected a module of one func.func, got {len(functions)} functions")
    module = module.clone()
    func_op = next(op for op in module.ops if isinstance(op, FuncOp))
    start = input_stage(func_op)
    hints = [arg.name_hint for arg in func_op.args]
    names = [h or f"a{i}" for i, h in enumerate(hints)]
    if len(set(names)) != len(names) or OUT in names:
        names = [f"a{i}" for i in range(len(names))]
    if shapes is not None:
        if start != "tensordsl":
            raise TdslIRError(
                f"shapes re-type tensordsl IR, and this IR is {start} (its groups' tiles "
                "and scratch are planned for the shapes it has): give tensordsl IR, or "
                "leave out shapes"
            )
        func_op = retyped_function(func_op, _in_order(shapes, names))
        module = ModuleOp([func_op])
        module.verify()
    with _collector_paused():
        return _compile_module(
            module,
            func_op,
            names,
            [False] * len(names),
            str(module) if text is None else text,
            "<ir>",
            options,
            program=False,
            start=start,
        )


def _in_order(shapes: Shapes, names: Sequence[str]) -> Sequence[tuple[int, ...]]:
    """``shapes`` one per argument, in order (a mapping names every argument)."""
    if not isinstance(shapes, Mapping):
        return shapes
    missing = [n for n in names if n not in shapes]
    extra = [n for n in shapes if n not in names]
    if missing or extra:
        wrong = f"names `{extra[0]}`, which is no argument" if extra else f"lacks `{missing[0]}`"
        raise TdslTypeError(
            f"shapes {wrong}: the function's arguments are {', '.join(f'`{n}`' for n in names)}"
        )
    return [shapes[n] for n in names]


def input_stage(func_op: FuncOp) -> str:
    """The stage of the pipeline ``func_op`` is at: ``tiled`` when its computing ops are
    in ``kernel.tile`` groups, ``fused`` when some are in ``kernel.fused`` groups still
    (``tdsl-tile`` tiles those), ``tensordsl`` when none is in a group.  The ops
    ``tdsl-fuse`` leaves between groups (constants, windows such as
    ``tensordsl.slice``, joins such as ``tensordsl.concatenate``: ops it does not
    group) may stand beside groups.  Raises a :class:`TdslIRError` for a function that
    mixes grouped and ungrouped computing ops."""
    from tdsl.dialects.kernel import FusedOp, TileOp
    from tdsl.transforms.fusion_parts import groupable

    grouped = {FusedOp: 0, TileOp: 0}
    loose: list[str] = []
    for op in func_op.body.block.ops:
        if isinstance(op, FusedOp | TileOp):
            grouped[type(op)] += 1
        elif groupable(op):
            loose.append(op.name)
    if not grouped[FusedOp] and not grouped[TileOp]:
        return "tensordsl"
    if loose:
        raise TdslIRError(
            f"@{func_op.sym_name.data} has ops in kernel groups and '{loose[0]}' outside "
            "them: give tensordsl IR (no groups), or IR that tdsl-fuse grouped"
        )
    return "fused" if grouped[FusedOp] else "tiled"


def retyped_function(func_op: FuncOp, shapes: Sequence[tuple[int, ...]]) -> FuncOp:
    """A copy of ``func_op`` for arguments of ``shapes``, each op re-typed by its own type
    inference (constants are copied as they are).  Raises a :class:`TdslTypeError` for
    shapes an op does not accept."""
    from xdsl.dialects.builtin import TensorType
    from xdsl.dialects.func import FuncOp, ReturnOp
    from xdsl.ir import Block, Region, SSAValue

    from tdsl.dialects.structured import element_type, is_constant
    from tdsl.transforms.iteration_space import require_structured

    inputs = func_op.function_type.inputs.data
    if len(shapes) != len(inputs):
        raise TdslTypeError(
            f"{len(shapes)} shape(s) for the {len(inputs)} argument(s) of @{func_op.sym_name.data}"
        )
    block = Block(
        arg_types=[
            TensorType(element_type(t), shape) for t, shape in zip(inputs, shapes, strict=True)
        ]
    )
    mapping: dict[SSAValue, SSAValue] = {}
    for old, new in zip(func_op.args, block.args, strict=True):
        new.name_hint = old.name_hint
        mapping[old] = new
    returned: list[SSAValue] = []
    for op in func_op.body.block.ops:
        if isinstance(op, ReturnOp):
            returned = [mapping[v] for v in op.operands]
            block.add_op(ReturnOp(*returned))
            break
        if is_constant(op):
            new_op = op.clone()
        else:
            try:
                new_op = require_structured(op).retyped([mapping[v] for v in op.operands])
            except TdslTypeError as err:  # (a ShapeError: it names no argument)
                given = ", ".join(
                    f"%{a.name_hint or i} {shape}"
                    for i, (a, shape) in enumerate(zip(func_op.args, shapes, strict=True))
                )
                raise TdslTypeError(
                    f"@{func_op.sym_name.data} for the shapes given ({given}): '{op.name}' "
                    f"cannot take them: {err.message}",
                    op=op,
                ) from None
        block.add_op(new_op)
        for old, new in zip(op.results, new_op.results, strict=True):
            mapping[old] = new
    return FuncOp(
        func_op.sym_name.data,
        ([a.type for a in block.args], [v.type for v in returned]),
        Region(block),
    )


__all__ = ["Shapes", "build_ir", "build_module", "input_stage", "ir_context", "retyped_function"]
