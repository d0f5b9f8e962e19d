"""Binding ``tdsl_matmul_*`` calls to the BLAS that NumPy ships.

``tdsl-lower-to-loops`` turns a 2-D matmul on group inputs into a call to an
external function named for its type and shape, ``tdsl_matmul_f32_64x128x256``
(``C[M, N] = A[M, K] @ B[K, N]``, row-major, all three contiguous).  This
module finds a CBLAS ``gemm`` (and ``dot``, ``gemv``) in the process (NumPy's wheels bundle OpenBLAS,
with prefixed 64-bit-integer symbols such as ``scipy_cblas_sgemm64_``) and
writes, for each such call, a small LLVM IR function with that name calling
``?gemm`` with the shape's constants, so that the compiled code calls BLAS
directly.  :func:`find_gemm` says why not when no BLAS is found; the native
target then leaves such groups to the NumPy target.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

_SYMBOL = re.compile(r"^tdsl_matmul_(f32|f64)_(\d+)x(\d+)x(\d+)$")
_TILE_SYMBOL = re.compile(r"^tdsl_gemm_(f32|f64)_[0-9a-f]+$")

# (symbol prefix, integer width) in order of preference: NumPy 2's bundled
# OpenBLAS, NumPy 1's, then a system CBLAS with 32-bit integers
_CANDIDATES: tuple[tuple[str, str, int], ...] = (
    ("scipy_cblas_", "64_", 64),
    ("cblas_", "64_", 64),
    ("cblas_", "", 32),
)


@dataclass(frozen=True)
class Gemm:
    """The CBLAS ``sgemm``/``dgemm`` of this process: symbol names, addresses, int width."""

    symbols: dict[str, str]
    """``f32``/``f64`` -> the symbol name."""
    addresses: dict[str, int]
    """symbol name -> its address."""
    int_bits: int
    vector_routines: dict[str, str] = field(default_factory=dict[str, str])
    """``f32_dot``, ``f32_gemv``, ``f64_dot``, ``f64_gemv`` -> the symbol name, where the
    library has them (their addresses are in ``addresses`` too)."""
    set_threads: Callable[[int], int] | None = field(default=None, compare=False)
    """OpenBLAS's ``openblas_set_num_threads_local``: sets the threads BLAS calls use and
    returns the previous count (None: not OpenBLAS).  Despite its name, in NumPy's
    OpenBLAS (a pthreads build) the count is the whole process's, not the calling
    thread's."""


def _set_threads(lib: ctypes.CDLL) -> Callable[[int], int] | None:
    """The library's ``openblas_set_num_threads_local``, if it has one."""
    try:
        fn = lib.openblas_set_num_threads_local
    except AttributeError:
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def _libraries() -> list[str]:
    import numpy

    root = os.path.dirname(os.path.dirname(numpy.__file__))
    found: list[str] = []
    for folder in ("numpy.libs", os.path.join("numpy", ".libs")):
        found += sorted(glob.glob(os.path.join(root, folder, "*blas*")))
    return found


@functools.cache
def find_gemm() -> Gemm | str:
    """The process's CBLAS gemm, or why none was found."""
    tried: list[str] = []
    for path in [*_libraries(), None]:
        try:
            lib = ctypes.CDLL(path) if path is not None else ctypes.CDLL(None)
        except OSError as err:
            tried.append(f"{path}: {err}")
            continue
        for prefix, suffix, bits in _CANDIDATES:
            names = {t: f"{prefix}{c}gemm{suffix}" for t, c in (("f32", "s"), ("f64", "d"))}
            try:
                addresses = {
                    n: int(ctypes.cast(getattr(lib, n), ctypes.c_void_p).value or 0)
                    for n in names.values()
                }
            except AttributeError:
                continue
            if all(addresses.values()):
                vector: dict[str, str] = {}
                for kind, c in (("f32", "s"), ("f64", "d")):
                    for routine in ("dot", "gemv"):
                        name = f"{prefix}{c}{routine}{suffix}"
                        address = getattr(lib, name, None)
                        if address is not None:
                            vector[f"{kind}_{routine}"] = name
                            addresses[name] = int(ctypes.cast(address, ctypes.c_void_p).value or 0)
                return Gemm(names, addresses, bits, vector, _set_threads(lib))
        tried.append(f"{path or 'the process'}: no CBLAS gemm symbol")
    return "no CBLAS gemm found (" + "; ".join(tried) + ")"


def matmul_shims(symbols: list[str], gemm: Gemm) -> str:
    """LLVM IR defining each ``tdsl_matmul_*`` of ``symbols`` as a call to ``gemm``."""
    width = f"i{gemm.int_bits}"
    lines: list[str] = []
    declared: set[str] = set()
    for name in symbols:
        match = _SYMBOL.match(name) or _TILE_SYMBOL.match(name)
        if match is None:
            raise ValueError(f"not a tdsl matmul symbol: {name}")
        kind = match.group(1)
        scalar = "float" if kind == "f32" else "double"
        blas = gemm.symbols[kind]
        if blas not in declared:
            declared.add(blas)
            lines.append(
                f"declare void @{blas}(i32, i32, i32, {width}, {width}, {width}, {scalar}, ptr, "
                f"{width}, ptr, {width}, {scalar}, ptr, {width})"
            )
        if match.re is _TILE_SYMBOL:
            lines += _tile_shim(name, blas, scalar, width)
            continue
        m, k, n = map(int, match.groups()[1:])
        vector = _vector_shim(name, kind, scalar, width, m, k, n, gemm, declared)
        if vector:
            lines += vector
            continue
        one, zero = ("1.0", "0.0")
        lines += [
            f"define void @{name}(ptr noalias %a, ptr noalias %b, ptr noalias %c) {{",
            # CblasRowMajor = 101, CblasNoTrans = 111; C = 1 * A @ B + 0 * C
            f"  call void @{blas}(i32 101, i32 111, i32 111, {width} {m}, {width} {n}, "
            f"{width} {k}, {scalar} {one}, ptr %a, {width} {k}, ptr %b, {width} {n}, "
            f"{scalar} {zero}, ptr %c, {width} {n})",
            "  ret void",
            "}",
        ]
    return "\n".join(lines) + "\n"


def _vector_shim(
    name: str,
    kind: str,
    scalar: str,
    width: str,
    m: int,
    k: int,
    n: int,
    gemm: Gemm,
    declared: set[str],
) -> list[str]:
    """The lines of ``name`` where NumPy's ``matmul`` calls another BLAS routine than
    ``gemm`` for the shape, as NumPy does (its ``matmul`` inner loop): ``?dot`` for a 1x1
    result, ``?gemv`` for a vector operand (``m`` or ``n`` is 1); none otherwise.  The
    routines round alike but not the same on special values: OpenBLAS's ``sgemm``
    fuses multiply-adds, and ``[2, 2] @ [3.4e38, -3.4e38]`` is ``inf`` there and ``nan``
    in NumPy's ``sdot``.  (A zero extent takes ``gemm``, which writes zeros where
    ``gemv`` would return at once.)"""
    if 0 in (m, k, n) or (m != 1 and n != 1):
        return []
    routine = "dot" if m == n == 1 else "gemv"
    symbol = gemm.vector_routines.get(f"{kind}_{routine}")
    if symbol is None:
        return []
    lines: list[str] = []
    if symbol not in declared:
        declared.add(symbol)
        lines.append(
            f"declare {scalar} @{symbol}({width}, ptr, {width}, ptr, {width})"
            if routine == "dot"
            else f"declare void @{symbol}(i32, i32, {width}, {width}, {scalar}, ptr, {width}, "
            f"ptr, {width}, {scalar}, ptr, {width})"
        )
    lines.append(f"define void @{name}(ptr noalias %a, ptr noalias %b, ptr noalias %c) {{")
    if routine == "dot":
        lines += [
            f"  %r = call {scalar} @{symbol}({width} {k}, ptr %a, {width} 1, ptr %b, {width} 1)",
            f"  store {scalar} %r, ptr %c",
        ]
    elif n == 1:  # A @ b: y = A x (CblasRowMajor = 101, CblasNoTrans = 111)
        lines.append(
            f"  call void @{symbol}(i32 101, i32 111, {width} {m}, {width} {k}, {scalar} 1.0, "
            f"ptr %a, {width} {k}, ptr %b, {width} 1, {scalar} 0.0, ptr %c, {width} 1)"
        )
    else:  # a @ B: y = B^T x (CblasTrans = 112)
        lines.append(
            f"  call void @{symbol}(i32 101, i32 112, {width} {k}, {width} {n}, {scalar} 1.0, "
            f"ptr %b, {width} {n}, ptr %a, {width} 1, {scalar} 0.0, ptr %c, {width} 1)"
        )
    return [*lines, "  ret void", "}"]


def _tile_shim(name: str, blas: str, scalar: str, width: str) -> list[str]:
    """``@tdsl_gemm_*(a, b, c, m, n, k, lda, ldb, ldc, a_off, b_off, c_off, trans_a,
    trans_b, acc)``: ``C = op(A) @ op(B)`` on the tile of ``m`` rows whose operands start
    ``*_off`` elements into ``a``, ``b``, ``c`` (row strides ``ld*``), or ``C += op(A) @
    op(B)`` where ``acc`` is not 0 (a matmul whose contraction the loops run in tiles);
    ``op(X)`` is ``X`` transposed where ``trans_x`` is not 0.  Emitted by
    ``tdsl-lower-to-loops`` inside a group's loops."""
    sizes = ("m", "n", "k", "lda", "ldb", "ldc")
    flags = ("ta", "tb", "acc")
    params = ", ".join(f"i64 %{p}" for p in [*sizes, "aoff", "boff", "coff", *flags])
    lines = [f"define void @{name}(ptr %a, ptr %b, ptr %c, {params}) {{"]
    for x in "abc":
        lines.append(f"  %p{x} = getelementptr {scalar}, ptr %{x}, i64 %{x}off")
    for p in sizes:
        lines.append(
            f"  %w{p} = trunc i64 %{p} to {width}"
            if width != "i64"
            else f"  %w{p} = add i64 %{p}, 0"
        )
    lines += [
        # CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112
        "  %sa = icmp ne i64 %ta, 0",
        "  %transa = select i1 %sa, i32 112, i32 111",
        "  %t = icmp ne i64 %tb, 0",
        "  %trans = select i1 %t, i32 112, i32 111",
        "  %sacc = icmp ne i64 %acc, 0",
        f"  %beta = select i1 %sacc, {scalar} 1.0, {scalar} 0.0",
        f"  call void @{blas}(i32 101, i32 %transa, i32 %trans, {width} %wm, {width} %wn, "
        f"{width} %wk, {scalar} 1.0, ptr %pa, {width} %wlda, ptr %pb, {width} %wldb, "
        f"{scalar} %beta, ptr %pc, {width} %wldc)",
        "  ret void",
        "}",
    ]
    return lines


__all__ = ["Gemm", "find_gemm", "matmul_shims"]
