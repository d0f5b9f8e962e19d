"""``tdsl-run``: run a function of a ``.mlir`` or ``.tdsl`` file and print its results.

::

    tdsl-run model.mlir --symbol main --args 'dense<[1.0, 2.0]> : tensor<2xf32>, ...'
    tdsl-run model.mlir --random-args 0 --fuse --tile      # run after fusion and tiling

The input may be at any stage (tensordsl, fused, tiled): it is run by tdsl's
interpreter (:func:`tdsl.interpreters.run.run_function`).  Arguments are MLIR
attributes (``dense<...> : tensor<...>`` of f16, f32 or f64), one per function
argument, or random values from ``--random-args SEED``.  Passes may be applied first, with ``-p`` or the pass flags of
``tdsl-opt``.  Each result prints as its type and its value::

    result #0: tensor<2xf32>
    [1. 2.]

Errors are reported like ``tdsl-opt``'s (``file:line:col: error: ...``, exit 1).
"""

from __future__ import annotations

import argparse
import struct
from collections.abc import Sequence
from io import StringIO
from typing import Any, ClassVar, cast

import numpy as np
import numpy.typing as npt
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute
from xdsl.utils.lexer import Span

from tdsl.dialects.structured import element_dtype
from tdsl.errors import format_diagnostic
from tdsl.interpreters import run
from tdsl.interpreters.tensordsl import attr_to_numpy
from tdsl.ir_text import LocatingParser
from tdsl.tools.diagnostics import DriverError, run_tool, span_location
from tdsl.tools.opt_io import out_of_range
from tdsl.tools.tdsl_opt import TdslOptMain
from tdsl.version import __version__

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


def tensor_dtype(arg_type: Attribute) -> np.dtype[Any] | None:
    """The dtype of a bool, f16, f32 or f64 tensor type; ``None`` for any other type."""
    if not isinstance(arg_type, TensorType):
        return None
    return element_dtype(cast(TensorType[Attribute], arg_type).get_element_type())


def random_array(rng: np.random.Generator, arg_type: Attribute) -> Array:
    """Standard-normal values of a static f16/f32/f64 tensor type (booleans: coin flips;
    i32/i64/ui8 integers: 0, an index every non-empty axis has)."""
    dtype = tensor_dtype(arg_type)
    if dtype is None:
        raise DriverError(
            "error: --random-args makes bool, f16, f32, f64, i32, i64, ui8 or ui64 tensors, "
            f"not {arg_type}"
        )
    shape = tuple(cast(TensorType[Attribute], arg_type).get_shape())
    if any(dim < 0 for dim in shape):
        raise DriverError(f"error: --random-args needs static shapes, got {arg_type}")
    try:
        if dtype == np.bool_:
            return rng.random(size=shape) < 0.5
        if dtype.kind in "iu":
            return np.zeros(shape, dtype)
        return rng.standard_normal(size=shape).astype(dtype)
    except (MemoryError, ValueError) as err:  # ("array is too big" for a huge shape)
        raise DriverError(
            f"error: out of memory: --random-args cannot make a {arg_type} ({err})"
        ) from None


def find_function(module: ModuleOp, symbol: str | None) -> FuncOp:
    """The ``func.func`` named ``symbol`` (its ``@`` optional); without a name, ``@main``
    or the only function."""
    if symbol is not None and symbol.startswith("@"):
        symbol = symbol[1:]  # (`--symbol @main` names @main, as the IR writes it)
    functions = [op for op in module.walk() if isinstance(op, FuncOp)]
    names = [op.sym_name.data for op in functions]
    if symbol is None:
        if "main" in names:
            symbol = "main"
        elif len(functions) == 1:
            symbol = names[0]
        else:
            listed = ", ".join(f"@{name}" for name in names) or "none"
            stage = any(op.name == "llvm.func" for op in module.walk())
            why = (
                ": this is LLVM-stage IR, which tdsl-run does not interpret (it runs the "
                "tensordsl, fused and tiled stages: give it the IR before tdsl-lower-to-loops)"
            ) * stage
            raise DriverError(
                f"error: no @main function; choose one with --symbol (functions: {listed})" + why
            )
    function = run.find_function(module, symbol)
    if function.is_declaration:
        raise DriverError(f"error: @{symbol} is a declaration, it has no body to run")
    return function


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

    prog: ClassVar[str] = "tdsl-run"
    version_format: ClassVar[str] = (
        f"tdsl-run from tdsl version {__version__}, built on xDSL version {{xdsl_version}}"
    )

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
            help=(
                "name of the function to run, with or without its @ (default: @main, or "
                "the only function)"
            ),
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
        returned: object = run.run_function(prog, func.sym_name.data, *arrays)
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
        for index, arg_type in enumerate(arg_types):
            if tensor_dtype(arg_type) is None:
                raise DriverError(
                    f"error: argument #{index} of @{name} has type {arg_type}; "
                    "tdsl runs functions of bool, f16, f32, f64, i32, i64, ui8 and ui64 tensors"
                )
        if self.args.random_args is not None:
            rng = np.random.default_rng(self.args.random_args)
            return [random_array(rng, arg_type) for arg_type in arg_types]
        text: str = self.args.args or ""
        attrs: list[Attribute] = []
        spans: list[Span[str]] = []
        if text.strip():
            parser = LocatingParser(self.ctx, text, "args")  # (hex floats as their bits)

            def parse_one() -> Attribute:
                start = parser.pos
                try:
                    attr = parser.parse_attribute()
                except (ValueError, OverflowError, struct.error) as err:
                    # xDSL's check of a literal, or its packing of a number it never
                    # checked (out of range)
                    at = Span(start, max(start + 1, parser.pos), parser.lexer.input)
                    why = str(err) if isinstance(err, ValueError) else out_of_range(err)
                    raise DriverError(format_diagnostic(why, span_location(at))) from None
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
            if not isinstance(attr, DenseIntOrFPElementsAttr):
                raise DriverError(
                    format_diagnostic(
                        f"cannot pass {attr} as an argument: write dense<...> : tensor<...>",
                        span_location(spans[index]),
                    )
                )
            dense = cast(DenseIntOrFPElementsAttr[Any], attr)
            given = cast(Attribute, dense.type)
            if given != expected:
                raise DriverError(
                    format_diagnostic(
                        f"argument #{index} of @{name} has type {expected}, not {given}",
                        span_location(spans[index]),
                    )
                )
            arrays.append(attr_to_numpy(dense, expected))
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
