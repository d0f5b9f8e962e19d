"""Differential test of integer programs: random well-typed expressions over ``int32`` and
``int64`` inputs, or ``uint8`` ones (with ``int32`` at times), their extremes included,
with integer literals (weak, NEP 50) and powers by them,
wrapping arithmetic, ``//`` and ``%`` by zero and by -1, shifts by counts outside
``[0, bits)``, bitwise ops, comparisons, ``where``, reductions, ``argmax``/``argmin``
(of floats with nan too), integer ``matmul`` and ``astype`` from floats (nan and
out-of-range values too), compiled on the numpy and native targets (at budgets that
tile the reductions) and run by the interpreter.

The reference is NumPy itself: the text is also valid NumPy (every name drawn is a
NumPy function of the same name, but ``neg``, which is ``np.negative``; and Python's
integer literals are NumPy 2's weak scalars), so it is evaluated with NumPy's
functions as the namespace.  Every target must give NumPy's dtype and
shape and exactly its values.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from all_targets import TARGETS
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from xdsl.dialects.func import FuncOp

from tdsl.frontend import to_tensordsl
from tdsl.interpreters.run import run_function
from tdsl.jit import JITTensorKernel

Shape = tuple[int, ...]
Array = np.ndarray[Any, Any]

BINARY = {
    "+": "maximum",
    "-": "minimum",
    "*": "fmod",
    "//": "floor_divide",
    "%": "remainder",
    "&": "bitwise_and",
    "|": "bitwise_or",
    "^": "bitwise_xor",
    "<<": "left_shift",
    ">>": "right_shift",
}
"""Integer operators, each with a function drawn in its place at times: its own
(``floor_divide`` for ``//``), or another function of two integers (``maximum``)."""
UNARY = ["abs", "neg", "square", "sign", "invert", "copy"]
REDUCTIONS = ["sum", "prod", "max", "min"]
COMPARE = ["<", "<=", "==", "!=", ">=", ">"]
LITERALS = ["0", "1", "-1", "2", "3", "7", "31", "63", "64", "-65", "100"]
U8_LITERALS = ["0", "1", "2", "3", "7", "8", "9", "100", "255"]
"""Literals of programs with ``uint8``: a negative one or one beyond 255 is an error
there (NumPy 2's ``OverflowError``), tested on its own."""
DTYPE_SETS = [("int32", "int64"), ("uint8",), ("uint64",), ("uint8", "uint64"), ("uint8", "int32")]
"""The dtypes of a program's integer inputs.  Where unsigned and signed ones mix, only
``max`` and ``min`` reduce: a ``sum`` of ``uint8`` is ``uint64``, which with a signed
integer is ``float64`` (and compares with it only after a conversion)."""


@dataclass
class Generator:
    draw: st.DrawFn
    dtypes: tuple[str, ...] = ("int32", "int64")
    inputs: dict[str, tuple[Shape, str]] = field(default_factory=dict[str, tuple[Shape, str]])

    @property
    def unsigned(self) -> bool:
        return any(d.startswith("u") for d in self.dtypes)

    @property
    def mixed(self) -> bool:
        return self.unsigned and not all(d.startswith("u") for d in self.dtypes)

    def dim(self) -> int:
        return self.draw(st.integers(1, 4))

    def leaf(self, shape: Shape, dtype: str) -> str:
        same = [n for n, (s, d) in self.inputs.items() if s == shape and d == dtype]
        if same and self.draw(st.booleans()):
            return self.draw(st.sampled_from(same))
        name = f"{dtype[0]}{len(self.inputs)}"
        self.inputs[name] = (shape, dtype)
        return name

    def partner(self, shape: Shape) -> Shape:
        keep = self.draw(st.integers(0, len(shape)))
        return tuple(1 if self.draw(st.booleans()) else d for d in shape[len(shape) - keep :])

    def integer(self, shape: Shape, depth: int) -> str:
        """An integer expression of ``shape``."""
        if depth == 0:
            return self.leaf(shape, self.draw(st.sampled_from(self.dtypes)))
        kinds = ["leaf", "binary", "binary", "binary", "unary", "where"]
        kinds += ["reduce", "astype", "literal", "arg", "power"] + (["matmul"] if shape else [])
        kind = self.draw(st.sampled_from(kinds))
        sub = depth - 1
        if kind == "leaf":
            return self.leaf(shape, self.draw(st.sampled_from(self.dtypes)))
        if kind in ("binary", "literal"):
            op = self.draw(st.sampled_from(sorted(BINARY)))
            lhs = self.integer(shape, sub)
            rhs = (
                self.draw(st.sampled_from(U8_LITERALS if self.unsigned else LITERALS))
                if kind == "literal"
                else self.integer(self.partner(shape), sub)
            )
            if self.draw(st.booleans()):
                lhs, rhs = rhs, lhs
            if self.draw(st.booleans()):
                return f"({lhs} {op} {rhs})"
            return f"{BINARY[op]}({lhs}, {rhs})"
        if kind == "unary":
            name = self.draw(st.sampled_from(UNARY))
            operand = self.integer(shape, sub)
            if name == "neg" and self.draw(st.booleans()):
                return f"(-{operand})"
            if name == "invert" and self.draw(st.booleans()):
                return f"(~{operand})"
            return f"{name}({operand})"
        if kind == "power":  # by a literal: NumPy's integer power, wrapping
            exponent = self.draw(st.sampled_from(["0", "1", "2", "3", "5", "13"]))
            return f"({self.integer(shape, sub)} ** {exponent})"
        if kind == "where":
            cond = self.compare(self.partner(shape), sub)
            a, b = self.integer(shape, sub), self.integer(self.partner(shape), sub)
            return f"where({cond}, {a}, {b})"
        if kind == "astype":
            floats = f"({self.leaf(shape, 'float64')} * {self.draw(st.sampled_from(['1', '1e9', '1e19']))})"
            return f"astype({floats}, {self.draw(st.sampled_from(self.dtypes))})"
        if kind == "matmul":
            k = self.dim()
            lhs = self.integer((*shape[:-1], k) if len(shape) > 1 else (k,), sub)
            rhs = self.integer((k, shape[-1]), sub)
            return f"({lhs} @ {rhs})"
        position = self.draw(st.integers(0, len(shape)))
        operand = (*shape[:position], self.dim(), *shape[position:])
        if kind == "arg":  # an index (int64) of the first extreme, nan or not
            name = self.draw(st.sampled_from(["argmax", "argmin"]))
            values = self.integer(operand, sub)
            if self.draw(st.booleans()):
                values = f"({self.leaf(operand, 'float64')} * {values})"
            index = f"{name}({values}, axis={position})"
            if self.unsigned and not self.mixed:  # int64 with uint64 is float64: convert
                return f"astype({index}, {self.draw(st.sampled_from(self.dtypes))})"
            return index
        name = self.draw(st.sampled_from(REDUCTIONS[2:] if self.mixed else REDUCTIONS))
        return f"{name}({self.integer(operand, sub)}, axis={position})"

    def compare(self, shape: Shape, depth: int) -> str:
        op = self.draw(st.sampled_from(COMPARE))
        return f"({self.integer(shape, depth)} {op} {self.integer(self.partner(shape), depth)})"


@dataclass(frozen=True)
class Case:
    text: str
    shapes: dict[str, Shape]
    dtypes: dict[str, str]
    budget: int


@st.composite
def cases(draw: st.DrawFn) -> Case:
    generator = Generator(draw, draw(st.sampled_from(DTYPE_SETS)))
    shape = tuple(generator.dim() for _ in range(draw(st.integers(0, 2))))
    text = generator.integer(shape, draw(st.integers(1, 4)))
    if draw(st.integers(0, 4)) == 0:  # a float result of integers: NumPy's promotion
        text = draw(st.sampled_from([f"({text} / 2)", f"mean({text})", f"({text} * 0.5)"]))
    shapes = {n: s for n, (s, _) in generator.inputs.items()}
    dtypes = {n: d for n, (_, d) in generator.inputs.items()}
    return Case(text, shapes, dtypes, draw(st.sampled_from([16, 256, 1_000_000])))


def inputs(case: Case, names: tuple[str, ...], seed: int) -> list[Array]:
    """Values small and extreme: each array mixes small integers with the dtype's bounds
    (and, for floats, nan, infinities and halves)."""
    rng = np.random.default_rng(seed)
    out: list[Array] = []
    for name in names:
        shape, dtype = case.shapes[name], np.dtype(case.dtypes[name])
        if dtype.kind == "f":
            pool = np.array([np.nan, np.inf, -np.inf, 0.5, -2.5, 3.0, -0.0, 2.0**31, 2.0**63])
            values = np.where(
                rng.random(shape) < 0.5, rng.choice(pool, shape), rng.normal(0, 4, shape)
            )
        else:
            info = np.iinfo(dtype)
            wrap = 1 << (8 * dtype.itemsize)  # -1 of an unsigned dtype is its largest
            bounds = [info.min, info.max, info.min + 1, -1, 0, 1, 2**20]
            pool = np.array([v % wrap if dtype.kind == "u" else v for v in bounds], dtype)
            small = rng.integers(-9, 9, shape).astype(dtype)
            values = np.where(rng.random(shape) < 0.3, rng.choice(pool, shape), small)
        out.append(np.asarray(values).astype(dtype))
    return out


NUMPY_NAMES: dict[str, Any] = {
    **{
        name: getattr(np, name) for name in [*BINARY.values(), *UNARY, *REDUCTIONS] if name != "neg"
    },
    "neg": np.negative,
    "where": np.where,
    "mean": np.mean,
    "argmax": np.argmax,
    "argmin": np.argmin,
    "astype": np.astype,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint64": np.uint64,
}


def numpy_value(case: Case, arrays: dict[str, Array]) -> Array:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(eval(case.text, dict(NUMPY_NAMES), dict(arrays)))


def agree(got: Array, want: Array, what: str) -> None:
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    if want.dtype.kind == "f":  # a float result of integers: f64 rounding
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_integer_programs_compute_numpys_values(target: str, case: Case, seed: int) -> None:
    note(f"{case.text}  shapes={case.shapes} dtypes={case.dtypes}")
    names = tuple(case.shapes)
    arrays = dict(zip(names, inputs(case, names, seed), strict=True))
    want = numpy_value(case, arrays)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if target == "interpreter":
            module = to_tensordsl(case.text, shapes=case.shapes, dtypes=case.dtypes)
            main = next(op for op in module.walk() if isinstance(op, FuncOp))
            order = [arg.name_hint for arg in main.args]
            (got,) = run_function(module, "main", *(arrays[n] for n in order if n))
        else:
            jit = JITTensorKernel(memory_budget=case.budget, threads=1, target=target)
            got = jit.compile(case.text, case.shapes, case.dtypes)(**arrays)
    agree(np.asarray(got), want, f"{target}: {case.text}")
