"""Run a function of a tdsl module with the xDSL interpreter, on NumPy arrays.

This is the reference semantics of every stage: tensordsl IR, fused IR and
tiled IR all run here, and a lowering is right when they compute the same
values.

```python
from tdsl.interpreters.run import run_function
(y,) = run_function(module, "main", a, b)
```
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Attribute
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import InterpretationError

from tdsl.dialects.structured import StructuredOpInterface, element_dtype
from tdsl.dialects.tensordsl import TensorDSL, fmt_shape
from tdsl.errors import TdslCallError, TdslIRError
from tdsl.interpreters.func import FuncFunctions
from tdsl.interpreters.kernel import KernelFunctions
from tdsl.interpreters.tensordsl import TensorDSLFunctions, attr_to_numpy, structured_functions

Array = np.ndarray[Any, np.dtype[Any]]


def make_interpreter(module: ModuleOp) -> Interpreter:
    """An interpreter for ``module`` that knows the func, tensordsl and kernel ops,
    and every op of ``module`` that implements the structured-op interface."""
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    register_tdsl(interpreter, module)
    return interpreter


def register_tdsl(interpreter: Interpreter, module: ModuleOp) -> None:
    """Give ``interpreter`` the tensordsl and kernel ops, and every op of ``module`` that
    implements the structured-op interface (``func`` is the caller's)."""
    interpreter.register_implementations(TensorDSLFunctions())
    interpreter.register_implementations(KernelFunctions())
    known = set(TensorDSL.operations)
    others = {
        type(op)
        for op in module.walk()
        if isinstance(op, StructuredOpInterface) and type(op) not in known
    }
    if others:
        functions = structured_functions(sorted(others, key=lambda t: t.name))
        interpreter.register_implementations(functions())


def find_function(module: ModuleOp, name: str) -> FuncOp:
    """The ``func.func`` named ``name``, or :class:`~tdsl.errors.TdslCallError` listing the others."""
    op = SymbolTable.lookup_symbol(module, name)
    if isinstance(op, FuncOp):
        return op
    names = [f"@{f.sym_name.data}" for f in module.walk() if isinstance(f, FuncOp)]
    defined = ", ".join(names) if names else "no functions"
    raise TdslCallError(f"no function @{name} in the module (it defines {defined})")


def check_arguments(function: FuncOp, arrays: tuple[Any, ...]) -> tuple[Array, ...]:
    """The arguments as arrays, after checking them against ``function``'s type.

    Raises :class:`~tdsl.errors.TdslCallError` on a wrong count, shape or dtype.
    """
    name = function.sym_name.data
    params = function.function_type.inputs.data
    if len(arrays) != len(params):
        signature = ", ".join(str(p) for p in params)
        verb = "was" if len(arrays) == 1 else "were"
        raise TdslCallError(
            f"@{name} takes {len(params)} argument(s) ({signature}), but {len(arrays)} {verb} given"
        )
    block = function.body.blocks.first
    checked: list[Array] = []
    for index, (value, param) in enumerate(zip(arrays, params, strict=True)):
        hint = None if block is None else block.args[index].name_hint
        what = f"argument #{index}" + (f" (%{hint})" if hint else "") + f" of @{name}"
        if not isinstance(param, TensorType):
            raise TdslCallError(f"{what} has type {param}; only tensor parameters can be passed")
        tensor = cast(TensorType[Attribute], param)
        element = tensor.get_element_type()
        dtype = element_dtype(element)
        if dtype is None:
            raise TdslCallError(f"{what} has element type {element}, which tdsl cannot run")
        array = np.asarray(value)
        if array.dtype != dtype:
            raise TdslCallError(
                f"{what} must have dtype {dtype} (for {param}), got an array of dtype {array.dtype}"
            )
        shape = tuple(tensor.get_shape())
        if array.shape != shape:
            raise TdslCallError(
                f"{what} must have shape {fmt_shape(shape)} (for {param}), "
                f"got an array of shape {fmt_shape(array.shape)}"
            )
        checked.append(array)
    return tuple(checked)


_NO_FUNCTION = "Could not find interpretation function for op "
"""How xDSL's interpreter begins the error for an op it has no function for."""


def run_function(module: ModuleOp, name: str, *arrays: Any) -> tuple[Array, ...]:
    """Interpret ``@name`` of ``module`` on ``arrays`` and return its results.

    The arguments must match the function's parameter types exactly (count,
    shape and dtype), or :class:`~tdsl.errors.TdslCallError` is raised.  The
    results are arrays with the dtypes of the function's result types; a
    result never shares memory with an argument or with another result.
    """
    function = find_function(module, name)
    args = check_arguments(function, arrays)
    try:
        results = make_interpreter(module).call_op(function, args)
    except InterpretationError as err:
        # (an op it has no function for: named and located)
        name = str(err).removeprefix(_NO_FUNCTION)
        op = next((op for op in module.walk() if op.name == name), None)
        if op is None or not str(err).startswith(_NO_FUNCTION):
            raise
        raise TdslIRError(
            f"the interpreter cannot run '{name}': it runs the tensordsl, kernel and func "
            "ops (run the IR before it is lowered to loops, or compile it for a target)",
            op=op,
        ) from None
    fresh: list[Array] = []
    for value in results:
        array = np.asarray(value)
        if any(np.may_share_memory(array, other) for other in (*args, *fresh)):
            array = array.copy()
        fresh.append(array)
    return tuple(fresh)


__all__ = [
    "attr_to_numpy",
    "check_arguments",
    "find_function",
    "make_interpreter",
    "run_function",
]
