"""Differential test: the interpreter, the numpy target and the native target agree.

Random well-typed expressions over the whole op set (every function of the
language, drawn from the frontend's table, with the operators and weak
literals), on random small shapes, f32 and f64 (half the cases mixing the two,
as NumPy promotes them), boolean inputs included, are
run three ways: the xDSL interpreter on the tensordsl IR (the reference
semantics), and the JIT's numpy and native targets at a random memory budget
(so groups are fused, split and tiled differently) and thread count.  The
targets must give the interpreter's shapes and dtypes, the same nan and
infinity positions, equal booleans, and values within the tolerance of the
dtype (scaled by the result's magnitude: sums may add in another order, and
the native target's exp and log are polynomials within 2 ulp).

The generator knows the op families by their classes (``UnaryOp``,
``BinaryOp``, ``CompareOp``, ``LogicalOp``, ``ReductionOp``, ``RowLocalOp``,
...), not op by op: an op added to the dialect with a ``FUNCTION`` is drawn
here without an edit, and :func:`test_every_function_is_drawn` fails if a
function fits no family.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from random_expressions import matmul_operand_shapes

from tdsl.dialects import tensordsl as td
from tdsl.frontend import to_tensordsl
from tdsl.frontend.ir_gen import FUNCTIONS
from tdsl.jit import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

run_mod = pytest.importorskip("tdsl.interpreters.run")

Shape = tuple[int, ...]
Array = np.ndarray[Any, np.dtype[Any]]

INTEGER = sorted(n for n, f in FUNCTIONS.items() if issubclass(f.op, td.NO_FLOATS))
"""Functions of integers (and booleans) only: bit by bit and shifts."""
PERIODIC = frozenset({"sin", "cos", "tan"})
"""Functions whose result an ulp of a large argument changes: drawn on bounded ones."""
BOOL_UNARY = sorted(n for n, f in FUNCTIONS.items() if issubclass(f.op, td.NotOp))
CLASSIFY = sorted(n for n, f in FUNCTIONS.items() if issubclass(f.op, td.ClassifyOp))
FLOAT_UNARY = sorted(
    n
    for n, f in FUNCTIONS.items()
    if issubclass(f.op, td.UnaryOp) and n not in BOOL_UNARY + CLASSIFY + INTEGER
)
COMPARE = sorted(n for n, f in FUNCTIONS.items() if issubclass(f.op, td.CompareOp))
LOGICAL = sorted(n for n, f in FUNCTIONS.items() if issubclass(f.op, td.LogicalOp))
FLOAT_BINARY = sorted(
    n
    for n, f in FUNCTIONS.items()
    if issubclass(f.op, td.BinaryOp) and n not in COMPARE + LOGICAL + INTEGER
)
TRUTH = sorted(n for n, f in FUNCTIONS.items() if issubclass(f.op, td.LogicalReductionOp))
REDUCTIONS = sorted(
    n for n, f in FUNCTIONS.items() if issubclass(f.op, td.ReductionOp) and n not in TRUTH
)
ROW_LOCAL = sorted(n for n, f in FUNCTIONS.items() if issubclass(f.op, td.RowLocalOp))
SCANS = sorted(n for n, f in FUNCTIONS.items() if issubclass(f.op, td.ScanOp))
OTHERS = {
    "matmul",
    "transpose",
    "where",
    "clip",
    "expand_dims",
    "squeeze",
    "broadcast_to",
    "reshape",
    "ravel",
    "concatenate",
    "stack",
    "hstack",
    "vstack",
    "split",
    "array_split",
    "take",
    "swapaxes",
    "moveaxis",
    "einsum",
    "zeros",
    "ones",
    "full",
    "arange",
    "tri",
    "eye",
    "tril",
    "triu",
    "astype",
    "argmax",
    "argmin",
}
FAMILIES = [
    INTEGER,
    BOOL_UNARY,
    CLASSIFY,
    FLOAT_UNARY,
    COMPARE,
    LOGICAL,
    FLOAT_BINARY,
    TRUTH,
    REDUCTIONS,
    ROW_LOCAL,
    SCANS,
]

OPERATORS = {
    n: f.op.OPERATOR for n, f in FUNCTIONS.items() if getattr(f.op, "OPERATOR", None) is not None
}
SIGN_OF_SECOND = {"copysign"}
"""Functions whose result has the sign bit of their second operand."""
LITERALS = ["2", "0.5", "3.0", "1e-3", "1.5", "0.25"]


def test_every_function_is_drawn() -> None:
    drawn = set(OTHERS).union(*FAMILIES)
    assert set(FUNCTIONS) == drawn, f"not drawn: {sorted(set(FUNCTIONS) - drawn)}"
    assert all(
        FUNCTIONS[n].arity == 1 for n in FLOAT_UNARY + BOOL_UNARY + CLASSIFY + ROW_LOCAL + SCANS
    )
    assert all(FUNCTIONS[n].arity == 2 for n in FLOAT_BINARY + COMPARE + LOGICAL)
    assert all(FUNCTIONS[n].arity in (1, 2) for n in INTEGER)


@dataclass
class Generator:
    """Draws expression text of a wanted shape and kind (float or bool)."""

    draw: st.DrawFn
    dtype: str
    mixed: bool = False
    """Whether each new float input draws its own dtype (f32 or f64): promotion, and
    f32 values stored and read back in f64 results."""
    inputs: dict[str, tuple[Shape, str]] = field(default_factory=dict[str, tuple[Shape, str]])
    bounds: dict[str, int] = field(default_factory=dict[str, int])
    """The extent each integer (index) input indexes: its values lie in ``[-n, n)``."""

    def dim(self) -> int:
        return self.draw(st.integers(1, 6))

    def leaf(self, shape: Shape, boolean: bool) -> str:
        if boolean:
            dtype = "bool"
        elif self.mixed:
            dtype = self.draw(st.sampled_from(["f32", "f64"]))
        else:
            dtype = self.dtype
        same = [n for n, (s, d) in self.inputs.items() if s == shape and d == dtype]
        if same and self.draw(st.booleans()):
            return self.draw(st.sampled_from(same))
        name = f"x{len(self.inputs)}"
        self.inputs[name] = (shape, dtype)
        return name

    def partner(self, shape: Shape) -> Shape:
        """A shape that broadcasts with ``shape`` to ``shape``."""
        keep = self.draw(st.integers(0, len(shape)))
        suffix = shape[len(shape) - keep :]
        return tuple(1 if self.draw(st.booleans()) else d for d in suffix)

    def binary(self, name: str, lhs: str, rhs: str) -> str:
        if name in OPERATORS and self.draw(st.booleans()):
            return f"({lhs} {OPERATORS[name]} {rhs})"
        return f"{name}({lhs}, {rhs})"

    def boolean(self, shape: Shape, depth: int) -> str:
        kinds = ["leaf", "compare", "compare", "logical", "not", "classify", "truth"]
        kind = self.draw(st.sampled_from(kinds))
        if depth == 0 or kind == "leaf":
            return self.leaf(shape, True)
        if kind == "classify":
            return f"{self.draw(st.sampled_from(CLASSIFY))}({self.float(shape, depth - 1)})"
        if kind == "truth":  # all/any over one more axis, of booleans or of floats
            name = self.draw(st.sampled_from(TRUTH))
            position = self.draw(st.integers(0, len(shape)))
            operand_shape = (*shape[:position], self.dim(), *shape[position:])
            operand = (
                self.boolean(operand_shape, depth - 1)
                if self.draw(st.booleans())
                else self.float(operand_shape, depth - 1)
            )
            return f"{name}({operand}, axis={position})"
        if kind == "compare":
            lhs, rhs = self.float(shape, depth - 1), self.float(self.partner(shape), depth - 1)
            return self.binary(self.draw(st.sampled_from(COMPARE)), lhs, rhs)
        if kind == "logical":
            lhs, rhs = self.boolean(shape, depth - 1), self.boolean(self.partner(shape), depth - 1)
            return self.binary(self.draw(st.sampled_from(LOGICAL)), lhs, rhs)
        operand = self.boolean(shape, depth - 1)
        return f"~{operand}" if self.draw(st.booleans()) else f"logical_not({operand})"

    def float(self, shape: Shape, depth: int) -> str:
        if depth == 0:
            return self.leaf(shape, False)
        kinds = ["leaf", "unary", "unary", "binary", "binary", "where", "reduce", "transpose"]
        kinds += ["clip", "view", "created", "integral"] + (["einsum"] if len(shape) <= 2 else [])
        if shape:
            kinds += ["row", "matmul", "scan", "sliced", "reshaped", "joined", "gathered"]
        kind = self.draw(st.sampled_from(kinds))
        sub = depth - 1
        if kind == "leaf":
            return self.leaf(shape, False)
        if kind == "unary":
            operand = self.float(shape, sub)
            name = self.draw(st.sampled_from(FLOAT_UNARY))
            if name in PERIODIC:
                # tan(exp(24)): an ulp of the argument (the native exp's, or NumPy's
                # own SIMD functions') moves the result by 1e-5: bound the argument
                operand = f"clip({operand}, -100.0, 100.0)"
            return (
                f"-{operand}"
                if name == "neg" and self.draw(st.booleans())
                else (f"{name}({operand})")
            )
        if kind == "binary":
            name = self.draw(st.sampled_from(FLOAT_BINARY))
            full = self.float(shape, sub)
            if name in SIGN_OF_SECOND:
                # the sign bit of a nan is unspecified (x86 makes -nan, libm +nan):
                # the sign comes from an input, never nan
                return self.binary(name, full, self.leaf(self.partner(shape), False))
            if self.draw(st.integers(0, 3)) == 0:
                other = self.draw(st.sampled_from(LITERALS))
            else:
                other = self.float(self.partner(shape), sub)
            lhs, rhs = (full, other) if self.draw(st.booleans()) else (other, full)
            return self.binary(name, lhs, rhs)
        if kind == "where":
            cond = self.boolean(self.partner(shape), sub)
            return (
                f"where({cond}, {self.float(shape, sub)}, {self.float(self.partner(shape), sub)})"
            )
        if kind == "transpose":
            return f"transpose({self.float(tuple(reversed(shape)), sub)})"
        if kind == "view":
            return self.view(shape, sub)
        if kind == "sliced":
            return self.sliced(shape, sub)
        if kind == "reshaped":
            return self.reshaped(shape, sub)
        if kind == "joined":
            return self.joined(shape, sub)
        if kind == "gathered":
            return self.gathered(shape, sub)
        if kind == "einsum":
            return self.einsum(shape, sub)
        if kind == "created":
            return self.created(shape, sub)
        if kind == "integral":  # integers made floats: a conversion, or NumPy's promotion
            integers = self.integer(shape, sub)
            form = self.draw(st.sampled_from(["astype({}, {})", "({} / 2)", "({} * 0.5)"]))
            return form.format(integers, self.dtype if self.draw(st.booleans()) else "f64")
        if kind == "clip":
            bounds = [
                self.draw(st.sampled_from(LITERALS))
                if self.draw(st.booleans())
                else self.float(self.partner(shape), sub)
                for _ in range(2)
            ]
            return f"clip({self.float(shape, sub)}, {bounds[0]}, {bounds[1]})"
        if kind == "row":
            name = self.draw(st.sampled_from(ROW_LOCAL))
            operand = self.float(shape, sub)
            if self.draw(st.booleans()):
                return f"{name}({operand})"
            return f"{name}({operand}, axis={self.draw(st.integers(-len(shape), len(shape) - 1))})"
        if kind == "scan":
            name = self.draw(st.sampled_from(SCANS))
            operand = self.float(shape, sub)
            if len(shape) == 1 and self.draw(st.booleans()):
                return f"{name}({operand})"
            return f"{name}({operand}, axis={self.draw(st.integers(-len(shape), len(shape) - 1))})"
        if kind == "matmul":
            lhs_shape, rhs_shape = matmul_operand_shapes(self.draw, shape, self.dim())
            lhs, rhs = self.float(lhs_shape, sub), self.float(rhs_shape, sub)
            return f"({lhs} @ {rhs})" if self.draw(st.booleans()) else f"matmul({lhs}, {rhs})"
        name = self.draw(st.sampled_from(REDUCTIONS))
        if not shape and self.draw(st.booleans()):
            operand_shape = tuple(self.dim() for _ in range(self.draw(st.integers(1, 2))))
            return f"{name}({self.float(operand_shape, sub)})"
        position = self.draw(st.integers(0, len(shape)))
        keepdims = self.draw(st.booleans()) and position < len(shape) and shape[position] == 1
        if keepdims:
            operand_shape = (*shape[:position], self.dim(), *shape[position + 1 :])
        else:
            operand_shape = (*shape[:position], self.dim(), *shape[position:])
        flag = ", keepdims=true" if keepdims else ""
        return f"{name}({self.float(operand_shape, sub)}, axis={position}{flag})"

    def integer(self, shape: Shape, depth: int) -> str:
        """An ``i32``/``i64`` expression: integer inputs and literals, the operators and
        functions of integers (wrapping, ``//`` and ``%`` by zero, shifts by any count),
        reductions, comparisons in ``where``, and ``astype`` of floats."""
        kinds = ["leaf", "binary", "binary", "unary", "reduce", "cast", "arg"]
        kind = self.draw(st.sampled_from(kinds))
        if depth == 0 or kind == "leaf":
            name = f"n{len(self.inputs)}"
            self.inputs[name] = (shape, self.draw(st.sampled_from(["i32", "i64"])))
            self.bounds[name] = 50
            return name
        sub = depth - 1
        if kind == "binary":
            names = [n for n in INTEGER if FUNCTIONS[n].arity == 2]
            name = self.draw(st.sampled_from([*names, "floor_divide", "remainder", "add"]))
            lhs = self.integer(shape, sub)
            rhs = self.draw(st.sampled_from(["3", "-1", "0", "70"]))
            if self.draw(st.booleans()):
                rhs = self.integer(self.partner(shape), sub)
            operator = {"add": "+"}.get(name, OPERATORS.get(name))
            if operator is not None and self.draw(st.booleans()):
                return f"({lhs} {operator} {rhs})"
            return f"{name}({lhs}, {rhs})" if name != "add" else f"({lhs} + {rhs})"
        if kind == "unary":
            name = self.draw(st.sampled_from(["invert", "abs", "neg", "square", "sign"]))
            return f"{name}({self.integer(shape, sub)})"
        if kind == "cast":
            return f"astype({self.float(shape, sub)}, {self.draw(st.sampled_from(['i32', 'i64']))})"
        position = self.draw(st.integers(0, len(shape)))
        operand = (*shape[:position], self.dim(), *shape[position:])
        if kind == "arg":  # the index of the extreme (an int64), of floats or integers
            name = self.draw(st.sampled_from(["argmax", "argmin"]))
            values = (
                self.float(operand, sub) if self.draw(st.booleans()) else self.integer(operand, sub)
            )
            return f"{name}({values}, axis={position})"
        name = self.draw(st.sampled_from(["sum", "max", "min", "prod"]))
        return f"{name}({self.integer(operand, sub)}, axis={position})"

    def created(self, shape: Shape, depth: int) -> str:
        """A creation function giving ``shape`` (float64): ``zeros``, ``ones``, ``full``,
        ``arange`` (1-d), ``tri`` and ``eye`` (2-d), or ``tril``/``triu`` of an operand."""
        rank = len(shape)
        names = ["zeros", "ones", "full"] + (["arange"] if rank == 1 else [])
        names += ["tri", "eye"] if rank == 2 else []
        names += ["tril", "triu"] if rank >= 2 else []
        name = self.draw(st.sampled_from(names))
        k = self.draw(st.integers(-2, 2))
        dims = "(" + "".join(f"{n}, " for n in shape) + ")"
        if name in ("zeros", "ones"):
            return f"{name}({dims})"
        if name == "full":
            value = self.draw(st.sampled_from(LITERALS))
            return f"full({dims}, {value if '.' in value or 'e' in value else value + '.0'})"
        if name == "arange":
            return f"arange({k + 0.5}, {shape[0] + k + 0.5})"
        if name in ("tri", "eye"):
            return f"{name}({shape[0]}, {shape[1]}, {k})"
        return f"{name}({self.float(shape, depth)}, {k})"

    def einsum(self, shape: Shape, depth: int) -> str:
        """An ``einsum`` giving ``shape`` (rank 0 to 2): a contraction, a transposed one,
        an outer product or a sum, by the letters of the result."""
        k = self.dim()
        out = "ij"[: len(shape)]
        forms = [
            ("".join([*out[:1], "k"]), "".join(["k", *out[1:]])),  # ik,kj / k,kj / ik,k
            ("".join(["k", *out[:1]]), "".join([*out[1:], "k"])),  # ki,jk: transposed
        ]
        if len(shape) == 2:
            forms.append(("i", "j"))  # an outer product
        left, right = self.draw(st.sampled_from(forms))
        extent = {"k": k, **dict(zip(out, shape, strict=True))}
        if self.draw(st.booleans()):  # one operand, summed over k
            term = self.draw(st.sampled_from([out + "k", "k" + out[::-1]]))
            operand = self.float(tuple(extent[c] for c in term), depth)
            return f"einsum('{term}->{out}', {operand})"
        a = self.float(tuple(extent[c] for c in left), depth)
        b = self.float(tuple(extent[c] for c in right), depth)
        return f"einsum('{left},{right}->{out}', {a}, {b})"

    def sliced(self, shape: Shape, depth: int) -> str:
        """A subscript of an operand giving ``shape``: per axis a slice (steps 1, 2, -1,
        -3; bounds positive, negative or left out), at times after an integer index (an
        axis dropped), or ``None`` for an axis of extent 1."""
        parts: list[str] = []
        operand: list[int] = []
        for n in shape:
            choice = self.draw(st.integers(0, 4))
            if n == 1 and choice == 0:
                parts.append("None")
                continue
            if choice == 1:
                m = self.dim()
                parts.append(str(self.draw(st.integers(-m, m - 1))))
                operand.append(m)
            step = self.draw(st.sampled_from([1, 1, 2, -1, -3]))
            extra = self.draw(st.integers(0, 3))
            skip = self.draw(st.integers(0, extra))
            m = (n - 1) * abs(step) + 1 + extra if n else extra
            if n == 0:
                parts.append(f"{m}:")
            else:
                first = skip if step > 0 else m - 1 - skip
                stop = first + (n - 1) * step + (1 if step > 0 else -1)
                shown = first - m if self.draw(st.booleans()) else first
                stop_text = "" if stop < 0 or (stop == m and self.draw(st.booleans())) else stop
                parts.append(f"{shown}:{stop_text}" + ("" if step == 1 else f":{step}"))
            operand.append(m)
        return f"({self.float(tuple(operand), depth)})[{', '.join(parts)}]"

    def gathered(self, shape: Shape, depth: int) -> str:
        """A gather giving ``shape``: ``take`` along an axis, or ``a[idx]`` along the first,
        by a new 1-d integer input whose values (negative ones too) lie in the axis."""
        axis = self.draw(st.integers(0, len(shape) - 1))
        extent = self.dim()
        operand = (*shape[:axis], extent, *shape[axis + 1 :])
        name = f"i{len(self.inputs)}"
        self.inputs[name] = ((shape[axis],), self.draw(st.sampled_from(["i32", "i64"])))
        self.bounds[name] = extent
        text = self.float(operand, depth)
        if axis == 0 and self.draw(st.booleans()):
            return f"({text})[{name}]"
        return f"take({text}, {name}, axis={axis})"

    def joined(self, shape: Shape, depth: int) -> str:
        """A join giving ``shape``: ``concatenate`` (a tuple or a list) of two or three
        parts along an axis, ``stack`` of as many operands as an extent, ``hstack`` /
        ``vstack`` of 2-d parts, or a part of a ``split`` or ``array_split``."""
        rank = len(shape)
        axis = self.draw(st.integers(0, rank - 1))
        joins = ["concatenate", "stack", "split", "array_split"]
        name = self.draw(st.sampled_from(joins + (["hstack", "vstack"] if rank == 2 else [])))
        if name in ("split", "array_split"):  # a part of a split operand
            count = self.draw(st.integers(1, 3))
            extra = self.draw(st.integers(0, count - 1)) if name == "array_split" else 0
            operand = (*shape[:axis], shape[axis] * count + extra, *shape[axis + 1 :])
            pick = self.draw(st.integers(extra, count - 1))  # the parts of `shape`
            return f"{name}({self.float(operand, depth)}, {count}, axis={axis})[{pick}]"
        if name == "stack" and 1 <= shape[axis] <= 3:  # (NumPy stacks at least one)
            part = (*shape[:axis], *shape[axis + 1 :])
            items = [self.float(part, depth) for _ in range(shape[axis])]
            return f"stack(({', '.join(items)},), axis={axis - rank if self.draw(st.booleans()) else axis})"
        if name in ("hstack", "vstack"):
            axis = 1 if name == "hstack" else 0
        cut = self.draw(st.integers(0, shape[axis]))
        extents = [cut, shape[axis] - cut]
        parts = [(*shape[:axis], n, *shape[axis + 1 :]) for n in extents]
        items = [self.float(p, depth) for p in parts]
        if name in ("hstack", "vstack"):
            return f"{name}(({items[0]}, {items[1]}))"
        open_, close = ("[", "]") if self.draw(st.booleans()) else ("(", ")")
        return f"concatenate({open_}{items[0]}, {items[1]}{close}, axis={axis})"

    def reshaped(self, shape: Shape, depth: int) -> str:
        """``reshape`` (or, for 1-d, ``ravel``) of an operand of another shape with as many
        elements: the extents regrouped, one given as ``-1`` at times."""
        size = int(np.prod(shape))
        divisors = [d for d in range(1, size + 1) if size % d == 0] or [1]
        first = self.draw(st.sampled_from(divisors))
        operand = (first, size // first) if size else (0, self.dim())
        if self.draw(st.booleans()):
            operand = (*operand, 1)
        text = self.float(operand, depth)
        if len(shape) == 1 and self.draw(st.booleans()):
            return f"ravel({text})"
        extents = [str(n) for n in shape]
        if size and self.draw(st.booleans()):
            extents[self.draw(st.integers(0, len(shape) - 1))] = "-1"
        return f"reshape({text}, ({''.join(e + ', ' for e in extents)}))"

    def view(self, shape: Shape, depth: int) -> str:
        """A view of an operand giving ``shape``: ``squeeze`` of an axis of extent 1,
        ``expand_dims`` where ``shape`` has one, ``swapaxes`` or ``moveaxis``."""
        rank = len(shape)
        units = [a for a, n in enumerate(shape) if n == 1]
        kinds = ["squeeze", "broadcast_to"] + (["expand_dims"] if units else [])
        kinds += ["swapaxes", "moveaxis"] if rank >= 2 else []
        kind = self.draw(st.sampled_from(kinds))
        if kind == "squeeze":
            axis = self.draw(st.integers(0, rank))
            operand = self.float((*shape[:axis], 1, *shape[axis:]), depth)
            return f"squeeze({operand}, {axis - rank - 1 if self.draw(st.booleans()) else axis})"
        if kind == "broadcast_to":  # some axes of extent 1, some leading ones missing
            lead = self.draw(st.integers(0, rank))
            operand = tuple(n if self.draw(st.booleans()) else 1 for n in shape[lead:])
            dims = "(" + "".join(f"{n}, " for n in shape) + ")"
            return f"broadcast_to({self.float(operand, depth)}, {dims})"
        if kind == "expand_dims":
            axis = self.draw(st.sampled_from(units))
            operand = self.float((*shape[:axis], *shape[axis + 1 :]), depth)
            return f"expand_dims({operand}, axis={axis})"
        a, b = self.draw(st.integers(0, rank - 1)), self.draw(st.integers(0, rank - 1))
        if kind == "swapaxes":
            operand_shape = list(shape)
            operand_shape[a], operand_shape[b] = operand_shape[b], operand_shape[a]
            return f"swapaxes({self.float(tuple(operand_shape), depth)}, {a}, {b})"
        operand_shape = np.moveaxis(np.empty(shape), b, a).shape
        return f"moveaxis({self.float(tuple(operand_shape), depth)}, {a}, {b})"


@dataclass(frozen=True)
class Case:
    text: str
    shapes: dict[str, Shape]
    dtypes: dict[str, str]
    budget: int
    threads: int
    bounds: dict[str, int] = field(default_factory=dict[str, int])


@st.composite
def cases(draw: st.DrawFn) -> Case:
    generator = Generator(draw, draw(st.sampled_from(["f32", "f64"])), draw(st.booleans()))
    shape = tuple(generator.dim() for _ in range(draw(st.integers(0, 3))))
    text = generator.float(shape, draw(st.integers(1, 4)))
    shapes = {n: s for n, (s, _) in generator.inputs.items()}
    dtypes = {n: d for n, (_, d) in generator.inputs.items()}
    budget = draw(st.sampled_from([64, 512, 4096, 1_000_000]))
    return Case(text, shapes, dtypes, budget, draw(st.sampled_from([1, 2])), generator.bounds)


NUMPY = {"f32": np.float32, "f64": np.float64}


def inputs(case: Case, names: tuple[str, ...], seed: int) -> list[Array]:
    rng = np.random.default_rng(seed)
    out: list[Array] = []
    for name in names:
        shape = case.shapes[name]
        if case.dtypes[name] == "bool":
            out.append(rng.random(shape) < 0.5)
        elif case.dtypes[name] in ("i32", "i64"):
            n = case.bounds[name]
            out.append(rng.integers(-n, n, shape).astype(case.dtypes[name].replace("i", "int")))
        else:
            out.append(np.asarray(rng.uniform(-2, 2, shape), NUMPY[case.dtypes[name]]))
    return out


def agree(got: Array, want: Array, what: str, exact: bool) -> None:
    """``got`` equals ``want``: booleans exactly, floats within the tolerance of f64
    where ``exact`` (no f32 input) and of f32 otherwise."""
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if want.dtype == np.bool_ or want.dtype.kind == "i":  # exact
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: nan")
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    rtol = 1e-9 if exact and want.dtype == np.float64 else 2e-4
    values = want[finite]
    scale = float(np.max(np.abs(values))) if values.size else 0.0
    np.testing.assert_allclose(
        got[finite], values, rtol=rtol, atol=rtol * max(1.0, scale), err_msg=what
    )


TARGETS = [
    "numpy",
    pytest.param(
        "native",
        marks=pytest.mark.skipif(
            native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
        ),
    ),
]


@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_targets_compute_what_the_interpreter_computes(target: str, case: Case, seed: int) -> None:
    note(f"tdsl: {case.text}  shapes={case.shapes} dtypes={case.dtypes}")
    jit = JITTensorKernel(memory_budget=case.budget, threads=case.threads, target=target)
    kernel = jit.compile(case.text, case.shapes, case.dtypes)
    assert kernel.target == target
    arrays = inputs(case, kernel.arg_names, seed)
    module = to_tensordsl(case.text, shapes=case.shapes, dtypes=case.dtypes)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        (want,) = run_mod.run_function(module, "main", *arrays)
        copies = [a.copy() for a in arrays]
        got = kernel(*arrays)
    for before, after in zip(copies, arrays, strict=True):
        np.testing.assert_array_equal(before, after, err_msg="an input was written")
    exact = "f32" not in case.dtypes.values()
    agree(np.asarray(got), np.asarray(want), f"{target}: {case.text}", exact)
