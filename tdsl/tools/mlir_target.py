"""The ``mlir`` target of tdsl's drivers: xDSL's, with float constants printed exactly.

xDSL 0.75 prints nan, inf and some whole numbers (``1234567.0``) in dense
float attributes as bare hex, which parses back as an integer bit pattern, and
folds ``[0.0, -0.0]`` into a splat.  ``tensordsl.constant``'s custom form
avoids that itself; this printer does the same for every dense float
attribute, so ``--print-op-generic`` output reads back to the same values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, cast

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    ModuleOp,
)
from xdsl.ir import Attribute
from xdsl.targets.mlir import MLIRTarget

from tdsl.ir_text import UniqueNamesPrinter


def _is_float_dense(attribute: Attribute) -> bool:
    if not isinstance(attribute, DenseIntOrFPElementsAttr):
        return False
    element = cast(Attribute, cast(DenseIntOrFPElementsAttr, attribute).get_element_type())
    return isinstance(element, Float16Type | Float32Type | Float64Type)


class ExactFloatPrinter(UniqueNamesPrinter):
    """A printer whose dense float attributes always read back bit-exact (and whose SSA
    names are unique)."""

    def print_attribute(self, attribute: Attribute) -> None:
        if _is_float_dense(attribute):
            # imported here: the dialect (and NumPy) load only for IR that has such
            # constants, so that printing an empty module stays as cheap as xdsl-opt's
            from tdsl.dialects.tensordsl import dense_to_text

            self.print_string(dense_to_text(cast(DenseIntOrFPElementsAttr, attribute)))
        else:
            super().print_attribute(attribute)


@dataclass(frozen=True)
class ExactMLIRTarget(MLIRTarget):
    """``-t mlir`` (the default) printing with :class:`ExactFloatPrinter`."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.syntax_highlight:
            super().emit(ctx, module, output)
            return
        printer = ExactFloatPrinter(
            stream=output,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)
