"""Vector variants in LLVM IR text: masked ones for the C library's ``sin``/``cos``
calls, and whole math functions called many times (:func:`_math_variants`).

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


def _libm_variants(text: str) -> tuple[str, list[str]]:
    """``text`` with its ``sinf``/``sin``/``cosf``/``cos`` calls going through wrappers
    with masked vector variants, and the variants' names."""
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
    text += "".join(
        _definitions(fn, _FUNCTIONS[fn], _WRAPPER_ATTRS + 1 + list(_FUNCTIONS).index(fn))
        for fn in used
    )
    return text, [f"tdsl_{fn}_m{vf}" for fn in used for vf in VECTOR_WIDTHS]


MANY_CALLS = 32
"""How many calls of one math function a module makes before the function is kept whole
(:func:`_math_variants`) rather than inlined at each call.  Inlined, each call costs
LLVM's optimizer about 30 ms here; called through the variants, the kernel runs slower
(a 2,000-op chain of eight functions, 125 calls each: 3.0 s a call against 2.3 s, and
18 s to compile against 87 s: ``python benchmarks/compile_time.py math --inlined``)."""

_MATH = re.compile(
    r'define internal (float|double) @"(__tdsl_math_[\w.]+)"\(([^)]*)\) alwaysinline'
)
"""The definition of a math function :mod:`tdsl.backend.llvm.math_outline` outlined."""


def _lane_variant(name: str, ty: str, arity: int, vf: int) -> str:
    """``<name>_v<vf>``: ``<name>.body`` of each of ``vf`` lanes, in a loop over them that
    LLVM vectorizes once the body is inlined into it."""
    vt = f"<{vf} x {ty}>"
    params = ", ".join(f"{vt} %v{i}" for i in range(arity))
    stores = "".join(
        f"  %in{i} = alloca {vt}\n  store {vt} %v{i}, ptr %in{i}\n" for i in range(arity)
    )
    loads = "".join(
        f"  %p{i} = getelementptr {ty}, ptr %in{i}, i64 %k\n  %x{i} = load {ty}, ptr %p{i}\n"
        for i in range(arity)
    )
    args = ", ".join(f"{ty} %x{i}" for i in range(arity))
    return f"""
define internal {vt} @"{name}_v{vf}"({params}) #{_WRAPPER_ATTRS} {{
entry:
{stores}  %out = alloca {vt}
  br label %loop
loop:
  %k = phi i64 [0, %entry], [%k1, %loop]
{loads}  %y = call {ty} @"{name}.body"({args})
  %q = getelementptr {ty}, ptr %out, i64 %k
  store {ty} %y, ptr %q
  %k1 = add i64 %k, 1
  %end = icmp eq i64 %k1, {vf}
  br i1 %end, label %done, label %loop
done:
  %r = load {vt}, ptr %out
  ret {vt} %r
}}
"""


def _math_variants(text: str) -> tuple[str, list[str]]:
    """``text`` whose math functions called :data:`MANY_CALLS` times or more are no
    longer inlined at each call, and the names of their vector variants.

    :mod:`tdsl.backend.llvm.math_outline` expands a math function once and marks it
    ``alwaysinline``, so that each call computes it in line and the loop around it
    vectorizes.  LLVM's optimizer then works through one copy of the expansion per call,
    and its time grows faster than their number: a chain of 300 ``tanh`` took 18 s.  So
    the expansion of such a function is renamed ``<name>.body`` (still
    ``alwaysinline``), and ``<name>`` becomes a call of it that is never inlined, with a
    ``vector-function-abi-variant`` attribute at each call naming variants for 4, 8 and
    16 lanes.  Each variant runs the body over its lanes in a loop LLVM vectorizes, so
    the expansion is optimized four times, whatever the number of calls; a vectorized
    loop calls the variant of its width, and its scalar remainder calls ``<name>``.  The
    arithmetic is the same, lane by lane, so the results are the same bits."""
    found = [m.groups() for m in _MATH.finditer(text)]
    names: list[str] = []
    for k, (ty, name, params) in enumerate(found):
        call = re.compile(rf'call ccc {ty} @"{re.escape(name)}"\(([^)]*)\)')
        if len(call.findall(text)) < MANY_CALLS:
            continue
        group = _WRAPPER_ATTRS + 16 + k
        text = text.replace(
            f'define internal {ty} @"{name}"(', f'define internal {ty} @"{name}.body"('
        )
        text = call.sub(rf'call ccc {ty} @"{name}"(\g<1>) #{group}', text)
        arity = params.count(",") + 1
        args = ", ".join(f"{ty} %a{i}" for i in range(arity))
        text += (
            f'\ndefine internal {ty} @"{name}"({args}) #{_WRAPPER_ATTRS} {{\n'
            f'  %r = call {ty} @"{name}.body"({args})\n  ret {ty} %r\n}}\n'
        )
        text += "".join(_lane_variant(name, ty, arity, vf) for vf in VECTOR_WIDTHS)
        variants = ",".join(
            f"_ZGV_LLVM_N{vf}{'v' * arity}_{name}({name}_v{vf})" for vf in VECTOR_WIDTHS
        )
        text += f'attributes #{group} = {{ "vector-function-abi-variant"="{variants}" }}\n'
        names += [f'"{name}_v{vf}"' for vf in VECTOR_WIDTHS]
    return text, names


def with_vector_variants(text: str) -> str:
    """LLVM IR ``text`` whose calls of ``sinf``/``sin``/``cosf``/``cos`` go through
    wrappers with masked vector variants, and whose math functions called
    :data:`MANY_CALLS` times or more are kept whole with vector variants of their own
    (``text`` itself if there are none)."""
    text, math_names = _math_variants(text)
    text, libm_names = _libm_variants(text)
    used = math_names + libm_names
    if not used:
        return text
    pointers = ", ".join(f"ptr @{name}" for name in used)
    return (
        text
        + f"\n@llvm.compiler.used = appending global [{len(used)} x ptr] [{pointers}], "
        + 'section "llvm.metadata"\n'
        + f"attributes #{_WRAPPER_ATTRS} = {{ noinline nounwind willreturn memory(none) }}\n"
    )


__all__ = ["MANY_CALLS", "VECTOR_WIDTHS", "with_vector_variants"]
