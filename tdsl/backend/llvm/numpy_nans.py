"""The sign of the nan NumPy creates, per function and float type, in this process.

A function that makes a nan from operands that are not nan (``log(-1)``,
``arcsin(2)``, ``fmod(1, 0)``) gives a nan whose sign bit NumPy does not specify:
it is whatever the loop NumPy dispatches to on this CPU computes.  x86's default
nan has the sign bit set, and so do NumPy's AVX-512 loops; its AVX2 loops make
``+nan`` for an f64 ``log`` and ``log2``, and its ``log10``, ``arcsin`` and
``arccos`` make ``+nan`` on either (NumPy 2.4, measured).  The native target gives
NumPy's nan bit for bit, so it asks NumPy: :func:`created_nan_negative` runs the
function once on an argument outside its domain and reads the sign.  Native code
is compiled for the CPU it runs on (the disk cache keys it by the CPU's name and
features), so the answer holds wherever the code runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation

from tdsl.dialects.structured_bodies import WIDENED_FROM

_PROBES: dict[str, tuple[Callable[..., Any], tuple[float, ...]]] = {
    "exp": (lambda x: np.exp(x) * 0, (np.inf,)),
    "exp2": (lambda x: np.exp2(x) * 0, (np.inf,)),
    "log": (np.log, (-1.0,)),
    "log2": (np.log2, (-1.0,)),
    "log10": (np.log10, (-1.0,)),
    "log1p": (np.log1p, (-2.0,)),
    "sqrt": (np.sqrt, (-1.0,)),
    "sin": (np.sin, (np.inf,)),
    "cos": (np.cos, (np.inf,)),
    "tan": (np.tan, (np.inf,)),
    "asin": (np.arcsin, (2.0,)),
    "acos": (np.arccos, (2.0,)),
    "acosh": (np.arccosh, (0.5,)),
    "atanh": (np.arctanh, (2.0,)),
    "pow": (np.power, (-2.0, 0.5)),
    "fmod": (np.fmod, (1.0, 0.0)),
}
"""Per function (C library names): NumPy's function and an argument outside its domain."""

_TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def numpy_type(op: Operation) -> str:
    """The float type (``f16``, ``f32``, ``f64``) whose nans NumPy gives ``op``: the type
    ``op`` was widened from (:data:`~tdsl.dialects.structured_bodies.WIDENED_FROM`, set
    where a body or :mod:`tdsl.backend.llvm.f16` widens ``f16``), else its result's."""
    widened = op.attributes.get(WIDENED_FROM)
    if isinstance(widened, StringAttr):
        return widened.data
    return str(op.results[0].type)


@functools.cache
def created_nan_negative(function: str, float_type: str) -> bool:
    """Whether the nan NumPy's ``function`` creates on ``float_type`` (``f32``, ...)
    has its sign bit set here (True, x86's default, for a function not probed)."""
    probe = _PROBES.get(function)
    dtype = _TYPES.get(float_type)
    if probe is None or dtype is None:
        return True
    fn, args = probe
    # a vector's worth, so that NumPy runs its SIMD loop where it has one
    arrays = [np.full(32, a, dtype) for a in args]
    with np.errstate(all="ignore"):
        result = np.asarray(fn(*arrays))
    signs = set(np.signbit(result[np.isnan(result)]).tolist())
    return signs != {False}


@functools.cache
def odd_power_keeps_nan_sign(float_type: str) -> bool:
    """Whether NumPy's ``x ** y`` of a nan ``x`` with its sign bit set to an odd integer
    power keeps the sign here.  The C library's ``pow`` computes ``x * x`` there, which
    clears it; NumPy's AVX-512 loops give ``x`` back on f32 and f64 (measured with NumPy
    2.2.6 to 2.4.6: ``np.power(-nan, 3.0)`` is ``-nan``, and ``+nan`` on f16, which NumPy
    computes with the C library's ``powf``).  Other powers of a nan give ``x`` on both."""
    dtype = _TYPES.get(float_type, np.float64)
    x = np.full(32, -np.nan, dtype)
    with np.errstate(all="ignore"):
        result = np.asarray(np.power(x, np.full(32, 3.0, dtype)))
    return bool(np.all(np.signbit(result)))


SIGNALING_BITS = {"f32": (np.uint32, 0x7FA00000), "f64": (np.uint64, 0x7FF4000000000000)}
"""A signaling nan's bits (the quiet bit clear, a payload), per float type."""


@functools.cache
def signaling_pow_nans(float_type: str) -> tuple[bool, bool]:
    """Whether NumPy's ``x ** y`` is nan here for a signaling nan ``x`` to the power 0, and
    for 1 to a signaling nan power, where C99 (and NumPy, for a quiet nan) gives 1.  The C
    library's ``pow`` gives ``x + y`` for a signaling operand, and NumPy's AVX2 loops call
    it; its AVX-512 loops give 1 (NumPy 2.4.6: nan on an AMD EPYC without AVX-512, 1 on an
    Intel Xeon with it).  Float16 is :mod:`tdsl.backend.llvm.f16`'s."""
    found = SIGNALING_BITS.get(float_type)
    if found is None:
        return (False, False)
    unsigned, bits = found
    dtype = _TYPES[float_type]
    snan = np.full(32, bits, unsigned).view(dtype)
    with np.errstate(all="ignore"):
        base = np.asarray(np.power(snan, np.zeros(32, dtype)))
        exponent = np.asarray(np.power(np.ones(32, dtype), snan))
    return (bool(np.all(np.isnan(base))), bool(np.all(np.isnan(exponent))))


__all__ = [
    "SIGNALING_BITS",
    "created_nan_negative",
    "numpy_type",
    "odd_power_keeps_nan_sign",
    "signaling_pow_nans",
]
