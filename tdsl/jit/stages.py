"""The JIT's pipeline runs on IR objects, and the native target's passes.

:func:`run_pipeline` runs a pass pipeline, keeping the IR before and after each pass
(the kernel's stages); :func:`plan_pass` and :data:`LOWER_PASSES` are the native
target's passes after the tiled stage (as ``tdsl-opt -p`` spells them), and
:func:`lower_planned` runs the latter once per planned module in a process.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from tdsl.errors import collecting_warnings
from tdsl.jit.compiled import print_located
from tdsl.pipeline import STAGES, build_pipeline

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass


def plan_pass(threads: int, memory_budget: int | None = None) -> str:
    """The pass recording the native loops' plan in tiled IR (the ``planned`` stage),
    for calls on ``threads`` threads, under ``memory_budget`` where the kernel's groups
    record one (their loops may use what it leaves, see
    :func:`tdsl.backend.llvm.plan_loops.plan_loops`)."""
    options = [f"threads={threads}"] if threads > 1 else []
    if memory_budget is not None:
        options.append(f"memory-budget={memory_budget}")
    return f"tdsl-plan-loops{{{' '.join(options)}}}" if options else "tdsl-plan-loops"


def fused_budget(fused: ModuleOp | None) -> int | None:
    """The memory budget the groups of ``fused`` (IR at the ``fused`` stage) were planned
    under (the largest one recorded; None without groups or a fused stage)."""
    from tdsl.dialects.kernel import FusedOp

    budgets = [
        b
        for op in (() if fused is None else fused.walk())
        if isinstance(op, FusedOp) and (b := op.budget_value) is not None
    ]
    return max(budgets, default=None)


LOWER_PASSES = "tdsl-lower-to-loops,tdsl-convert-to-llvm{noalias=true}"
"""The passes from the planned stage to the llvm dialect."""


def native_passes(threads: int, memory_budget: int | None = None) -> str:
    """The passes from the tiled stage to the llvm dialect, as ``tdsl-opt -p`` spells
    them, for calls on ``threads`` threads (``memory_budget``: see :func:`plan_pass`)."""
    return f"{plan_pass(threads, memory_budget)},{LOWER_PASSES}"


def run_pipeline(
    spec: str, module: ModuleOp, ctx: Context, input_stage: str | None = "tensordsl"
) -> dict[str, ModuleOp]:
    """Run the passes of ``spec`` on ``module`` in place; the IR before and after each.

    The result maps ``input_stage`` to a copy of the input and each pass's stage
    name (:data:`tdsl.pipeline.STAGES`) to the IR it produced: a copy, except
    after the last pass, whose module is ``module`` itself (and with no pass,
    ``input_stage`` maps to ``module``).  ``input_stage=None`` leaves out the
    input (a pipeline continuing from a stage already kept).
    """
    import time

    from tdsl.jit.timing import record

    if not spec:
        return {} if input_stage is None else {input_stage: module}
    stages: dict[str, ModuleOp] = {}
    started = [time.perf_counter()]

    def snapshot(
        previous: ModulePass | None, current: ModuleOp, upcoming: ModulePass | None
    ) -> None:
        now = time.perf_counter()
        if previous is not None:
            record(previous.name, now - started[0])
        if previous is None:
            if input_stage is not None:
                stages[input_stage] = current.clone()
            return
        check_results(current, previous.name)
        name = STAGES.get(previous.name, previous.name)
        stages[name] = current if upcoming is None else current.clone()
        started[0] = time.perf_counter()  # (the copy is not the next pass's time)

    build_pipeline(spec, snapshot).apply(ctx, module)
    return stages


def check_results(module: ModuleOp, pass_name: str) -> None:
    """Raise an internal error unless each ``func.func`` of ``module`` returns what its
    signature says, after pass ``pass_name``.  The JIT checks this after every pass, where
    verifying the whole module would cost as much as some passes: a rewrite that puts a
    value of another type in a result's place is then an error at the ``func.return``,
    not a result of the wrong shape (``reshape(h + 1, (1, 1))`` of a 0-d ``h`` once
    returned a 0-d array)."""
    from xdsl.dialects import func

    from tdsl.errors import internal_error

    for fn in module.ops:
        if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
            continue
        ret = fn.body.blocks[-1].last_op
        if not isinstance(ret, func.ReturnOp):
            continue
        got = [a.type for a in ret.arguments]
        want = list(fn.function_type.outputs.data)
        if got != want:
            raise internal_error(
                f"{pass_name}: @{fn.sym_name.data} returns ({', '.join(map(str, got))}) "
                f"where its signature says ({', '.join(map(str, want))})",
                op=ret,
            )


LOWERED_CACHE_SIZE = 32
"""How many native lowerings (:data:`LOWER_PASSES` on a planned module) a process keeps,
the most recently used, by the planned module's text with its source locations."""

_LOWERED: OrderedDict[str, dict[str, ModuleOp]] = OrderedDict()
_LOWERED_LOCK = threading.Lock()


def lower_planned(planned: ModuleOp) -> dict[str, ModuleOp]:
    """The ``loops`` and ``llvm`` stages of ``planned`` (left unchanged): its
    :data:`LOWER_PASSES`, run once per planned text (with source locations) in a process.

    Kernels that plan alike (one expression under budgets that tile it alike, a kernel
    compiled again by another JIT) lower once and share the two modules: nothing changes
    them after the lowering (a kernel prints them and compiles the llvm one; its
    :meth:`~tdsl.jit.compiled.LazyIR.module` hands out a copy of a shared stage), so they
    are not copied, in or out (copying them took 4 ms of a 100 ms native compile).  A
    lowering that gave a tdsl warning (:func:`tdsl.errors.warn`, collected in this
    thread) is not kept (each compile gives its warnings); one remembered
    records its passes' times as the lookup took.  Machine code has its own cache
    (:func:`tdsl.runtime.compile.compile_llvm`).
    """
    import time

    from xdsl.context import Context

    from tdsl.jit.timing import record

    started = time.perf_counter()
    key = print_located(planned)
    with _LOWERED_LOCK:
        found = _LOWERED.get(key)
        if found is not None:
            _LOWERED.move_to_end(key)
    if found is not None:
        for name in LOWER_PASSES.split(","):
            record(name.split("{")[0], (time.perf_counter() - started) / 2)
        return dict(found)
    with collecting_warnings() as seen:  # (given to the caller as they come)
        lowered = run_pipeline(LOWER_PASSES, planned.clone(), Context(), None)
    if not seen:
        with _LOWERED_LOCK:
            _LOWERED[key] = dict(lowered)
            while len(_LOWERED) > LOWERED_CACHE_SIZE:
                _LOWERED.popitem(last=False)
    return lowered


__all__ = [
    "LOWERED_CACHE_SIZE",
    "LOWER_PASSES",
    "fused_budget",
    "lower_planned",
    "native_passes",
    "plan_pass",
    "run_pipeline",
]
