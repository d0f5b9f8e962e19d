"""``tdsl-run``: run a function of a ``.mlir`` or ``.tdsl`` file and print its results.

::

    tdsl-run model.mlir --symbol main --args 'dense<[1.0, 2.0]> : tensor<2xf32>, ...'
    tdsl-run model.mlir --random-args 0 --fuse --tile      # run after fusion and tiling

The input may be at any stage (tensordsl, fused, tiled): it is run by tdsl's
interpreter (:func:`tdsl.interpreters.run.run_function`).  Arguments are MLIR
attributes, one per function argument, or random values from ``--random-args
SEED``.  Passes may be applied first, with ``-p`` or the pass flags of
``tdsl-opt``.  Each result prints as its type and its value::

    result #0: tensor<2xf32>
    [1. 2.]

Errors are reported like ``tdsl-opt``'s (``file:line:col: error: ...``, exit 1).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from io import StringIO
from typing import Any, ClassVar, cast

import numpy as np
import numpy.typing as npt
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute
from xdsl.parser import Parser
from xdsl.utils.lexer import Span

from tdsl.errors import format_diagnostic
from tdsl.tools.diagnostics import DriverError, run_tool, span_location
from tdsl.tools.tdsl_opt import TdslOptMain

Array = npt.NDArray[Any]

_IRRELEVANT_OPTIONS = frozenset(
    {
        "--target",
        "--print-op-generic",
        "--print-no-properties",
        "--print-debuginfo",
        "--syntax-highlight",
        "--shrink",
        "--explain-fusion",
        "--parsing-diagnostics",
    }
)
"""``tdsl-opt`` options that mean nothing to ``tdsl-run``: hidden from ``--help``."""


def numpy_dtype(element_type: Attribute) -> np.dtype[Any]:
    """The NumPy dtype of a builtin element type (f16/f32/f64, i1 and signless integers)."""
    if isinstance(element_type, AnyFloat):
        width = element_type.bitwidth
        if width in (16, 32, 64):
            return np.dtype(f"float{width}")
    if isinstance(element_type, IntegerType):
        width = cast(IntegerType, element_type).bitwidth
        if width == 1:
            return np.dtype(np.bool_)
        if width in (8, 16, 32, 64):
            return np.dtype(f"int{width}")
    raise DriverError(f"error: tdsl-run does not support element type {element_type}")


def tensor_parts(attr: Attribute) -> tuple[Attribute, tuple[int, ...]] | None:
    """The element type and shape of a ``tensor<...>`` type, or ``None`` for other types."""
    if not isinstance(attr, TensorType):
        return None
    tensor_type = cast(TensorType[Attribute], attr)
    return tensor_type.get_element_type(), tuple(tensor_type.get_shape())


def attribute_to_array(attr: Attribute) -> Array:
    """The NumPy value of a ``dense<...> : tensor<...>`` or scalar attribute."""
    if isinstance(attr, DenseIntOrFPElementsAttr):
        dense = cast(DenseIntOrFPElementsAttr[Any], attr)
        parts = tensor_parts(cast(Attribute, dense.type))
        if parts is None:
            raise DriverError(f"error: cannot pass {attr} as an argument: it is not a tensor")
        element_type, shape = parts
        dtype = numpy_dtype(element_type)
        if dtype == np.bool_:
            flat = np.frombuffer(dense.data.data, dtype=np.uint8) != 0
        else:
            flat = np.frombuffer(dense.data.data, dtype=dtype)
        return flat.reshape(shape).copy()
    if isinstance(attr, FloatAttr):
        float_attr = cast(FloatAttr[Any], attr)
        return np.asarray(
            float_attr.value.data, dtype=numpy_dtype(cast(Attribute, float_attr.type))
        )
    if isinstance(attr, IntegerAttr):
        int_attr = cast(IntegerAttr[Any], attr)
        int_type = cast(Attribute, int_attr.type)
        if isinstance(int_type, IntegerType):
            return np.asarray(int_attr.value.data, dtype=numpy_dtype(cast(Attribute, int_type)))
    raise DriverError(
        f"error: cannot pass {attr} as an argument: write dense<...> : tensor<...> "
        "or a scalar such as 1.0 : f32"
    )


def attribute_type(attr: Attribute) -> Attribute | None:
    """The type of a dense or scalar argument attribute (``None`` for other attributes)."""
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return cast(Attribute, cast(DenseIntOrFPElementsAttr[Any], attr).type)
    if isinstance(attr, FloatAttr):
        return cast(Attribute, cast(FloatAttr[Any], attr).type)
    if isinstance(attr, IntegerAttr):
        return cast(Attribute, cast(IntegerAttr[Any], attr).type)
    return None


def random_array(rng: np.random.Generator, arg_type: Attribute) -> Array:
    """A random value of ``arg_type``: normal floats, small integers, random booleans."""
    parts = tensor_parts(arg_type)
    if parts is not None:
        element, shape = parts
        if any(dim < 0 for dim in shape):
            raise DriverError(f"error: --random-args needs static shapes, got {arg_type}")
        dtype = numpy_dtype(element)
    else:
        shape = ()
        dtype = numpy_dtype(arg_type)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-8, 8, size=shape).astype(dtype)
    return rng.standard_normal(size=shape).astype(dtype)


def find_function(module: ModuleOp, symbol: str | None) -> FuncOp:
    """The ``func.func`` named ``symbol``; without a name, ``@main`` or the only function."""
    functions = [op for op in module.walk() if isinstance(op, FuncOp)]
    names = [op.sym_name.data for op in functions]
    wanted = symbol
    if wanted is None:
        if "main" in names:
            wanted = "main"
        elif len(functions) == 1:
            return functions[0]
        else:
            listed = ", ".join(f"@{name}" for name in names) or "none"
            raise DriverError(
                f"error: no @main function; choose one with --symbol (functions: {listed})"
            )
    for op in functions:
        if op.sym_name.data == wanted:
            if op.is_declaration:
                raise DriverError(f"error: @{wanted} is a declaration, it has no body to run")
            return op
    listed = ", ".join(f"@{name}" for name in names) or "none"
    raise DriverError(f"error: no function @{wanted} in the input (functions: {listed})")


def _non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def format_results(results: Sequence[Array], types: Sequence[Attribute], precision: int) -> str:
    """``result #i: <type>`` and the value of each result."""
    out = StringIO()
    for index, value in enumerate(results):
        type_text = str(types[index]) if index < len(types) else str(value.dtype)
        text = np.array2string(np.asarray(value), precision=precision, threshold=10_000)
        out.write(f"result #{index}: {type_text}\n{text}\n")
    return out.getvalue()


class TdslRunMain(TdslOptMain):
    """``tdsl-run``: ``tdsl-opt``'s input handling and passes, then run one function."""

    version_format: ClassVar[str] = "tdsl-run built from xdsl version {xdsl_version}"

    def __init__(
        self,
        description: str = "run a function of a tdsl or MLIR file with tdsl's interpreter",
        args: Sequence[str] | None = None,
    ) -> None:
        super().__init__(description, args)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--symbol",
            type=str,
            default=None,
            help="name of the function to run (default: @main, or the only function)",
        )
        inputs = arg_parser.add_mutually_exclusive_group()
        inputs.add_argument(
            "--args",
            type=str,
            default=None,
            metavar="ATTRIBUTES",
            help="comma-separated arguments as MLIR attributes, e.g. "
            "'dense<[1.0, 2.0]> : tensor<2xf32>, dense<0.5> : tensor<2xf32>'",
        )
        inputs.add_argument(
            "--random-args",
            type=_non_negative_int,
            default=None,
            metavar="SEED",
            help="call with random arguments of the function's argument types",
        )
        arg_parser.add_argument(
            "--print-args",
            action="store_true",
            default=False,
            help="print the arguments before the results",
        )
        arg_parser.add_argument(
            "--precision",
            type=_non_negative_int,
            default=6,
            help="digits printed after the decimal point (default 6)",
        )
        super().register_all_arguments(arg_parser)
        for action in arg_parser._actions:
            if _IRRELEVANT_OPTIONS.intersection(action.option_strings):
                action.help = argparse.SUPPRESS

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """Run the chosen function on the arguments and render its results."""
        func = find_function(prog, self.args.symbol)
        arg_types = list(func.function_type.inputs.data)
        result_types = list(func.function_type.outputs.data)
        arrays = self._arguments(func, arg_types)
        from tdsl.interpreters.run import run_function

        returned: object = run_function(prog, func.sym_name.data, *arrays)
        results = _as_results(returned)
        text = ""
        if self.args.print_args:
            text += "".join(
                f"arg #{index}: {arg_types[index]}\n"
                + np.array2string(value, precision=self.args.precision, threshold=10_000)
                + "\n"
                for index, value in enumerate(arrays)
            )
        return text + format_results(results, result_types, self.args.precision)

    def _arguments(self, func: FuncOp, arg_types: list[Attribute]) -> list[Array]:
        name = func.sym_name.data
        if self.args.random_args is not None:
            rng = np.random.default_rng(self.args.random_args)
            return [random_array(rng, arg_type) for arg_type in arg_types]
        text: str = self.args.args or ""
        attrs: list[Attribute] = []
        spans: list[Span[str]] = []
        if text.strip():
            parser = Parser(self.ctx, text, "args")

            def parse_one() -> Attribute:
                start = parser.pos
                attr = parser.parse_attribute()
                spans.append(Span(start, max(start + 1, parser.pos), parser.lexer.input))
                return attr

            attrs = parser.parse_comma_separated_list(parser.Delimiter.NONE, parse_one)
            if parser.pos < len(text.rstrip()):
                parser.raise_error("expected ',' or the end of the arguments")
        if len(attrs) != len(arg_types):
            hint = " (pass them with --args or --random-args SEED)" if not attrs else ""
            raise DriverError(
                f"error: @{name} takes {len(arg_types)} argument(s), {len(attrs)} given{hint}"
            )
        arrays: list[Array] = []
        for index, (attr, expected) in enumerate(zip(attrs, arg_types, strict=True)):
            given = attribute_type(attr)
            if given is None:
                raise DriverError(
                    format_diagnostic(
                        f"cannot pass {attr} as an argument: write dense<...> : tensor<...> "
                        "or a scalar such as 1.0 : f32",
                        span_location(spans[index]),
                    )
                )
            if given != expected:
                raise DriverError(
                    format_diagnostic(
                        f"argument #{index} of @{name} has type {expected}, not {given}",
                        span_location(spans[index]),
                    )
                )
            arrays.append(attribute_to_array(attr))
        return arrays


def _as_results(returned: object) -> list[Array]:
    """The interpreter's return value as a list of arrays (one per function result)."""
    if isinstance(returned, tuple | list):
        values = cast(Sequence[object], returned)
        return [np.asarray(value) for value in values]
    return [np.asarray(returned)]


def main(args: Sequence[str] | None = None) -> None:
    """The ``tdsl-run`` console script; raises ``SystemExit`` with 1 or 2 on error."""

    def body() -> None:
        TdslRunMain(args=args).run()

    run_tool(body)


if __name__ == "__main__":
    main()
