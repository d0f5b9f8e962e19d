"""Lowering of the tdsl AST to the ``tensordsl`` dialect.

One ``func.func`` per kernel; a bare expression becomes ``func.func @main``
whose arguments are the names it uses, in order of first appearance.  Every
op carries the source location of the text it came from.

Typing follows NumPy 2 (NEP 50):

* array operands promote as ``np.result_type`` does (f16 < f32 < f64); the
  promotion is an explicit ``tensordsl.cast``;
* numeric literals are *weak* Python ints (``2``) and floats (``2.0``): arithmetic
  between literals only (``2 * 3``, ``-1``, ``1 / 3``) is folded as NumPy computes
  Python scalars (int64, or double precision), and the result takes the dtype of
  the tensor it meets, as a 0-d ``tensordsl.constant``.  A literal that meets no
  tensor (one returned alone, or the only argument of a function, as in
  ``exp(2)``) is an int64 or a float64, and the function's result follows
  (``np.exp(2)`` is a float64).
* an input of a bare expression declared with the dtype ``float`` or ``int`` (the
  Python types) is a *weak scalar input*: a Python float or int given at run time,
  typed like a literal.  It is a 0-d ``f64`` (``i64``) argument of the function;
  where it meets a tensor it is converted to the promoted element type with a
  ``tensordsl.cast`` (one per element type, at its first such use), so ``A * s`` is
  float32 for a float32 ``A``, and int32 for an int32 ``A`` and an ``int`` ``s``.
  Arithmetic between weak values and literals only (``s + 1``, ``-s``, ``s * t``)
  is computed in int64 or float64, as NumPy computes on Python scalars, and stays
  weak; a result made of weak values and literals only is int64 or float64.

Shapes, axes, arities and keywords are checked here, before any op is built,
so each error points at the user's span.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping, Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FileLineColLoc,
    IntAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import ELEMENT_TYPES
from tdsl.dtypes import WEAK_PARAMS
from tdsl.errors import (
    SourceLocation,
    TdslIRError,
    TdslNameError,
    TdslOptionError,
    TdslTypeError,
    check_argument,
)
from tdsl.frontend.ast import (
    Expression,
    Kernel,
    Name,
    Param,
    Program,
    Return,
    Source,
    Span,
    walk,
)
from tdsl.frontend.dtype_names import DTypeLike, element_type_of
from tdsl.frontend.functions import (
    CONSTANTS,
    FUNCTIONS,
    FunctionInfo,
    check_calls,
    name_list,
    nearest_name,
    unknown_name_hint,
)
from tdsl.frontend.lower_expr import WEAK, WEAK_INT, FunctionLowering
from tdsl.frontend.parser import MAX_DIM, parse
from tdsl.frontend.values import (
    MAX_RANK,
    TensorValue,
    TupleValue,
    WeakValue,
    dtype_name,
    format_type,
)

# --------------------------------------------------------------------------- functions and modules


_HINT_SUFFIX = re.compile(r"_\d+$")


def _name_hint(value: SSAValue, name: str) -> None:
    """Name ``value`` after a binding, when xDSL would print that name."""
    if value.name_hint is None and _HINT_SUFFIX.sub("", name):
        value.name_hint = name


def _build_function(
    lowering: FunctionLowering,
    name: str,
    block: Block,
    results: Sequence[TensorValue],
    span: Span,
    return_span: Span,
) -> func.FuncOp:
    ret = func.ReturnOp(*(r.value for r in results))
    ret.location = lowering.location(return_span)
    lowering.builder.insert(ret)
    for op in reversed(list(block.ops)):  # windows nothing reads: a split's unused parts
        if isinstance(op, td.SliceOp) and not op.result.uses:
            block.erase_op(op)
    inputs = [arg.type for arg in block.args]
    outputs = [r.value.type for r in results]
    function = func.FuncOp(name, (inputs, outputs), Region(block))
    function.location = lowering.location(span)
    # The body's ops were verified one by one as they were built (see `emit`).
    try:
        ret.verify()
        function.verify(verify_nested_ops=False)
    except VerifyException as err:
        raise TdslIRError(f"generated IR does not verify: {err}", lowering.where(span)) from None
    return function


def _block(source: Source, args: Sequence[tuple[str, Attribute, tuple[int, ...], Span]]) -> Block:
    block = Block(arg_types=[TensorType(element, shape) for _, element, shape, _ in args])
    for arg, (name, _, _, span) in zip(block.args, args, strict=True):
        _name_hint(arg, name)
        arg.location = FileLineColLoc(
            StringAttr(source.filename), IntAttr(span.line), IntAttr(span.column)
        )
    return block


def _lower_kernel(source: Source, kernel: Kernel) -> func.FuncOp:
    seen: dict[str, Span] = {}
    for param in kernel.params:
        if param.name in seen:
            raise TdslNameError(
                f"duplicate argument `{param.name}` in kernel `{kernel.name}`",
                source.location(param.span),
            )
        seen[param.name] = param.span
    for statement in (*kernel.body, kernel.ret):
        values = statement.values if isinstance(statement, Return) else (statement.value,)
        for value in values:
            check_calls(source, value)

    def element(p: Param) -> Attribute:  # a weak scalar is an f64 or i64 argument
        return (
            (i64 if WEAK_PARAMS[p.dtype] else f64)
            if p.dtype in WEAK_PARAMS
            else (ELEMENT_TYPES[p.dtype])
        )

    block = _block(source, [(p.name, element(p), p.shape, p.span) for p in kernel.params])
    lowering = FunctionLowering(source, block)
    for param, arg in zip(kernel.params, block.args, strict=True):
        lowering.env[param.name] = (
            WeakValue(arg, WEAK_PARAMS[param.dtype])
            if param.dtype in WEAK_PARAMS
            else TensorValue(arg, param.shape, ELEMENT_TYPES[param.dtype])
        )
    for assign in kernel.body:
        value = lowering.lower(assign.value)
        if not assign.more:
            if isinstance(value, TensorValue) and isinstance(value.value.owner, Operation):
                _name_hint(value.value, assign.target)
            lowering.env[assign.target] = value
            continue
        targets = assign.targets
        if not isinstance(value, TupleValue) or len(value.items) != len(targets):
            got = f"{len(value.items)} values" if isinstance(value, TupleValue) else "one value"
            raise TdslTypeError(
                f"cannot unpack {got} into {len(targets)} names",
                source.location(assign.value.span),
            )
        for (name, _), item in zip(targets, value.items, strict=True):
            if isinstance(item, TensorValue) and isinstance(item.value.owner, Operation):
                _name_hint(item.value, name)
            lowering.env[name] = item
    results = [lowering.tensor(lowering.lower(v), v.span) for v in kernel.ret.values]
    return _build_function(lowering, kernel.name, block, results, kernel.span, kernel.ret.span)


def _input_shape(name: str, shape: Sequence[int], where: SourceLocation) -> tuple[int, ...]:
    try:
        items = tuple(shape)
        dims = tuple(operator.index(d) for d in items if not isinstance(d, bool))
        valid = len(dims) == len(items) and all(0 <= d <= MAX_DIM for d in dims)
    except TypeError:
        dims, valid = (), False
    if not valid or len(dims) > MAX_RANK:
        raise TdslTypeError(
            f"invalid shape {shape!r} for input `{name}`: expected a tuple of "
            f"integers from 0 to 2**62, at most {MAX_RANK} of them (NumPy's)",
            where,
        )
    return dims


def expression_inputs(
    expression: Expression,
    shapes: Mapping[str, Sequence[int]] | None,
    dtypes: DTypeLike | Mapping[str, DTypeLike] | None,
) -> dict[str, Span]:
    """The inputs of an expression, in order of first use, each at its first use: the
    names it reads, but a constant (``pi``, ``inf``) that no shape or dtype given for
    its name makes an input."""
    given = shapes or {}
    first_use: dict[str, Span] = {}
    for node in walk(expression.body):
        if not isinstance(node, Name) or node.id in first_use:
            continue
        if (
            node.id in CONSTANTS
            and node.id not in given
            and not (isinstance(dtypes, Mapping) and node.id in dtypes)
        ):
            continue
        first_use[node.id] = node.span
    return first_use


def _lower_expression(
    expression: Expression,
    shapes: Mapping[str, Sequence[int]] | None,
    dtypes: DTypeLike | Mapping[str, DTypeLike] | None,
) -> func.FuncOp:
    source = expression.source
    check_calls(source, expression.body)
    first_use = expression_inputs(expression, shapes, dtypes)
    given = dict(shapes or {})
    args: list[tuple[str, Attribute, tuple[int, ...], Span]] = []
    weak: set[str] = set()
    for name, span in first_use.items():
        where = source.location(span)
        spec = _dtype_spec(name, dtypes)
        if spec is WEAK or spec is WEAK_INT:
            shape = _input_shape(name, given.get(name, ()), where)
            kind = "int" if spec is WEAK_INT else "float"
            if shape:
                raise TdslTypeError(
                    f"input `{name}` is declared a weak scalar (dtype `{kind}`, a Python "
                    f"{kind}) and must be 0-d, but its shape is given as {shape}; for a "
                    f'{kind}64 tensor write `np.{kind}64` or `"{kind[0]}64"`',
                    where,
                )
            weak.add(name)
            args.append((name, i64 if spec is WEAK_INT else f64, (), span))
            continue
        if name not in given:
            message = f"no shape given for input `{name}`"
            near = nearest_name(name, list(given))
            if near is not None:
                message += f"; did you mean `{near}`?"
            message += f" (shapes were given for: {name_list(list(given))})"
            message += unknown_name_hint(name)
            raise TdslNameError(message, where)
        element = _input_element(name, dtypes, where)
        args.append((name, element, _input_shape(name, given[name], where), span))
    block = _block(source, args)
    lowering = FunctionLowering(source, block)
    for (name, element, shape, _), arg in zip(args, block.args, strict=True):
        lowering.env[name] = (
            WeakValue(arg, element == i64) if name in weak else TensorValue(arg, shape, element)
        )
    body = expression.body
    result = lowering.tensor(lowering.lower(body), body.span)
    return _build_function(lowering, "main", block, [result], body.span, body.span)


def _dtype_spec(name: str, dtypes: DTypeLike | Mapping[str, DTypeLike] | None) -> DTypeLike | None:
    """The dtype given for input ``name`` (``None``: none given, float64)."""
    if isinstance(dtypes, Mapping):
        return dtypes.get(name)
    return dtypes


def _input_element(
    name: str, dtypes: DTypeLike | Mapping[str, DTypeLike] | None, where: SourceLocation
) -> Attribute:
    spec = _dtype_spec(name, dtypes)
    if spec is None:
        return f64
    try:
        return element_type_of(spec)
    except TdslTypeError as err:
        raise TdslTypeError(f"input `{name}`: {err.message}", where) from None


def lower(
    tree: Expression | Program,
    shapes: Mapping[str, Sequence[int]] | None = None,
    dtypes: DTypeLike | Mapping[str, DTypeLike] | None = None,
) -> ModuleOp:
    """Lower a parsed expression or program to a verified ``tensordsl`` module.

    ``shapes`` and ``dtypes`` type the inputs of a bare expression; a program
    types its kernels in their signatures and ignores both.
    """
    if isinstance(tree, Program):
        functions: list[Operation] = []
        defined: dict[str, Span] = {}
        for kernel in tree.kernels:
            if kernel.name in defined:
                first = defined[kernel.name]
                raise TdslNameError(
                    f"kernel `{kernel.name}` is already defined at line {first.line}",
                    tree.source.location(kernel.name_span),
                )
            defined[kernel.name] = kernel.name_span
            functions.append(_lower_kernel(tree.source, kernel))
    else:
        functions = [_lower_expression(tree, shapes, dtypes)]
    module = ModuleOp(functions)
    # Every op inside was verified as it was built, each function when it was closed.
    try:
        module.verify(verify_nested_ops=False)
    except VerifyException as err:
        raise TdslIRError(f"generated IR does not verify: {err}") from None
    return module


def to_tensordsl(
    source: str | Expression | Program,
    shapes: Mapping[str, Sequence[int]] | None = None,
    dtypes: DTypeLike | Mapping[str, DTypeLike] | None = None,
    filename: str = "<expr>",
) -> ModuleOp:
    """Parse ``source`` (an expression or a ``.tdsl`` program) and lower it to tensordsl.

    ``shapes`` maps each input name of an expression to its shape;
    ``dtypes`` is one dtype for all inputs or a dict by name (default float64),
    spelled as a NumPy dtype, a dtype class or a string (``"float32"``, ``"f32"``).
    The Python types ``float`` and ``int`` declare a weak scalar input (see the module
    docstring): 0-d, its shape may be left out; for a strong float64 (int64) input
    write ``np.float64`` or ``"f64"`` (``np.int64`` or ``"i64"``).
    For a program, the signatures give shapes and dtypes and both are ignored.
    Raises a :class:`~tdsl.errors.TdslError` subclass on any bad input.
    """
    check_argument(source, (str, Expression, Program), "the source given to `to_tensordsl`")
    if shapes is not None:
        check_argument(shapes, Mapping, "`shapes` (input names to shapes)")
    tree = source if isinstance(source, Expression | Program) else parse(source, filename)
    return lower(tree, shapes, dtypes)


# --------------------------------------------------------------------------- command line

_SPEC_RE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\S+)\s*")


def parse_shape_spec(spec: str) -> tuple[str, tuple[int, ...], Attribute]:
    """Parse ``NAME=4x4xf32`` (``NAME=f32`` for 0-d; no dtype means f64).

    Raises :class:`~tdsl.errors.TdslOptionError` on a malformed spec.
    """
    usage = "expected NAME=DIMSxDTYPE, e.g. `A=4x4xf32`, or `A=f32` for a 0-d tensor"
    match = _SPEC_RE.fullmatch(spec)
    if match is None:
        raise TdslOptionError(f"invalid shape spec `{spec}`: {usage}")
    name, body = match.groups()
    parts = body.split("x")
    element: Attribute = f64
    if not parts[-1].isdigit():
        try:
            element = element_type_of(parts[-1])
        except TdslTypeError:
            raise TdslOptionError(
                f"invalid shape spec `{spec}`: unknown dtype `{parts[-1]}` "
                "(expected bool, f16, f32, f64, i32, i64, u8 or u64)"
            ) from None
        parts = parts[:-1]
    if not all(p.isdigit() and len(p) <= 18 for p in parts):
        raise TdslOptionError(f"invalid shape spec `{spec}`: {usage}")
    return name, tuple(int(p) for p in parts), element


def lower_expression_cli(expr: str, shape_specs: list[str]) -> ModuleOp:
    """Lower ``expr`` typed by ``--shape`` specs such as ``A=4x4xf32`` (for ``tdsl-opt --expr``).

    Raises :class:`~tdsl.errors.TdslError` on a bad spec or a bad expression.
    """
    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, DTypeLike] = {}
    for spec in shape_specs:
        name, shape, element = parse_shape_spec(spec)
        if name in shapes:
            raise TdslOptionError(f"input `{name}` is given more than one shape")
        shapes[name] = shape
        dtypes[name] = dtype_name(element)
    module = to_tensordsl(expr, shapes=shapes, dtypes=dtypes)
    used = [a.name_hint for fn in module.ops if isinstance(fn, func.FuncOp) for a in fn.args]
    unused = [name for name in shapes if name not in used]
    if unused:  # (a misspelled name would be taken without a word)
        inputs = ", ".join(f"`{n}`" for n in used if n) or "none"
        raise TdslNameError(
            f"--shape names `{unused[0]}`, which the expression does not use (its inputs: {inputs})"
        )
    return module


__all__ = [
    "FUNCTIONS",
    "WEAK",
    "WEAK_INT",
    "DTypeLike",
    "FunctionInfo",
    "element_type_of",
    "format_type",
    "lower",
    "lower_expression_cli",
    "parse_shape_spec",
    "to_tensordsl",
]
