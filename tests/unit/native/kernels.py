"""Loops-stage test modules written by hand, and a way to run them natively.

The modules are in the form ``tdsl-lower-to-loops`` produces: ``func.func`` on
memrefs, ``scf.for`` loops, ``memref.load``/``store`` and scalar ``arith``/``math``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from tdsl.backend.llvm.convert_to_llvm import ConvertToLLVMPass
from tdsl.dialects.tdslmath import TdslMath

MLIR_TYPES = {np.float16: "f16", np.float32: "f32", np.float64: "f64", np.bool_: "i1"}


def context() -> Context:
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    ctx.load_dialect(TdslMath)
    return ctx


def parse(text: str) -> ModuleOp:
    return Parser(context(), text).parse_module()


def lower(text: str, **options: Any) -> ModuleOp:
    module = parse(text)
    ConvertToLLVMPass(**options).apply(context(), module)
    module.verify()
    return module


def elementwise_1d(body: str, n: int, in_types: list[str], out_type: str) -> str:
    """A function ``@f(%in0, ..., %out)`` over 1-D memrefs of ``n`` elements whose loop
    body computes ``%r`` from ``%v0, %v1, ...`` with the text ``body``."""
    args = ", ".join(f"%in{k}: memref<{n}x{t}>" for k, t in enumerate(in_types))
    loads = "\n".join(
        f"    %v{k} = memref.load %in{k}[%i] : memref<{n}x{t}>" for k, t in enumerate(in_types)
    )
    return f"""
func.func @f({args}, %out: memref<{n}x{out_type}>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {n} : index
  scf.for %i = %c0 to %n step %c1 {{
{loads}
    {body}
    memref.store %r, %out[%i] : memref<{n}x{out_type}>
  }}
  func.return
}}
"""


def compile_function(text: str, name: str = "f", **options: Any) -> Callable[..., Any]:
    """The native function ``name`` of loops-stage ``text``, called with arrays."""
    from tdsl.runtime.compile import compile_llvm

    compiled = compile_llvm(lower(text, **options))
    fn = compiled.function(name)

    def call(*args: Any) -> None:
        fn(*(a.ctypes.data if isinstance(a, np.ndarray) else a for a in args))

    call.compiled = compiled  # type: ignore[attr-defined]  # keeps the engine alive
    return call


def unary_math(op: str, dtype: Any, n: int) -> Callable[[np.ndarray], np.ndarray]:
    """``x -> op(x)`` compiled natively for 1-D arrays of ``n`` elements of ``dtype``."""
    t = MLIR_TYPES[dtype]
    fn = compile_function(elementwise_1d(f"%r = {op} %v0 : {t}", n, [t], t))

    def run(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype)
        assert x.shape == (n,)
        out = np.empty(n, dtype)
        fn(x, out)
        return out

    return run


def chain_2d(rows: int, cols: int, t: str = "f32") -> str:
    """``out = max(a, 0) + b * c - d`` over ``rows x cols`` memrefs (``@chain``)."""
    m = f"memref<{rows}x{cols}x{t}>"
    return f"""
func.func @chain(%a: {m}, %b: {m}, %c: {m}, %d: {m}, %out: {m}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nr = arith.constant {rows} : index
  %nc = arith.constant {cols} : index
  %zero = arith.constant 0.000000e+00 : {t}
  scf.for %i = %c0 to %nr step %c1 {{
    scf.for %j = %c0 to %nc step %c1 {{
      %x = memref.load %a[%i, %j] : {m}
      %y = memref.load %b[%i, %j] : {m}
      %z = memref.load %c[%i, %j] : {m}
      %w = memref.load %d[%i, %j] : {m}
      %r = arith.maximumf %x, %zero : {t}
      %p = arith.mulf %y, %z : {t}
      %s = arith.addf %r, %p : {t}
      %q = arith.subf %s, %w : {t}
      memref.store %q, %out[%i, %j] : {m}
    }}
  }}
  func.return
}}
"""


def row_sum_exp(rows: int, cols: int, t: str = "f32") -> str:
    """``out[i] = sum_j exp(a[i, j])`` with an ``scf.for`` accumulator (``@rowsum``)."""
    m = f"memref<{rows}x{cols}x{t}>"
    return f"""
func.func @rowsum(%a: {m}, %out: memref<{rows}x{t}>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nr = arith.constant {rows} : index
  %nc = arith.constant {cols} : index
  %init = arith.constant 0.000000e+00 : {t}
  scf.for %i = %c0 to %nr step %c1 {{
    %s = scf.for %j = %c0 to %nc step %c1 iter_args(%acc = %init) -> ({t}) {{
      %v = memref.load %a[%i, %j] : {m}
      %e = math.exp %v : {t}
      %n = arith.addf %acc, %e : {t}
      scf.yield %n : {t}
    }}
    memref.store %s, %out[%i] : memref<{rows}x{t}>
  }}
  func.return
}}
"""


def ulp_error(result: np.ndarray, reference: np.ndarray, dtype: Any) -> np.ndarray:
    """``|result - reference|`` in units of the last place of ``dtype`` at the
    reference (subnormal spacing below the normal range); 0 where ``result`` is the
    reference rounded to ``dtype`` (so also for inf and nan)."""
    mantissa, min_exponent = {
        np.float16: (11, -24),
        np.float32: (24, -149),
        np.float64: (53, -1074),
    }[dtype]
    ref = reference.astype(np.longdouble)
    with np.errstate(invalid="ignore", over="ignore"):
        exponent = np.frexp(np.abs(ref).astype(np.float64))[1]
        ulp = np.ldexp(1.0, np.maximum(exponent - mantissa, min_exponent)).astype(np.longdouble)
        error = np.abs(result.astype(np.longdouble) - ref) / ulp
        rounded = reference.astype(dtype)
    same = (result == rounded) | (np.isnan(result) & np.isnan(rounded))
    return np.where(same, 0.0, error)


def erf_reference(x: np.ndarray) -> np.ndarray:
    """``erf`` in long double (NumPy has none), within 2^-60 of it: ``x 2/sqrt(pi)``
    below 2^-30, its series of positive terms below 2, ``1 - erfc`` by the continued
    fraction below 7 and 1 above (checked against mpmath)."""
    ld = np.longdouble
    x = np.asarray(x, dtype=ld)
    z = np.abs(x)
    two_over_sqrt_pi = ld("1.12837916709551257389615890312154517")
    with np.errstate(all="ignore"):
        value = np.where(z < 2.0**-30, z * two_over_sqrt_pi, ld(1))
        series = (z >= 2.0**-30) & (z < 2)
        zs = z[series]
        z2 = zs * zs
        term, total = zs.copy(), zs.copy()
        for n in range(1, 120):
            term *= 2 * z2 / (2 * n + 1)
            total += term
        value[series] = two_over_sqrt_pi * np.exp(-z2) * total
        fraction = (z >= 2) & (z < 7)
        zl = z[fraction]
        f = zl.copy()
        for k in range(3000, 0, -1):
            f = zl + (ld(k) / 2) / f
        erfc = np.exp(-zl * zl) * (two_over_sqrt_pi / 2) / f
        value[fraction] = 1 - erfc
        return np.where(np.isnan(x), x, np.copysign(value, x))


POW_SPECIALS = (0.0, -0.0, 1.0, -1.0, 2.5, -3.0, np.inf, -np.inf, np.nan, -np.nan, 1e-3, 7.0,
                0.1, 0.5, -0.5, 3.0, -2.0, 1e-310, 1.5, 2.0**-149, -8.0, 1 / 3, 1e300, -1e300)  # fmt: skip
"""Bases and exponents whose every pair :func:`pow_inputs` starts with."""

POW_SETS = ("specials", "random", "near one", "subnormal results", "integers",
            "negative bases", "overflow edges")  # fmt: skip


def pow_inputs(dtype: Any, n: int, rng: np.random.Generator) -> dict[str, tuple[Any, Any]]:
    """``(x, y)`` pairs for ``x ** y`` of ``dtype``, by :data:`POW_SETS` (``n`` each,
    after the special values): results over the whole range, bases a few ulp from 1
    with exponents large enough to reach the overflow and underflow edges, results in
    the subnormal range, small integers to integer powers, negative bases to integer
    powers, and exponents around the overflow and underflow thresholds."""
    eps = float(np.finfo(dtype).eps)
    small = -745.0 if dtype == np.float64 else -103.0
    specials = np.array(POW_SPECIALS)
    near = 1 + rng.integers(1, 1000, n) * eps * rng.choice([-0.5, 1.0], n)
    sets = {
        "specials": (np.repeat(specials, len(specials)), np.tile(specials, len(specials))),
        "random": (np.exp(rng.uniform(-20, 20, n)) * rng.choice([-1, 1], n),
                   np.where(rng.random(n) < 0.25, np.round(rng.uniform(-30, 30, n)), rng.uniform(-30, 30, n))),
        "near one": (near, rng.uniform(-700, 700, n) / np.log(near.astype(dtype).astype(np.float64))),
        "subnormal results": (np.exp(rng.uniform(small, small + 45, n)), rng.uniform(0.9, 1.1, n)),
        "integers": (rng.integers(2, 50, n).astype(float), rng.integers(-20, 20, n).astype(float)),
        "negative bases": (-np.exp(rng.uniform(-5, 5, n)), np.round(rng.uniform(-50, 50, n))),
        "overflow edges": (rng.uniform(0.1, 10, n), rng.uniform(-1000, 1000, n)),
    }  # fmt: skip
    with np.errstate(over="ignore"):
        return {k: (x.astype(dtype), y.astype(dtype)) for k, (x, y) in sets.items()}


def best_ms(fn: Callable[[], object], reps: int) -> float:
    """The fastest of ``reps`` calls of ``fn``, in milliseconds (for the benchmarks)."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3
