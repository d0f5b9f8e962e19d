"""NumPy's linear-algebra functions the language lacks, in a traced function:
``np.tensordot`` and ``np.inner`` as one matrix product of reshaped operands, as NumPy
computes them, and ``np.linalg.norm`` of vectors and the Frobenius norm of matrices."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from tdsl.jit.trace_args import as_array, ndim_of, static_axis, static_count, static_ints, strong
from tdsl.jit.trace_names import trace_error


def tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """``np.tensordot``, as NumPy computes it: each operand transposed and reshaped to a
    matrix (its free dims, then the summed ones; the summed, then the free), one matrix
    product, reshaped to the free dims of ``a`` then of ``b``."""
    if isinstance(axes, tuple | list):
        pair = cast(Sequence[Any], axes)
        if len(pair) != 2:
            trace_error("`axes` of `np.tensordot` is a count or a pair of axis lists")
        along_a, along_b = (list(static_ints(x, "the axes of `np.tensordot`")) for x in pair)
    else:
        n = static_count(axes, "`axes` of `np.tensordot`")
        along_a, along_b = list(range(-n, 0)), list(range(n))
    if len(along_a) != len(along_b):
        trace_error("`np.tensordot`: the two lists of axes must be as long")
    a, b = as_array(a), as_array(b)
    along_a = [static_axis(x, a.ndim, "`np.tensordot`") for x in along_a]
    along_b = [static_axis(x, b.ndim, "`np.tensordot`") for x in along_b]
    if any(a.shape[x] != b.shape[y] for x, y in zip(along_a, along_b, strict=True)):
        trace_error("`np.tensordot`: the summed axes of the two operands differ in length")
    free_a = [d for d in range(a.ndim) if d not in along_a]
    free_b = [d for d in range(b.ndim) if d not in along_b]
    summed = math.prod(a.shape[x] for x in along_a)
    rows, columns = (math.prod(x.shape[d] for d in f) for x, f in ((a, free_a), (b, free_b)))
    left = np.reshape(np.transpose(a, free_a + along_a), (rows, summed))
    right = np.reshape(np.transpose(b, along_b + free_b), (summed, columns))
    shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    return np.reshape(np.matmul(left, right), tuple(shape))


def inner(a: Any, b: Any) -> Any:
    """``np.inner``: the sum over the last axes of both (a product of a 0-d operand)."""
    if ndim_of(a) == 0 or ndim_of(b) == 0:  # (a Python number is an array: strong, as NumPy's)
        a, b = (strong(v) for v in (a, b))
        return np.multiply(a, b)
    return tensordot(as_array(a), as_array(b), ([-1], [-1]))


def dot(a: Any, b: Any) -> Any:
    """``np.dot``: a product of a 0-d operand, the matrix product of 1-d and 2-d ones
    (the language's), and otherwise the sum over the last axis of ``a`` and the
    second-to-last of ``b`` (its only one if 1-d), the other axes of both kept in order."""
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        return np.multiply(strong(a), strong(b))
    if ndim_of(a) <= 2 and ndim_of(b) <= 2:
        return NotImplemented
    return tensordot(as_array(a), as_array(b), ([-1], [-2 if ndim_of(b) > 1 else -1]))


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: Any = False) -> Any:
    """``np.linalg.norm`` of vectors (``ord`` None, 2, 1, inf, -inf, 0) and the
    Frobenius norm of matrices (``ord`` None or ``'fro'``), as sums, maxima and square
    roots (the 2-norm of a whole array is a square root of a sum of squares, where NumPy
    takes a dot product: equal but for rounding, as any sum in another order)."""
    if hasattr(ord, "_trace"):  # (a traced value: the norm it chooses is needed now)
        ord._needs_values("`ord` of `np.linalg.norm`")
    if x.dtype.kind not in "f":
        x = x.astype(np.float64)  # (NumPy's norm is of floats)
    if isinstance(ord, np.generic):
        ord = ord.item()  # (NumPy's `absx **= ord` keeps x's dtype)
    axes = static_ints(axis, "the axes of `np.linalg.norm`") if axis is not None else None
    matrix = (axes is None and x.ndim == 2) or (axes is not None and len(axes) == 2)
    if matrix and ord in (None, "fro"):
        return np.sqrt(np.sum(x * x, axis=axes, keepdims=keepdims))
    if matrix or (axes is None and ord is not None and x.ndim != 1):
        trace_error(
            f"`np.linalg.norm` with ord={ord!r} of a matrix is not supported when traced "
            "(vector norms, and the Frobenius norm of a matrix, are)"
        )
    if ord is None or ord == 2:
        return np.sqrt(np.sum(x * x, axis=axes, keepdims=keepdims))
    if ord == np.inf:
        # (NumPy's is a max from 0, its `initial`: of an empty vector, 0, the sum below)
        reduced = x.shape if axes is None else [x.shape[a] for a in axes]
        if 0 in reduced:
            return np.sum(np.abs(x), axis=axes, keepdims=keepdims)
        return np.max(np.abs(x), axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(np.abs(x), axis=axes, keepdims=keepdims)
    if ord == 1:
        return np.sum(np.abs(x), axis=axes, keepdims=keepdims)
    if ord == 0:
        return np.sum(np.not_equal(x, 0), axis=axes, keepdims=keepdims).astype(x.dtype)
    if isinstance(ord, int | float) and not isinstance(ord, bool):
        total = np.sum(np.abs(x) ** ord, axis=axes, keepdims=keepdims)
        return total ** np.reciprocal(ord, dtype=x.dtype)  # (NumPy's root, in x's dtype)
    trace_error(f"`np.linalg.norm` with ord={ord!r} is not supported when traced")


__all__ = ["dot", "inner", "norm", "tensordot"]
