"""A module printed, parsed back and printed again, in custom and in generic form
(``tests/unit`` is on ``sys.path`` through its ``conftest.py``)."""

from __future__ import annotations

import io

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.printer import Printer

from tdsl.dialects.kernel import Kernel
from tdsl.dialects.tensordsl import TensorDSL


def parse(text: str) -> ModuleOp:
    """``text`` parsed with the builtin, func, tensordsl and kernel dialects, verified."""
    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL, Kernel):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def assert_round_trips(module: ModuleOp) -> None:
    """The custom form parses back to itself, and so does the generic form."""
    text = str(module)
    assert str(parse(text)) == text
    generic = io.StringIO()
    Printer(generic, print_generic_format=True).print_op(module)
    assert str(parse(generic.getvalue())) == text
