"""Running the compiler pipeline for the JIT, on IR objects.

The frontend (``parse`` and ``lower``, as ``to_tensordsl`` does), then the
passes of :func:`tdsl.pipeline.pipeline_spec` through xDSL's ``PassPipeline``
(``tdsl-fuse`` and ``tdsl-tile``, the registered pass classes ``tdsl-opt -p``
runs), then the NumPy target, whose Python source is exec'd, and, for the
native target, :func:`native_passes` (``tdsl-plan-loops``, ``tdsl-lower-to-loops``
and ``tdsl-convert-to-llvm``) and llvmlite; never printing and re-parsing.  Of a
program, only the chosen kernel is compiled.  :func:`build_ir` takes IR text
instead of the language: ``tensordsl`` IR, re-typed for given argument shapes
(:func:`~tdsl.jit.ir_input.retyped_function`), or fused or tiled IR, and runs the passes that are
left and the same targets.

``target="auto"`` (:func:`_choose`) compiles natively unless native code cannot
run here or :mod:`tdsl.jit.cost_model` predicts the numpy target faster (a call
costs each target its own overhead, per NumPy call, per element computed and per
transcendental element, with coefficients fitted by ``benchmarks/auto_cost.py``),
or a matmul would run as loops, or the loops would break the budget; a native compile
that fails with a :class:`~tdsl.errors.TdslError` falls back to the numpy
target too, and so does one that fails with an internal error (a compiler bug,
which ``target="native"`` raises as it is).  The reason is kept on the kernel
(``target_reason``); with ``$TDSL_NO_FALLBACK`` set (a test hook, see
:func:`tdsl.jit.options.no_fallback`) such a failure raises a
:class:`~tdsl.errors.TdslNativeError` instead.  Compilation is serialized by one process-wide lock
(:data:`COMPILE_LOCK`): xDSL's IR construction is not documented as
thread-safe, and the cache means each kernel compiles once anyway.

Python's cyclic garbage collector is paused while a kernel compiles: the IR
is a large graph of objects that live until the compilation ends, and each
full collection would traverse all of it again (a quarter of the time of a
2000-op compilation).  What the compilation leaves as cyclic garbage is
collected afterwards, as usual.  The collector is the process's: while a kernel
compiles, other threads' cyclic garbage waits too, and a thread that calls
``gc.disable()`` during a compile finds the collector enabled again after it.
"""

from __future__ import annotations

import contextlib
import gc
import math
import threading
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tdsl.defaults import default_fallback_budget
from tdsl.errors import (
    TdslError,
    TdslLoopsBudgetWarning,
    TdslNameError,
    TdslNativeError,
    TdslWarning,
    collecting_warnings,
    internal_error,
    plural,
    warn,
)
from tdsl.jit.cache import Request
from tdsl.jit.calls import OUT, fall_back_on_variant_failure, finish
from tdsl.jit.compiled import (
    COMPILE_FAILED,
    ArgSpec,
    CompiledKernel,
    GroupInfo,
    type_str,
)
from tdsl.jit.options import NO_FALLBACK_VARIABLE, JitOptions, no_fallback
from tdsl.jit.stages import (
    LOWER_PASSES,
    fused_budget,
    lower_planned,
    native_passes,
    plan_pass,
    run_pipeline,
)
from tdsl.jit.weak_bounds import int_bounds
from tdsl.pipeline import pipeline_spec

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp
    from xdsl.ir import Attribute

    from tdsl.frontend.ast import Expression, Program

COMPILE_LOCK = threading.RLock()
"""Serializes every compilation in the process."""


NATIVE_TARGET_SPEC = "llvm"
"""The ``tdsl-opt -t`` argument that prints the LLVM IR of a native kernel."""


def _tensor_spec(t: Attribute) -> tuple[tuple[int, ...], np.dtype[Any]]:
    from xdsl.dialects.builtin import TensorType

    from tdsl.dialects.tensordsl import numpy_dtype

    if not isinstance(t, TensorType):
        raise internal_error(f"jit: a kernel argument or result of type {t}, not a tensor")
    tensor = cast(TensorType[Any], t)
    return tuple(tensor.get_shape()), numpy_dtype(tensor.element_type)


def _type_text(t: Attribute) -> str:
    shape, dtype = _tensor_spec(t)
    return type_str(dtype, shape)


def _pick_function(module: ModuleOp, name: str) -> FuncOp:
    from xdsl.dialects.func import FuncOp

    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == name:
            return op
    raise TdslError(f"the frontend produced no function `{name}`")  # pragma: no cover


def _signature_names(
    tree: Expression | Program,
    kernel: str | None,
    shapes: Any = None,
    dtypes: Any = None,
) -> tuple[str, list[str]]:
    """The kernel to compile and its input names, in the frontend's argument order.

    An expression becomes ``main`` with the names it uses in order of first use;
    a program's kernel has its parameters.  (IR name hints cannot serve: xDSL
    drops a ``_<digits>`` suffix from them.)  No input may be named ``out``,
    the keyword that takes the result arrays: that is a TdslNameError at the
    name in the source.
    """
    from tdsl.frontend.ast import Program, Span
    from tdsl.frontend.ir_gen import expression_inputs

    spans: dict[str, Span] = {}
    if not isinstance(tree, Program):
        spans.update(expression_inputs(tree, shapes, dtypes))
        if kernel is not None and kernel != "main":
            raise TdslNameError(
                f"no kernel named `{kernel}`: an expression compiles to one kernel, `main`"
            )
        name = "main"
    else:
        if kernel is None:
            chosen = tree.kernels[-1]
        else:
            found = [k for k in tree.kernels if k.name == kernel]
            if not found:
                defined = ", ".join(f"`{k.name}`" for k in tree.kernels)
                raise TdslNameError(f"no kernel named `{kernel}`; the source defines {defined}")
            chosen = found[0]
        for param in chosen.params:
            spans.setdefault(param.name, param.span)
        name = chosen.name
    if OUT in spans:
        raise TdslNameError(
            f"an input may not be named `{OUT}`: a compiled kernel takes its result arrays "
            f"as `{OUT}=`; rename the input",
            tree.source.location(spans[OUT]),
        )
    return name, list(spans)


def _groups(fused: ModuleOp | None, tiled: ModuleOp, func_name: str) -> list[GroupInfo]:
    from xdsl.dialects.func import FuncOp

    from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp

    def function(module: ModuleOp) -> FuncOp | None:
        for op in module.ops:
            if isinstance(op, FuncOp) and op.sym_name.data == func_name:
                return op
        return None

    budgets: dict[str, int | None] = {}
    fused_func = None if fused is None else function(fused)
    if fused_func is not None:
        for op in fused_func.walk():
            if isinstance(op, FusedOp) and op.group is not None:
                budgets[op.group.data] = op.budget_value
    out: list[GroupInfo] = []
    tiled_func = function(tiled)
    if tiled_func is None:
        return out
    for op in tiled_func.walk():
        if not isinstance(op, TileOp | FusedOp):
            continue
        name = op.group.data if op.group is not None else f"#{len(out)}"
        ops = tuple(inner.name for inner in op.body.block.ops if not isinstance(inner, YieldOp))
        inputs = tuple(_type_text(v.type) for v in op.inputs)
        outputs = tuple(_type_text(r.type) for r in op.outputs)
        if isinstance(op, TileOp):
            info = GroupInfo(
                name,
                ops,
                inputs,
                outputs,
                op.space_value,
                op.tiles_value,
                op.scratch_value,
                budgets.get(name),
            )
        else:
            info = GroupInfo(name, ops, inputs, outputs, None, None, None, op.budget_value)
        out.append(info)
    return out


@contextlib.contextmanager
def _collector_paused() -> Generator[None]:
    """No cyclic garbage collection inside (see the module docstring)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build(request: Request, *, keep_object: bool = False) -> CompiledKernel:
    """Run the pipeline on IR objects and load the generated Python (or native code).

    ``keep_object`` keeps a native kernel's object file, for the cache on disk
    (see :mod:`tdsl.jit.entry`).
    """
    from tdsl.jit.timing import collecting, report

    with _collector_paused(), collecting() as times:
        kernel = _build(request, keep_object)
    kernel.compile_time = dict(times)
    report(lambda: f"{kernel.signature} for the {kernel.target} target", kernel.compile_time)
    return kernel


def _build(request: Request, keep_object: bool) -> CompiledKernel:
    from tdsl.dtypes import WEAK_PARAMS
    from tdsl.frontend import Program, lower, parse
    from tdsl.jit.timing import stage

    source, shapes, dtypes, kernel, filename, options = request

    with stage("frontend"):
        tree = parse(source, filename)
    name, arg_names = _signature_names(tree, kernel, shapes, dtypes)
    weak_params: list[bool] | None = None
    if isinstance(tree, Program):
        dtypes = None  # a program's signatures type it, weak scalars (`s: float`) too
        chosen = next(k for k in tree.kernels if k.name == name)
        weak_params = [p.dtype in WEAK_PARAMS for p in chosen.params]
    with stage("frontend"):
        module = lower(tree, shapes, cast(Any, dtypes))
    func_op = _pick_function(module, name)
    if len(module.body.block.ops) > 1:
        # Only the chosen kernel goes down the pipeline (and shows in ``.ir``).
        from xdsl.dialects.builtin import ModuleOp

        func_op.detach()
        module = ModuleOp([func_op])
    weak = weak_params or [_is_weak(arg_name, dtypes) for arg_name in arg_names]
    return _compile_module(
        module,
        func_op,
        arg_names,
        weak,
        source,
        filename,
        options,
        program=isinstance(tree, Program),
        keep_object=keep_object,
    )


def _compile_module(
    module: ModuleOp,
    func_op: FuncOp,
    arg_names: list[str],
    weak: list[bool],
    source: str,
    filename: str,
    options: JitOptions,
    program: bool,
    keep_object: bool = False,
    start: str = "tensordsl",
) -> CompiledKernel:
    """The passes and the target on ``module`` (whose one function is ``func_op``, at
    stage ``start``); ``keep_object`` as for :func:`build`."""
    from xdsl.context import Context

    from tdsl.backend.numpy.target import emit_numpy, load_numpy
    from tdsl.jit.timing import stage

    name = func_op.sym_name.data
    weak_bounds = [
        int_bounds(arg) if w else None for arg, w in zip(func_op.args, weak, strict=True)
    ]
    inputs = sum(math.prod(_tensor_spec(t)[0]) for t in func_op.function_type.inputs.data)
    spec = pipeline_spec(
        options.memory_budget,
        options.tile_size,
        options.tile_sizes,
        start,
        default_fallback_budget(inputs),
    )
    modules = run_pipeline(spec, module, Context(), start)
    with stage("numpy target"):
        python = emit_numpy(modules["tiled"], threads=options.threads)
        functions = load_numpy(python)
    if name not in functions:
        raise TdslError(f"the NumPy target produced no function `{name}`")  # pragma: no cover
    args = [
        ArgSpec(arg_name, *_tensor_spec(arg_type), weak=is_weak, bounds=bounds)
        for arg_name, arg_type, is_weak, bounds in zip(
            arg_names, func_op.function_type.inputs.data, weak, weak_bounds, strict=True
        )
    ]
    results = [_tensor_spec(t) for t in func_op.function_type.outputs.data]
    native = _choose(options, modules, name, keep_object)
    if native.function is None and options.target == "auto":
        _warn_plan_not_run(modules["tiled"], native.reason)
    compiled = CompiledKernel(
        name=name,
        args=args,
        results=results,
        options=options,
        expression=source,
        source=python,
        function=functions[name] if native.function is None else native.function,
        pipeline=spec if native.passes is None else ",".join(filter(None, [spec, native.passes])),
        modules=modules,
        groups=_groups(modules.get("fused"), modules["tiled"], name),
        program=program,
        target="numpy" if native.function is None else "native",
        target_reason=native.reason,
        llvm_ir=native.llvm_ir,
        filename=filename,
        host_specific=native.host_specific,
    )
    if native.function is not None and options.target == "auto":
        fall_back_on_variant_failure(compiled, lambda: functions[name])
    return finish(compiled)


def _warn_plan_not_run(tiled: ModuleOp, reason: str | None) -> None:
    """Under ``auto``, a loops plan the given IR records (``loops tiles [...]``, written
    or edited by hand) that the numpy target runs instead is a warning at that op, not
    only the kernel's ``target_reason``: the edit did nothing."""
    from tdsl.dialects.kernel import TileOp
    from tdsl.transforms.locations import op_location

    recorded = next(
        (op for op in tiled.walk() if isinstance(op, TileOp) and op.loops_plan is not None), None
    )
    if recorded is None:
        return
    where = op_location(recorded)
    warn(
        TdslWarning(
            f"{'' if where is None else f'{where}: '}the loops plan this kernel.tile records "
            f"is not run: target='auto' runs the numpy target ({reason}); target='native' "
            "runs the plan or says why it cannot"
        ),
        stacklevel=None,  # (the user's call of the JIT)
    )


@dataclass
class _Native:
    """What :func:`_choose` decided: the native function, or why there is none."""

    function: Callable[..., Any] | None = None
    reason: str | None = None
    llvm_ir: str | None = None
    host_specific: bool = False
    """Whether the decision depends on the CPU (native code, or a failed native compile)."""
    passes: str | None = None
    """The passes from the tiled stage that made the native function (``tdsl-opt -p``)."""


def _choose(
    options: JitOptions,
    modules: dict[str, ModuleOp],
    name: str,
    keep_object: bool = False,
) -> _Native:
    """Compile natively if ``options.target`` asks for it or ``auto`` finds it worth it.

    Adds the ``loops`` and ``llvm`` stages to ``modules`` when it compiles.
    ``target="native"`` raises what stops it; ``auto`` falls back to the numpy
    target with the reason.
    """
    if options.target == "numpy":
        return _Native(reason="target='numpy' was asked for")
    from tdsl.runtime.compile import native_unavailable_reason

    unavailable = native_unavailable_reason()
    if unavailable is not None:
        if options.target == "native":
            raise TdslNativeError(f"native code cannot run here: {unavailable}")
        return _Native(reason=f"native code cannot run here: {unavailable}")
    predicted = ""
    numpy_s = native_s = products = 0.0
    if options.target == "auto":
        from tdsl.jit.cost_model import features, predict

        tiled = modules["tiled"]
        numpy_s = predict(features(tiled, "numpy"), "numpy")
        native_f = features(tiled, "native")
        native_s, products = predict(native_f, "native"), native_f.products
        predicted = (
            f"{_seconds(native_s)} a call natively against {_seconds(numpy_s)} on the numpy target"
        )
        if native_s >= numpy_s:
            return _Native(reason=f"{_PREDICTS} {predicted}, {_NUMPY_FASTER}")
    from xdsl.context import Context

    from tdsl.backend.llvm.lower_to_loops import loops_matmuls
    from tdsl.jit.timing import stage
    from tdsl.runtime.native import NativeProgram, StridedVariants

    try:
        # (auto holds back the loops' budget warnings: they are its reason to fall back)
        held = (TdslLoopsBudgetWarning,) if options.target == "auto" else ()
        with collecting_warnings(held) as caught:
            # the loops' plan is recorded first; auto reads it before lowering
            budget = fused_budget(modules.get("fused")) or options.memory_budget
            planned = run_pipeline(
                plan_pass(options.threads, budget), modules["tiled"].clone(), Context(), None
            )
            # (how the loops compute each matmul: read once, for the choice and the reason)
            kinds, calls = (
                loops_matmuls(planned["planned"]) if options.target == "auto" else ({}, 0)
            )
            looped = kinds.get("loops", 0)
            if calls > products:  # (the loops' tiles, not the tile op's, say the BLAS calls)
                from tdsl.jit.cost_model import LOOPS_BLAS_CALL

                native_s += LOOPS_BLAS_CALL * (calls - products)
                predicted = (
                    f"{_seconds(native_s)} a call natively (its loops' "
                    f"{plural(calls, 'BLAS call')}) against {_seconds(numpy_s)} on the numpy target"
                )
            slower = calls > products and native_s >= numpy_s  # (auto only: else no calls)
            native: dict[str, ModuleOp] = {}
            if not looped and not slower:
                native = lower_planned(planned["planned"])
        over = [w for w in caught if held and isinstance(w, TdslLoopsBudgetWarning)]
        if looped:
            return _Native(
                reason=f"{plural(looped, 'matmul')} would run as compiled loops, not BLAS "
                "(a right operand computed in its group), where the numpy target calls BLAS"
            )
        if over:  # auto keeps the memory promise: the numpy target runs the plan
            return _Native(reason=f"the native loops would break the budget: {over[0]}")
        if slower:
            return _Native(reason=f"{_PREDICTS} {predicted}, {_NUMPY_FASTER}")
        with stage("machine code (llvmlite)"):
            program = NativeProgram(
                native["loops"], native["llvm"], options.threads, keep_object=keep_object
            )
    except Exception as err:
        if options.target == "native":
            raise
        # auto: any failure of the native compile, a TdslError or an internal error (a
        # compiler bug), falls back to the numpy target, saying why
        detail = (
            err.message
            if isinstance(err, TdslError)
            else f"internal error: {type(err).__name__}: {err}"
        )
        reason = f"{COMPILE_FAILED}: {detail}"
        if no_fallback():
            raise TdslNativeError(
                f"target='auto' would fall back to the numpy target "
                f"(${NO_FALLBACK_VARIABLE} is set): {reason}"
            ) from err
        return _Native(reason=reason, host_specific=True)
    modules["planned"] = planned["planned"]
    modules["loops"] = native["loops"]
    modules["llvm"] = native["llvm"]
    function = program.functions[name]
    # inputs that come strided (x.T, x[:, ::2]) run in variants compiled for their
    # strides, by the recorded plan
    function.variants = StridedVariants(modules["planned"], function)
    return _Native(
        function,
        _native_reason(options, predicted, kinds),
        program.llvm_ir,
        True,
        native_passes(options.threads, budget),
    )


_PREDICTS = "the cost model (tdsl.jit.cost_model) predicts"
_NUMPY_FASTER = "where the numpy target is faster"


def _seconds(t: float) -> str:
    return f"{t * 1e6:.3g} us" if t < 1e-3 else f"{t * 1e3:.3g} ms"


def _native_reason(options: JitOptions, predicted: str, kinds: Mapping[str, int]) -> str:
    """Why native code runs (``target_reason`` of a native kernel): with the matmuls
    BLAS computes and how the loops compute the others."""
    if options.target == "native":
        return "target='native' was asked for"
    from tdsl.backend.llvm.loops_flash import FLASH_BLAS_ROWS

    matmuls = sum(kinds.values())
    calls = "it has no matmul"
    if matmuls:
        calls = f"BLAS computes {kinds['blas']} of its {plural(matmuls, 'matmul')}"
    rest: list[str] = []
    if kinds["flash"]:
        rest.append(
            "the online softmax's `exp(s - max) @ v` runs a key tile at a time (by BLAS "
            f"where a tile holds {FLASH_BLAS_ROWS} rows or more)"
        )
    if kinds["narrow"]:
        rest.append(
            f"{plural(kinds['narrow'], 'float16 or integer matmul')} run as compiled loops "
            "(NumPy has no BLAS for them either)"
        )
    if kinds["loops"]:
        rest.append(f"{plural(kinds['loops'], 'float32 or float64 matmul')} as compiled loops")
    if rest:
        calls += "; " + "; ".join(rest) + ";"
    else:
        calls += ","
    return (
        f"auto: native code runs here, {_PREDICTS} {predicted}, {calls} and its loops keep "
        "the memory budget"
    )


def _is_weak(name: str, dtypes: object) -> bool:
    """Whether ``dtypes`` (normalized) declares expression input ``name`` a weak scalar."""
    from tdsl.frontend.ir_gen import WEAK, WEAK_INT

    spec = cast(dict[str, object], dtypes).get(name) if isinstance(dtypes, dict) else dtypes
    return spec is WEAK or spec is WEAK_INT


__all__ = [
    "COMPILE_LOCK",
    "LOWER_PASSES",
    "NATIVE_TARGET_SPEC",
    "build",
    "fused_budget",
    "native_passes",
    "plan_pass",
]
