"""Fixtures for the interpreter tests: build a one-function module from Python."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

ELEMENT_TYPES: dict[np.dtype[Any], Attribute] = {
    np.dtype(np.float16): Float16Type(),
    np.dtype(np.float32): Float32Type(),
    np.dtype(np.float64): Float64Type(),
}

Built = SSAValue | Operation | Sequence[SSAValue | Operation]
BuildMain = Callable[..., ModuleOp]


def tensor_type_of(array: np.ndarray[Any, Any]) -> TensorType[Attribute]:
    """The tensor type of a NumPy array."""
    return TensorType(ELEMENT_TYPES[array.dtype], array.shape)


def build_main(arg_types: Sequence[Attribute], body: Callable[..., Built]) -> ModuleOp:
    """A verified module with ``@main(args) { return body(*args) }``.

    ``body`` gets the block arguments, creates ops (inserted implicitly) and
    returns the value(s) to return (an op returns all its results).
    """
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block):
        built = body(*block.args)
        if isinstance(built, Operation):
            values = list(built.results)
        else:
            items = list(built) if isinstance(built, Sequence) else [built]
            values = [SSAValue.get(v) for v in items]
        ReturnOp(*values)
    main = FuncOp("main", (list(arg_types), [v.type for v in values]), Region(block))
    module = ModuleOp([main])
    module.verify()
    return module


@pytest.fixture(scope="session")
def main_module() -> BuildMain:
    """``main_module(arg_types, body)``: see :func:`build_main`."""
    return build_main


def run_body(body: Callable[..., Built], *arrays: np.ndarray[Any, Any]) -> tuple[Any, ...]:
    """Build ``@main`` from ``body`` for the types of ``arrays`` and interpret it on them."""
    from tdsl.interpreters.run import run_function

    module = build_main([tensor_type_of(a) for a in arrays], body)
    return run_function(module, "main", *arrays)


@pytest.fixture(scope="session")
def run_main() -> Callable[..., tuple[Any, ...]]:
    """``run_main(body, *arrays)``: see :func:`run_body`."""
    return run_body


@pytest.fixture(scope="session")
def type_of() -> Callable[[np.ndarray[Any, Any]], TensorType[Attribute]]:
    """``type_of(array)``: the tensor type of an array."""
    return tensor_type_of
