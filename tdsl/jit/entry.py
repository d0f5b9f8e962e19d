"""A compiled kernel as stored data, and the kernel rebuilt from it without xDSL.

:func:`kernel_entry` turns a freshly built :class:`CompiledKernel` into what the
cache on disk (:mod:`tdsl.jit.disk_cache`) writes: JSON-ready values and, for
a native kernel, its object code.  :func:`load_kernel` rebuilds the kernel in
another process from those, importing neither xDSL nor the compiler:

- everything the kernel shows is stored as data: signature, results,
  ``source``, ``llvm_ir``, ``pipeline``, ``target`` and its reason, ``groups``,
  and the IR text of every stage (``.ir``), plus the ``tensordsl`` and
  ``tiled`` texts with source locations, which are parsed back (importing
  xDSL then) only when ``fusion_report``, ``explain()`` or ``to_dot()`` asks;
- the numpy target's function is its generated Python source, executed again;
- a native function is the object code (loaded with
  :func:`tdsl.runtime.compile.load_object`, the BLAS symbols it calls bound
  first) and its :class:`~tdsl.runtime.native.FunctionPlan`.

Stored data that does not have the expected form raises ``KeyError``,
``TypeError`` or ``ValueError``; a native entry whose symbols cannot be found
raises :class:`~tdsl.runtime.compile.NativeCompileError`.  The cache treats
both as a bad entry and compiles again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tdsl.errors import internal_error
from tdsl.jit.calls import fall_back_on_variant_failure, finish
from tdsl.jit.compiled import LOCATED_STAGES, ArgSpec, CompiledKernel, GroupInfo, LazyIR
from tdsl.jit.options import JitOptions

Data = dict[str, Any]


def kernel_entry(kernel: CompiledKernel) -> tuple[Data, bytes]:
    """What to store of ``kernel`` (built with ``keep_object=True``): data and object code.

    Prints the IR of every stage that has not been printed yet.
    """
    data: Data = {
        "name": kernel.name,
        "args": [
            [a.name, list(a.shape), a.dtype.str, a.weak, a.bounds and list(a.bounds)]
            for a in kernel.args
        ],
        "results": [[list(shape), dtype.str] for shape, dtype in kernel.results],
        "expression": kernel.expression,
        "source": kernel.source,
        "pipeline": kernel.pipeline,
        "program": kernel.program,
        "target": kernel.target,
        "target_reason": kernel.target_reason,
        "llvm_ir": kernel.llvm_ir,
        "filename": kernel.filename,
        "host_specific": kernel.host_specific,
        "groups": [_group_data(g) for g in kernel.groups],
        "ir": {stage: kernel.ir[stage] for stage in kernel.ir},
        "located": {s: kernel.ir.located(s) for s in LOCATED_STAGES if s in kernel.ir},
        "native": None,
    }
    if kernel.target != "native":
        return data, b""
    from tdsl.runtime.native import NativeFunction

    function = kernel.function
    if not isinstance(function, NativeFunction):
        raise internal_error(f"jit: the native kernel `{kernel.name}` has no native function")
    compiled = function.code.compiled
    code = compiled.object_code
    if code is None:
        raise ValueError("the kernel was compiled without keeping its object code")
    data["native"] = {
        "plan": function.plan.to_data(),
        "signatures": {n: [r, list(p)] for n, (r, p) in compiled.signatures.items()},
        "symbols": sorted(function.code.symbols),
    }
    return data, code


def _group_data(g: GroupInfo) -> list[Any]:
    def optional(dims: tuple[int, ...] | None) -> list[int] | None:
        return None if dims is None else list(dims)

    return [
        g.name,
        list(g.ops),
        list(g.inputs),
        list(g.outputs),
        optional(g.space),
        optional(g.tiles),
        g.scratch,
        g.budget,
    ]


def _group(data: list[Any]) -> GroupInfo:
    name, ops, inputs, outputs, space, tiles, scratch, budget = data

    def optional(dims: list[int] | None) -> tuple[int, ...] | None:
        return None if dims is None else tuple(int(d) for d in dims)

    return GroupInfo(
        str(name),
        tuple(str(o) for o in ops),
        tuple(str(i) for i in inputs),
        tuple(str(o) for o in outputs),
        optional(space),
        optional(tiles),
        None if scratch is None else int(scratch),
        None if budget is None else int(budget),
    )


def _strings(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("expected a mapping of strings")
    items: dict[Any, Any] = value  # pyright: ignore[reportUnknownVariableType]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in items.items()):
        raise TypeError("expected a mapping of strings")
    return dict(items)


def _optional_str(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError("expected a string or null")
    return value


def load_kernel(data: Mapping[str, Any], code: bytes, options: JitOptions) -> CompiledKernel:
    """The kernel :func:`kernel_entry` stored, compiled with ``options``, ready to call."""
    args = [
        ArgSpec(
            str(name),
            tuple(int(d) for d in shape),
            np.dtype(str(dtype)),
            bool(weak),
            None if bounds is None else (int(bounds[0]), int(bounds[1])),
        )
        for name, shape, dtype, weak, bounds in data["args"]
    ]
    results = [
        (tuple(int(d) for d in shape), np.dtype(str(dtype))) for shape, dtype in data["results"]
    ]
    name = str(data["name"])
    source = str(data["source"])
    target = str(data["target"])
    modules = LazyIR(texts=_strings(data["ir"]), located=_strings(data["located"]))
    if target == "native":
        from tdsl.runtime.native import StridedVariants

        function = _native_function(data["native"], code, options.threads)
        stage = "planned" if "planned" in modules else "tiled"
        if stage in modules:
            # strided inputs run in variants compiled from the stored IR, by its loops plan
            function.variants = StridedVariants(lambda: modules.module(stage), function)
    elif target == "numpy":
        from tdsl.backend.numpy.load import load_numpy

        function = load_numpy(source)[name]
    else:
        raise ValueError(f"unknown target {target!r}")
    kernel = CompiledKernel(
        name=name,
        args=args,
        results=results,
        options=options,
        expression=str(data["expression"]),
        source=source,
        function=function,
        pipeline=str(data["pipeline"]),
        modules=modules,
        groups=[_group(g) for g in data["groups"]],
        program=bool(data["program"]),
        target=target,
        target_reason=_optional_str(data["target_reason"]),
        llvm_ir=_optional_str(data["llvm_ir"]),
        filename=str(data["filename"]),
        host_specific=bool(data["host_specific"]),
    )
    if target == "native" and options.target == "auto":
        from tdsl.backend.numpy.load import load_numpy

        fall_back_on_variant_failure(kernel, lambda: load_numpy(source)[name])
    return finish(kernel)


def _native_function(native: Mapping[str, Any], code: bytes, threads: int) -> Any:
    from tdsl.runtime.blas import find_gemm
    from tdsl.runtime.compile import NativeCompileError, load_object
    from tdsl.runtime.native import FunctionPlan, NativeCode

    plan = FunctionPlan.from_data(native["plan"])
    signatures = {
        str(n): (str(r), tuple(str(p) for p in params))
        for n, (r, params) in native["signatures"].items()
    }
    wanted = [str(s) for s in native["symbols"]]
    symbols: dict[str, int] = {}
    if wanted:
        gemm = find_gemm()
        available = {} if isinstance(gemm, str) else gemm.addresses
        missing = [s for s in wanted if s not in available]
        if missing:
            raise NativeCompileError(f"no BLAS symbol {', '.join(missing)} in this process")
        symbols = {s: available[s] for s in wanted}
    compiled = load_object(code, signatures, symbols=symbols)
    return NativeCode(compiled, threads, symbols).function(plan)


__all__ = ["kernel_entry", "load_kernel"]
