"""Vectorized ``sin``/``cos`` for the native target: the measurements behind leaving
them on the C library (issue 20, item 4).

    python benchmarks/native_trig.py speed [--size 4194304] [--reps 9]
    python benchmarks/native_trig.py accuracy [--stride 61]

The expansion here is written like :mod:`tdsl.backend.llvm.math_approx`'s, on f32 and
f64, and is exact to within a fraction of an ulp on its domain:

- ``x = n (pi/2) + y`` with ``n = rint(x 2/pi)`` (exp's shifter constant) and
  ``|y| <= pi/4``, Cody-Waite with ``pi/2`` in pieces whose products with ``n`` are
  exact: f64 as fdlibm's three 33-bit pieces and a 53-bit tail, every step kept
  (with the rounding errors of the two subtractions, by TwoSum: fdlibm's own steps
  are only exact where it takes them), the result a pair ``y0 + y1``; f32 reduced in
  f64 with two 25-bit pieces and a tail;
- the polynomials of FreeBSD's ``k_sin.c``/``k_cos.c`` (f64, with the tail ``y1``)
  and ``k_sinf.c``/``k_cosf.c`` (f32, in f64, rounded once), coefficients copied
  from there;
- the quadrant from the low bits of ``n`` (integer ops on the shifted value),
  ``select`` between ``sin y``/``cos y`` and their negations;
- domain ``|x| <= 2^28`` (f32) and ``|x| <= 2^20`` (f64); nan and ``±inf`` give nan,
  ``sin`` keeps ``±0`` and subnormals.

Measured (``accuracy``, against NumPy in float64 for f32 and long double for f64, a
dense sweep of every 61st float32 bit pattern in the domain, f64 with random low
bits, plus the floats nearest multiples of ``pi/2``): at most 0.501 ulp (f32) and
0.79 ulp (f64).

What keeps it out of the pipeline is the slow path.  Lanes beyond the domain must
get the C library's value (NumPy's), and LLVM 22's loop vectorizer (llvmlite 0.50)
accepts a call in a loop only if it is an intrinsic (``llvm.sin``: speculatable, so
it is executed, scalarized, for every lane, even from inside a branch) or has a
vector variant (a ``vector-function-abi-variant`` attribute naming a masked vector
function, which it then calls with the branch's mask).  A plain call of ``sinf``
may write ``errno``: the loop stays scalar.  xDSL 0.75's ``convert_module`` (what
``tdsl.runtime.compile.llvm_ir`` uses) writes no function or call attributes, so
the only design that works cannot be expressed from the pass today.  The
``speed`` variants:

- ``libm``: the pipeline as it is (``llvm.sin``, one C call per element);
- ``branch``: the expansion, ``scf.if`` around a C library call for lanes beyond
  the domain: correct, the loop is scalar;
- ``intrinsic``: the same with ``llvm.sin`` in the branch: vectorized, the call made
  for every lane;
- ``none``: the expansion without a slow path (wrong beyond the domain): the speed
  of the arithmetic alone;
- ``vfabi``: ``branch`` with the call given masked vector variants (for 4, 8 and 16
  lanes, defined in the module: they call the library for the lanes whose mask bit
  is set) by editing the LLVM IR text: correct, vectorized.
"""

from __future__ import annotations

import argparse
import math as pymath
import re
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import arith, llvm, math, scf
from xdsl.dialects.builtin import Float32Type, Float64Type, f64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))

from native.kernels import MLIR_TYPES, context, elementwise_1d, parse, ulp_error

from tdsl.backend.llvm.arith_to_llvm import float_suffix
from tdsl.backend.llvm.convert_to_llvm import ConvertToLLVMPass
from tdsl.backend.llvm.math_approx import _Emitter, _Format
from tdsl.backend.llvm.math_to_llvm import call_libm, libm_name
from tdsl.runtime.compile import compile_llvm, llvm_ir

_PI = Fraction(
    Decimal(
        "3.14159265358979323846264338327950288419716939937510"
        "58209749445923078164062862089986280348253421170679"
    )
)
_HALF_PI = _PI / 2


def _leading(value: Fraction, bits: int) -> Fraction:
    """``value > 0`` truncated to its ``bits`` leading significant bits."""
    exponent = pymath.floor(pymath.log2(value))
    scale = Fraction(2) ** (bits - 1 - exponent)
    return Fraction(int(value * scale)) / scale


def _pieces(bits: int, count: int) -> list[tuple[float, float]]:
    """``pi/2 = p1 + p2 + ...``: ``count`` pieces of ``bits`` bits, each with the f64
    rounding of the rest after it (fdlibm's ``pio2_1``, ``pio2_1t``, ...)."""
    rest, pieces = _HALF_PI, []
    for _ in range(count):
        piece = _leading(rest, bits)
        rest -= piece
        pieces.append((float(piece), float(rest)))
    return pieces


_PIO2_F64 = _pieces(33, 3)  # fdlibm's pio2_1, pio2_1t, pio2_2, pio2_2t, pio2_3, pio2_3t
_PIO2_F32 = _pieces(25, 2)  # FreeBSD e_rem_pio2f.c's pio2_1 (25 bits), then 25 more
_TWO_OVER_PI = float(2 / _PI)

# FreeBSD lib/msun/src/k_sin.c, k_cos.c (fdlibm): |y| <= pi/4
_SIN_F64 = (
    -1.66666666666666324348e-01,
    8.33333333332248946124e-03,
    -1.98412698298579493134e-04,
    2.75573137070700676789e-06,
    -2.50507602534068634195e-08,
    1.58969099521155010221e-10,
)
_COS_F64 = (
    4.16666666666666019037e-02,
    -1.38888888888741095749e-03,
    2.48015872894767294178e-05,
    -2.75573143513906633035e-07,
    2.08757232129817482790e-09,
    -1.13596475577881948265e-11,
)
# FreeBSD lib/msun/src/k_sinf.c, k_cosf.c (in double, for float results)
_SIN_F32 = (
    -0.166666666416265235595,
    0.0083333293858894631756,
    -0.000198393348360966317347,
    0.0000027183114939898219064,
)
_COS_F32 = (
    -0.499999997251031003120,
    0.0416666233237390631894,
    -0.00138867637746099294692,
    0.0000243904487962774090654,
)

DOMAIN = {"f32": 2.0**28, "f64": 2.0**20}
"""The largest ``|x|`` the reduction handles; beyond it the C library is called."""


class _TrigEmitter(_Emitter):
    """The f64 reduction and kernels (f32 arguments are widened to f64 first)."""

    def neg(self, a: SSAValue) -> SSAValue:
        return self._op(arith.NegfOp(a, self.flags))

    def two_diff(self, a: SSAValue, b: SSAValue) -> tuple[SSAValue, SSAValue]:
        """``(d, e)`` with ``a - b = d + e`` exactly, ``d`` the rounded difference
        (Knuth's TwoSum, whichever of ``a``, ``b`` is larger)."""
        nb = self.neg(b)
        d = self.add(a, nb)
        bb = self.sub(d, a)
        return d, self.add(self.sub(a, self.sub(d, bb)), self.sub(nb, bb))

    def reduce_pio2(self, x: SSAValue, f32: bool) -> tuple[SSAValue, SSAValue, SSAValue | None]:
        """``(q, y0, y1)``: ``q`` the integer bits holding ``n`` in the low bits,
        ``x - n pi/2 = y0 + y1`` (``y1`` None for f32, where ``y0`` alone is exact
        enough)."""
        shifter = self.c(self.fmt.shifter)
        shifted = self.add(self.mul(x, self.c(_TWO_OVER_PI)), shifter)
        fn = self.sub(shifted, shifter)
        q = self.bits(shifted)  # the shifter's low bits are 0: n mod 4 is q's
        if f32:
            (p1, _), (p2, p2t) = _PIO2_F32
            r = self.sub(x, self.mul(fn, self.c(p1)))
            r = self.sub(r, self.mul(fn, self.c(p2)))
            return q, self.sub(r, self.mul(fn, self.c(p2t))), None
        (p1, _), (p2, _), (p3, p3t) = _PIO2_F64
        r = self.sub(x, self.mul(fn, self.c(p1)))  # exact
        r, e2 = self.two_diff(r, self.mul(fn, self.c(p2)))  # fn * p2, fn * p3: exact
        r, e3 = self.two_diff(r, self.mul(fn, self.c(p3)))
        tail = self.sub(self.add(e2, e3), self.mul(fn, self.c(p3t)))
        y0 = self.add(r, tail)
        return q, y0, self.add(self.sub(r, y0), tail)

    def kernel_sin(self, y0: SSAValue, y1: SSAValue | None) -> SSAValue:
        z = self.mul(y0, y0)
        w = self.mul(z, z)
        v = self.mul(z, y0)
        if y1 is None:  # k_sinf.c
            s1, s2, s3, s4 = _SIN_F32
            head = self.add(y0, self.mul(v, self.poly(z, (s1, s2))))
            return self.add(head, self.mul(self.mul(v, w), self.poly(z, (s3, s4))))
        s1, s2, s3, s4, s5, s6 = _SIN_F64  # k_sin.c with iy = 1
        r = self.add(self.poly(z, (s2, s3, s4)), self.mul(self.mul(z, w), self.poly(z, (s5, s6))))
        inner = self.sub(self.mul(self.c(0.5), y1), self.mul(v, r))
        tail = self.sub(self.sub(self.mul(z, inner), y1), self.mul(v, self.c(s1)))
        return self.sub(y0, tail)

    def kernel_cos(self, y0: SSAValue, y1: SSAValue | None) -> SSAValue:
        z = self.mul(y0, y0)
        w = self.mul(z, z)
        if y1 is None:  # k_cosf.c
            c0, c1, c2, c3 = _COS_F32
            head = self.add(self.add(self.c(1.0), self.mul(z, self.c(c0))), self.mul(w, self.c(c1)))
            return self.add(head, self.mul(self.mul(w, z), self.poly(z, (c2, c3))))
        c1, c2, c3, c4, c5, c6 = _COS_F64  # k_cos.c
        r = self.add(
            self.mul(z, self.poly(z, (c1, c2, c3))),
            self.mul(self.mul(w, w), self.poly(z, (c4, c5, c6))),
        )
        hz = self.mul(self.c(0.5), z)
        one = self.c(1.0)
        head = self.sub(one, hz)
        tail = self.add(
            self.sub(self.sub(one, head), hz), self.sub(self.mul(z, r), self.mul(y0, y1))
        )
        return self.add(head, tail)

    def sin_cos(self, x: SSAValue, cosine: bool, f32: bool) -> SSAValue:
        """``sin(x)`` or ``cos(x)`` for ``|x|`` in the domain (f64 ``x``)."""
        q, y0, y1 = self.reduce_pio2(x, f32)
        if cosine:
            q = self.iadd(q, self.ci(1))
        s = self.kernel_sin(y0, y1)
        c = self.kernel_cos(y0, y1)
        odd = self._op(arith.CmpiOp(self._op(arith.AndIOp(q, self.ci(1))), self.ci(0), "ne"))
        picked = self.select(odd, c, s)
        negative = self._op(arith.CmpiOp(self._op(arith.AndIOp(q, self.ci(2))), self.ci(0), "ne"))
        return self.select(negative, self.neg(picked), picked)


def _slow_path(
    rewriter: PatternRewriter,
    op: Operation,
    x: SSAValue,
    outside: SSAValue,
    fast: SSAValue,
    how: str,
) -> SSAValue:
    """``scf.if outside { C library call (or llvm.sin) } else { fast }``."""
    t = x.type
    base = "cos" if isinstance(op, math.CosOp) else "sin"
    then_block, else_block = Block(), Block()
    if_op = scf.IfOp(outside, [t], Region(then_block), Region(else_block))
    rewriter.insert(if_op)
    rewriter.insertion_point = InsertPoint.at_end(then_block)
    if how == "intrinsic":
        call = llvm.CallIntrinsicOp(f"llvm.{base}.{float_suffix(t)}", [x], [t])
        rewriter.insert(call)
        called = call.results[0]
    else:
        name = libm_name(base, t)
        assert name is not None
        called = call_libm(rewriter, op, name, [x], t)
    rewriter.insert(scf.YieldOp(called))
    rewriter.insertion_point = InsertPoint.at_end(else_block)
    rewriter.insert(scf.YieldOp(fast))
    rewriter.insertion_point = InsertPoint.before(op)
    return if_op.results[0]


class ExpandTrig(RewritePattern):
    """``math.sin``/``math.cos`` on f32/f64 -> the expansion, with the slow path
    ``how`` (``branch``, ``intrinsic`` or ``none``)."""

    def __init__(self, how: str) -> None:
        self.how = how

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, math.SinOp | math.CosOp):
            return
        t = op.result.type
        if not isinstance(t, Float32Type | Float64Type):
            return
        f32 = isinstance(t, Float32Type)
        x = op.operand
        e = _Emitter(rewriter, _Format(t))
        wide = _TrigEmitter(rewriter, _Format(f64))
        xw = wide._op(arith.ExtFOp(x, f64)) if f32 else x
        fast = wide.sin_cos(xw, isinstance(op, math.CosOp), f32)
        if f32:
            fast = e._op(arith.TruncFOp(fast, t))
        a = e.abs(x)
        fast = e.select(e.cmp("oeq", a, e.c(float("inf"))), e.c(float("-nan")), fast)
        if isinstance(op, math.SinOp):
            fast = e.keep_tiny(x, fast)
        fast = e.keep_nan(x, fast)
        if self.how != "none":
            limit = DOMAIN["f32" if f32 else "f64"]
            finite = e.cmp("olt", a, e.c(float("inf")))
            outside = e._op(arith.AndIOp(e.cmp("ogt", a, e.c(limit)), finite))
            fast = _slow_path(rewriter, op, x, outside, fast, self.how)
        rewriter.replace(op, [], [fast])


def _masked_variant(fn: str, ty: str, vf: int) -> str:
    """``tdsl_<fn>_m<vf>(v, mask)``: ``v`` with the lanes of ``mask`` replaced by ``fn``
    of them (one branch when no bit is set)."""
    vt = f"<{vf} x {ty}>"
    return f"""
define internal {vt} @tdsl_{fn}_m{vf}({vt} %v, <{vf} x i1> %m) #11 {{
entry:
  %bits = bitcast <{vf} x i1> %m to i{vf}
  %any = icmp ne i{vf} %bits, 0
  br i1 %any, label %loop, label %done
loop:
  %k = phi i32 [0, %entry], [%k1, %next]
  %acc = phi {vt} [%v, %entry], [%acc2, %next]
  %mk = extractelement <{vf} x i1> %m, i32 %k
  br i1 %mk, label %call, label %next
call:
  %e = extractelement {vt} %v, i32 %k
  %s = call {ty} @{fn}({ty} %e)
  %ins = insertelement {vt} %acc, {ty} %s, i32 %k
  br label %next
next:
  %acc2 = phi {vt} [%acc, %loop], [%ins, %call]
  %k1 = add i32 %k, 1
  %end = icmp eq i32 %k1, {vf}
  br i1 %end, label %done, label %loop
done:
  %res = phi {vt} [%v, %entry], [%acc2, %next]
  ret {vt} %res
}}"""


def with_vector_variants(text: str, fn: str, ty: str) -> str:
    """LLVM IR ``text`` whose calls of ``fn`` go through a wrapper with masked vector
    variants (what xDSL's converter cannot write: function and call attributes)."""
    vfs = (4, 8, 16)
    names = ",".join(f"_ZGV_LLVM_M{vf}v_tdsl_{fn}(tdsl_{fn}_m{vf})" for vf in vfs)
    text, count = re.subn(
        rf'call ccc {ty} @"{fn}"\(([^)]*)\)', rf"call ccc {ty} @tdsl_{fn}(\1) #12", text
    )
    assert count, f"no call of {fn}"
    used = ", ".join(f"ptr @tdsl_{fn}_m{vf}" for vf in vfs)
    return (
        text
        + f"\ndefine internal {ty} @tdsl_{fn}({ty} %a) #11 {{\n"
        + f"  %r = call {ty} @{fn}({ty} %a)\n  ret {ty} %r\n}}\n"
        + "".join(_masked_variant(fn, ty, vf) for vf in vfs)
        + f'\n@llvm.compiler.used = appending global [{len(vfs)} x ptr] [{used}], section "llvm.metadata"\n'
        + "attributes #11 = { noinline nounwind willreturn memory(none) }\n"
        + f'attributes #12 = {{ "vector-function-abi-variant"="{names}" }}\n'
    )


VARIANTS = ("libm", "branch", "intrinsic", "none", "vfabi")


def compiled(name: str, dtype: Any, n: int, variant: str) -> tuple[Callable[..., None], Any]:
    """``out = name(x)`` over ``n`` elements natively, the slow path ``variant``."""
    t = MLIR_TYPES[dtype]
    module = parse(elementwise_1d(f"%r = math.{name} %v0 : {t}", n, [t], t))
    if variant != "libm":
        how = "branch" if variant == "vfabi" else variant
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ExpandTrig(how)], dce_enabled=False),
            apply_recursively=True,
        ).rewrite_module(module)
    ConvertToLLVMPass(noalias=True).apply(context(), module)
    text = llvm_ir(module)
    if variant == "vfabi":
        ty = "float" if t == "f32" else "double"
        text = with_vector_variants(text, name + ("f" if t == "f32" else ""), ty)
    module_code = compile_llvm(text)
    fn = module_code.function("f")

    def call(x: np.ndarray, out: np.ndarray) -> None:
        fn(x.ctypes.data, out.ctypes.data)

    return call, module_code


def _best(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def speed(size: int, reps: int) -> None:
    print(f"{size} elements, one thread, best of {reps} (ms); numpy is np.sin/np.cos(x, out=)")
    print(f"{'':12s} {'|x| <=':>7s} " + " ".join(f"{v:>10s}" for v in (*VARIANTS, "numpy")))
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        for name, ref in (("sin", np.sin), ("cos", np.cos)):
            fns = {v: compiled(name, dtype, size, v) for v in VARIANTS}
            for span in (0.7, 100.0, 1e4, 1e9):
                x = rng.uniform(-span, span, size).astype(dtype)
                out = np.empty_like(x)
                cells = [_best(lambda f=f, x=x, out=out: f(x, out), reps) for f, _ in fns.values()]
                cells.append(_best(lambda r=ref, x=x, out=out: r(x, out=out), reps))
                label = f"{MLIR_TYPES[dtype]} {name}"
                print(f"{label:12s} {span:7.3g} " + " ".join(f"{c:10.2f}" for c in cells))
            vectorized = {v: "vector.body" in code.optimized_ir for v, (_, code) in fns.items()}
            print(f"{'':12s} vector loop: {vectorized}")


def _hard_cases(dtype: Any, limit: float, count: int, rng: np.random.Generator) -> np.ndarray:
    """Floats nearest multiples of pi/2 up to ``limit`` (small reduced arguments)."""
    k = np.concatenate([np.arange(1, 4096), rng.integers(1, int(limit / 1.5707963), count)])
    x = (k.astype(np.longdouble) * (np.longdouble(np.pi) / 2)).astype(dtype)
    near = np.concatenate([x, np.nextafter(x, dtype(np.inf)), np.nextafter(x, dtype(0))])
    return near[np.abs(near) <= limit]


def _edges(dtype: Any, limit: float) -> np.ndarray:
    x = np.full(64, limit, dtype)
    for k in range(1, 32):
        x[k] = np.nextafter(x[k - 1], dtype(0))
        x[32 + k] = np.nextafter(x[32 + k - 1], dtype(np.inf))
    return x


def accuracy(stride: int) -> None:
    chunk = 1 << 21
    rng = np.random.default_rng(1)
    print("max ulp error (at x) against NumPy in float64 (f32) / long double (f64)")
    for dtype in (np.float32, np.float64):
        t = MLIR_TYPES[dtype]
        limit = DOMAIN[t]
        wide = np.longdouble if dtype == np.float64 else np.float64
        top = int(np.array(limit, np.float32).view(np.uint32))
        patterns = np.arange(0, top + 1, stride, dtype=np.uint32)
        for name, ref in (("sin", np.sin), ("cos", np.cos)):
            fn, _ = compiled(name, dtype, chunk, "branch")
            sets: dict[str, list[np.ndarray]] = {"sweep": [], "pi/2 multiples": [], "edges": []}
            for start in range(0, len(patterns), chunk // 2):
                x = patterns[start : start + chunk // 2].view(np.float32).astype(dtype)
                if dtype == np.float64:
                    noise = rng.integers(0, 1 << 29, len(x), dtype=np.uint64)
                    x = (x.view(np.uint64) | noise).view(np.float64)
                sets["sweep"].append(np.concatenate([x, -x]))
            sets["pi/2 multiples"].append(_hard_cases(dtype, limit, 1 << 20, rng))
            sets["edges"].append(np.concatenate([_edges(dtype, limit), -_edges(dtype, limit)]))
            cells = []
            for label, parts in sets.items():
                worst, at = 0.0, 0.0
                for x in parts:
                    for s in range(0, len(x), chunk):
                        piece = np.zeros(chunk, dtype)
                        part = x[s : s + chunk]
                        piece[: len(part)] = part
                        out = np.empty(chunk, dtype)
                        fn(piece, out)
                        with np.errstate(all="ignore"):
                            expected = ref(piece.astype(wide))
                        errors = ulp_error(out, expected, dtype)[: len(part)]
                        i = int(np.argmax(errors))
                        if errors[i] > worst:
                            worst, at = float(errors[i]), float(part[i])
                cells.append(f"{label} {worst:.3f} @ {at:.6g}")
            print(f"{t} {name}: " + "; ".join(cells))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--size", type=int, default=1 << 22)
    s.add_argument("--reps", type=int, default=9)
    a = sub.add_parser("accuracy")
    a.add_argument("--stride", type=int, default=61)
    args = parser.parse_args(argv)
    if args.command == "speed":
        speed(args.size, args.reps)
    else:
        accuracy(args.stride)


if __name__ == "__main__":
    main()
