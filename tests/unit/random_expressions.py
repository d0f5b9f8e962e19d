"""Random well-typed expressions of the tdsl language, with NumPy's value of each.

The generator builds an expression tree of its own, renders it to text with as
few parentheses as the precedence rules allow, and evaluates the same tree with
NumPy: a reference that never goes through the code under test.  Used by the
frontend's property tests, the JIT's, and the Dask tests (``tests/unit`` is on the path
of every test module, as the directory of the root ``conftest.py``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

Shape = tuple[int, ...]
Array = np.ndarray[Any, np.dtype[Any]]
Value = Array | float

# --------------------------------------------------------------------------- the expression tree


@dataclass(frozen=True)
class Input:
    name: str


@dataclass(frozen=True)
class Lit:
    text: str
    value: float


@dataclass(frozen=True)
class Neg:
    operand: Node


@dataclass(frozen=True)
class Bin:
    op: str
    lhs: Node
    rhs: Node


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple[Node, ...]
    axis: int | None = None
    axis_given: bool = False
    keepdims: bool | None = None


Node = Input | Lit | Neg | Bin | Call

PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "@": 2}
LITERALS = [("2", 2.0), ("0.5", 0.5), (".25", 0.25), ("1e-3", 1e-3), ("3.0", 3.0), ("1.5E+1", 15.0)]
UNARY = ["relu", "exp", "log", "sqrt", "tanh", "sigmoid", "abs", "neg"]


def precedence(node: Node) -> int:
    if isinstance(node, Bin):
        return PRECEDENCE[node.op]
    return 3 if isinstance(node, Neg) else 4


def render(node: Node, order: list[str]) -> str:
    """Text with minimal parentheses; ``order`` collects input names as they appear."""
    match node:
        case Input(name=name):
            if name not in order:
                order.append(name)
            return name
        case Lit(text=text):
            return text
        case Neg(operand=operand):
            inner = render(operand, order)
            return f"-({inner})" if precedence(operand) < 3 else f"-{inner}"
        case Bin(op=op, lhs=lhs, rhs=rhs):
            p = PRECEDENCE[op]
            left = render(lhs, order)
            if precedence(lhs) < p:
                left = f"({left})"
            right = render(rhs, order)
            if precedence(rhs) <= p:
                right = f"({right})"
            return f"{left} {op} {right}"
        case Call(func=name, args=args, axis=axis, axis_given=axis_given, keepdims=keepdims):
            parts = [render(a, order) for a in args]
            if axis_given:
                parts.append(f"axis={axis}")
            if keepdims is not None:
                parts.append(f"keepdims={'true' if keepdims else 'False'}")
            return f"{name}({', '.join(parts)})"


def softmax(x: Array, axis: int) -> Array:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


NUMPY_UNARY: dict[str, Callable[[Any], Any]] = {
    "relu": lambda x: np.maximum(x, 0),
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "abs": np.abs,
    "neg": np.negative,
}
NUMPY_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "@": np.matmul,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "matmul": np.matmul,
}
NUMPY_REDUCE: dict[str, Callable[..., Any]] = {"sum": np.sum, "max": np.max, "mean": np.mean}
NUMPY_SCAN: dict[str, Callable[..., Any]] = {"cumsum": np.cumsum, "cumprod": np.cumprod}


def evaluate(
    node: Node, env: dict[str, Array], seen: Callable[[Value], None] | None = None
) -> Value:
    """NumPy's value of ``node``; literals stay Python floats (weak, NEP 50).
    ``seen``, if given, is called with the value of every node below and of ``node``."""
    value = _evaluate(node, env, seen)
    if seen is not None:
        seen(value)
    return value


def _evaluate(node: Node, env: dict[str, Array], seen: Callable[[Value], None] | None) -> Value:
    match node:
        case Input(name=name):
            return env[name]
        case Lit(value=value):
            return value
        case Neg(operand=operand):
            return np.negative(evaluate(operand, env, seen))
        case Bin(op=op, lhs=lhs, rhs=rhs):
            return NUMPY_BINARY[op](evaluate(lhs, env, seen), evaluate(rhs, env, seen))
        case Call(func=name, args=args, axis=axis, keepdims=keepdims):
            values = [evaluate(a, env, seen) for a in args]
            if name in NUMPY_UNARY:
                return NUMPY_UNARY[name](values[0])
            if name in NUMPY_BINARY:
                return NUMPY_BINARY[name](values[0], values[1])
            if name == "transpose":
                return np.transpose(values[0])
            if name == "softmax":
                return softmax(np.asarray(values[0]), -1 if axis is None else axis)
            if name in NUMPY_SCAN:
                return NUMPY_SCAN[name](values[0], axis=axis)
            return NUMPY_REDUCE[name](values[0], axis=axis, keepdims=bool(keepdims))
    raise AssertionError(node)


# --------------------------------------------------------------------------- generation


def matmul_operand_shapes(draw: st.DrawFn, shape: Shape, k: int) -> tuple[Shape, Shape]:
    """Operand shapes of a matmul whose result has ``shape`` (rank 1 or more), over a
    contracted extent ``k``: a vector times a matrix or a matrix times a vector for a
    1-d result, else a (batched) matrix times a matrix."""
    if len(shape) == 1 and draw(st.booleans()):
        return (k,), (k, shape[0])
    if len(shape) == 1:
        return (shape[0], k), (k,)
    return (*shape[:-1], k), (k, shape[-1])


@dataclass
class Generator:
    """Draws a well-typed expression of a wanted shape, creating inputs as needed."""

    draw: st.DrawFn
    dtypes: list[str]
    inputs: dict[str, tuple[Shape, str]] = field(default_factory=dict[str, tuple[Shape, str]])
    max_dim: int = 3

    def dim(self) -> int:
        return self.draw(st.integers(1, self.max_dim))

    def leaf(self, shape: Shape) -> Node:
        same = [n for n, (s, _) in self.inputs.items() if s == shape]
        if same and self.draw(st.booleans()):
            return Input(self.draw(st.sampled_from(same)))
        name = f"x{len(self.inputs)}"
        self.inputs[name] = (shape, self.draw(st.sampled_from(self.dtypes)))
        return Input(name)

    def broadcast_partner(self, shape: Shape) -> Shape:
        """A shape that broadcasts with ``shape`` to ``shape``."""
        keep = self.draw(st.integers(0, len(shape)))
        suffix = shape[len(shape) - keep :]
        return tuple(1 if self.draw(st.booleans()) else d for d in suffix)

    def expr(self, shape: Shape, depth: int) -> Node:
        if depth == 0:
            return self.leaf(shape)
        kinds = ["leaf", "unary", "minus", "binary", "binary", "transpose", "reduce"]
        if shape:
            kinds += ["softmax", "matmul", "scan"]
        kind = self.draw(st.sampled_from(kinds))
        sub = depth - 1
        if kind == "leaf":
            return self.leaf(shape)
        if kind == "unary":
            return Call(self.draw(st.sampled_from(UNARY)), (self.expr(shape, sub),))
        if kind == "minus":
            return Neg(self.expr(shape, sub))
        if kind == "binary":
            op = self.draw(st.sampled_from(["+", "-", "*", "/", "maximum", "minimum"]))
            full = self.expr(shape, sub)
            if self.draw(st.integers(0, 3)) == 0:
                other: Node = Lit(*self.draw(st.sampled_from(LITERALS)))
            else:
                other = self.expr(self.broadcast_partner(shape), sub)
            lhs, rhs = (full, other) if self.draw(st.booleans()) else (other, full)
            return Bin(op, lhs, rhs) if op in PRECEDENCE else Call(op, (lhs, rhs))
        if kind == "transpose":
            return Call("transpose", (self.expr(tuple(reversed(shape)), sub),))
        if kind == "softmax":
            given = self.draw(st.booleans())
            axis = self.draw(st.integers(-len(shape), len(shape) - 1)) if given else None
            return Call("softmax", (self.expr(shape, sub),), axis, given)
        if kind == "scan":
            # without an axis only on a 1-d tensor (flattening a larger one is refused)
            given = len(shape) > 1 or self.draw(st.booleans())
            axis = self.draw(st.integers(-len(shape), len(shape) - 1)) if given else None
            name = self.draw(st.sampled_from(sorted(NUMPY_SCAN)))
            return Call(name, (self.expr(shape, sub),), axis, given)
        if kind == "matmul":
            lhs_shape, rhs_shape = matmul_operand_shapes(self.draw, shape, self.dim())
            op = "@" if self.draw(st.booleans()) else "matmul"
            lhs, rhs = self.expr(lhs_shape, sub), self.expr(rhs_shape, sub)
            return Bin("@", lhs, rhs) if op == "@" else Call("matmul", (lhs, rhs))
        # A reduction producing `shape`: over a new axis, or over all axes into a 0-d.
        func_name = self.draw(st.sampled_from(["sum", "max", "mean"]))
        if not shape and self.draw(st.booleans()):
            operand_shape = tuple(self.dim() for _ in range(self.draw(st.integers(0, 2))))
            return Call(func_name, (self.expr(operand_shape, sub),))
        position = self.draw(st.integers(0, len(shape)))
        keepdims = self.draw(st.booleans()) and position < len(shape) and shape[position] == 1
        if keepdims:
            operand_shape = (*shape[:position], self.dim(), *shape[position + 1 :])
        else:
            operand_shape = (*shape[:position], self.dim(), *shape[position:])
        axis = position - len(operand_shape) if self.draw(st.booleans()) else position
        flag = keepdims if keepdims or self.draw(st.booleans()) else None
        return Call(func_name, (self.expr(operand_shape, sub),), axis, True, flag)


@dataclass(frozen=True)
class Case:
    text: str
    tree: Node
    order: list[str]
    shapes: dict[str, Shape]
    dtypes: dict[str, str]


@st.composite
def cases(
    draw: st.DrawFn, dtypes: tuple[str, ...] = ("f16", "f32", "f64"), max_dim: int = 3
) -> Case:
    """An expression, its input shapes (extents 1 to ``max_dim``) and dtypes."""
    generator = Generator(draw, list(dtypes), max_dim=max_dim)
    rank = draw(st.integers(0, 3))
    shape = tuple(generator.dim() for _ in range(rank))
    tree = generator.expr(shape, draw(st.integers(1, 4)))
    order: list[str] = []
    text = render(tree, order)
    shapes = {name: s for name, (s, _) in generator.inputs.items()}
    types = {name: d for name, (_, d) in generator.inputs.items()}
    return Case(text, tree, order, shapes, types)


def reference(case: Case, env: dict[str, Array]) -> Array:
    return reference_and_magnitude(case, env)[0]


def reference_and_magnitude(case: Case, env: dict[str, Array]) -> tuple[Array, float]:
    """NumPy's value of ``case``, and the largest finite magnitude of any value it
    computes on the way (inputs included): a result that cancels (``a - b`` of two
    values near 1) is off by the rounding of its operands, so its tolerance scales
    with them, not with it."""
    largest = [0.0]

    def seen(value: Value) -> None:
        finite = np.abs(np.asarray(value, dtype=np.float64))
        finite = finite[np.isfinite(finite)]
        if finite.size:
            largest[0] = max(largest[0], float(finite.max()))

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(evaluate(case.tree, env, seen)), largest[0]


NUMPY_OF = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def random_inputs(case: Case, seed: int) -> dict[str, Array]:
    rng = np.random.default_rng(seed)
    return {
        name: rng.uniform(0.5, 1.5, size=case.shapes[name]).astype(NUMPY_OF[case.dtypes[name]])
        for name in case.order
    }


def check(case: Case, arrays: dict[str, Array], got: Any) -> None:
    """``got`` equals NumPy's value of ``case`` on ``arrays``: its dtype and shape, nan
    where NumPy has nan, and values within a tolerance of the narrowest input dtype
    (tight when every input is f64, a few f16 ulps with an f16 input; sums may add
    in another order, and f16 values round once more or less on the way). The
    absolute tolerance scales with the largest value computed on the way: one f16
    ulp of 2 is 2e-3, which a result that cancels to near 0 keeps, and so is an
    f16 ulp of a value near 1 that ``log`` maps near 0 (``log(x1 * sigmoid(x0))``:
    NumPy's f16 ``sigmoid`` rounds at each step, 0.7495 where tdsl's, rounded once,
    is 0.75, and the logs differ by 6.5e-4); with an f16 input it is 1e-3 of that
    value, an ulp between 1 and 2."""
    want, scale = reference_and_magnitude(case, arrays)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, case.text
    narrowest = {case.dtypes[name] for name in case.order}
    if "f16" in narrowest:
        rtol, atol = 4e-3, 1e-3
    elif "f32" in narrowest:
        rtol, atol = 1e-4, 1e-5
    else:
        rtol, atol = 1e-9, 1e-12
    atol *= max(1.0, scale)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=case.text)
