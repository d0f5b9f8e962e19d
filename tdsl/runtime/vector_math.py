"""Masked vector variants for the C library's ``sin``/``cos`` calls in LLVM IR text.

:mod:`tdsl.backend.llvm.math_trig` computes ``sin``/``cos`` as arithmetic and calls
the C library (``sinf``, ``sin``, ``cosf``, ``cos``) in a branch, only for arguments
beyond its domain.  LLVM's loop vectorizer accepts a call in a loop only if it is an
intrinsic or has a vector variant: a plain ``sinf`` may write ``errno``, and the
loop would stay scalar.  xDSL's converter writes no function or call attributes, so
:func:`with_vector_variants` edits the text: each such call becomes a call of a
wrapper ``tdsl_<fn>`` (``memory(none)``: ``errno`` is never read) carrying a
``vector-function-abi-variant`` attribute that names masked variants for 4, 8 and 16
lanes, ``tdsl_<fn>_m<N>``, defined in the module.  The vectorized loop calls the
variant with the branch's mask; it calls the library for the lanes whose mask bit is
set, and returns after one test when none is (every argument in the domain).  Every
function added is internal to the module, so object code loaded from the disk cache
needs nothing more than the library functions themselves.
"""

from __future__ import annotations

import re

_FUNCTIONS = {"sinf": "float", "cosf": "float", "sin": "double", "cos": "double"}
"""The C library functions given variants, with their LLVM type."""

VECTOR_WIDTHS = (4, 8, 16)
"""The lane counts of the masked variants."""

_CALL = re.compile(r'call ccc (float|double) @"?(sinf|cosf|sin|cos)"?\(([^)]*)\)')

_WRAPPER_ATTRS = 4101
"""Attribute group numbers used here (far above those llvmlite writes)."""


def _masked_variant(fn: str, ty: str, vf: int) -> str:
    """``tdsl_<fn>_m<vf>(v, mask)``: ``v`` with the lanes of ``mask`` replaced by ``fn``
    of them (one branch when no bit is set)."""
    vt = f"<{vf} x {ty}>"
    return f"""
define internal {vt} @tdsl_{fn}_m{vf}({vt} %v, <{vf} x i1> %m) #{_WRAPPER_ATTRS} {{
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
}}
"""


def _definitions(fn: str, ty: str, group: int) -> str:
    wrapper = (
        f"\ndefine internal {ty} @tdsl_{fn}({ty} %a) #{_WRAPPER_ATTRS} {{\n"
        f"  %r = call {ty} @{fn}({ty} %a)\n  ret {ty} %r\n}}\n"
    )
    names = ",".join(f"_ZGV_LLVM_M{vf}v_tdsl_{fn}(tdsl_{fn}_m{vf})" for vf in VECTOR_WIDTHS)
    attrs = f'attributes #{group} = {{ "vector-function-abi-variant"="{names}" }}\n'
    return wrapper + "".join(_masked_variant(fn, ty, vf) for vf in VECTOR_WIDTHS) + attrs


def with_vector_variants(text: str) -> str:
    """LLVM IR ``text`` whose calls of ``sinf``/``sin``/``cosf``/``cos`` go through
    wrappers with masked vector variants (``text`` itself if it calls none)."""
    used: list[str] = []

    def wrap(match: re.Match[str]) -> str:
        ty, fn, args = match.groups()
        if _FUNCTIONS[fn] != ty:
            return match.group(0)
        if fn not in used:
            used.append(fn)
        group = _WRAPPER_ATTRS + 1 + list(_FUNCTIONS).index(fn)
        return f"call ccc {ty} @tdsl_{fn}({args}) #{group}"

    text = _CALL.sub(wrap, text)
    if not used:
        return text
    pointers = ", ".join(f"ptr @tdsl_{fn}_m{vf}" for fn in used for vf in VECTOR_WIDTHS)
    count = len(used) * len(VECTOR_WIDTHS)
    return (
        text
        + "".join(
            _definitions(fn, _FUNCTIONS[fn], _WRAPPER_ATTRS + 1 + list(_FUNCTIONS).index(fn))
            for fn in used
        )
        + f"\n@llvm.compiler.used = appending global [{count} x ptr] [{pointers}], "
        + 'section "llvm.metadata"\n'
        + f"attributes #{_WRAPPER_ATTRS} = {{ noinline nounwind willreturn memory(none) }}\n"
    )


__all__ = ["VECTOR_WIDTHS", "with_vector_variants"]
