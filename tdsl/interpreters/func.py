"""Interpreter implementations of ``func.func``, ``func.return`` and ``func.call``.

tdsl keeps its own copy rather than importing ``xdsl.interpreters.func``:
importing anything under ``xdsl.interpreters`` loads every interpreter xDSL
ships (riscv, affine, memref, ...), which costs most of a second.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_callable,
    impl_terminator,
    register_impls,
)
from xdsl.utils.exceptions import InterpretationError


@register_impls
class FuncFunctions(InterpreterFunctions):
    """Calls, returns and function bodies; a body-less ``func.func`` is an external call."""

    @impl_callable(func.FuncOp)
    def call_func(
        self, interpreter: Interpreter, op: func.FuncOp, args: PythonValues
    ) -> PythonValues:
        name = op.sym_name.data
        expected = len(op.function_type.inputs)
        if len(args) != expected:
            raise InterpretationError(
                f"@{name} takes {expected} argument(s), but was called with {len(args)}"
            )
        block = op.body.blocks.first
        if block is None or block.first_op is None:
            return interpreter.call_external(name, op, args)
        return interpreter.run_ssacfg_region(op.body, args, name)

    @impl_terminator(func.ReturnOp)
    def run_return(
        self, interpreter: Interpreter, op: func.ReturnOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()

    @impl(func.CallOp)
    def run_call(
        self, interpreter: Interpreter, op: func.CallOp, args: PythonValues
    ) -> PythonValues:
        return interpreter.call_op(op.callee, args)


__all__ = ["FuncFunctions"]
