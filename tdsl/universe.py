"""The ``xdsl.universe`` entry point: tdsl's dialects, passes, frontend and targets.

Registered in ``pyproject.toml`` so that plain ``xdsl-opt`` loads them.  Every
value is a zero-argument factory with a lazy import inside, so building the
universe costs nothing.  Passes are registered under ``tdsl-`` names, because
another public xDSL project also has a dialect named ``kernel``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from xdsl.universe import Universe

if TYPE_CHECKING:
    from xdsl.ir import Dialect
    from xdsl.passes import ModulePass
    from xdsl.utils.frontend import Frontend
    from xdsl.utils.target import Target


def _tensordsl() -> Dialect:
    from tdsl.dialects.tensordsl import TensorDSL

    return TensorDSL


def _kernel() -> Dialect:
    from tdsl.dialects.kernel import Kernel

    return Kernel


def _tdslmath() -> Dialect:
    from tdsl.dialects.tdslmath import TdslMath

    return TdslMath


def _fuse() -> type[ModulePass]:
    from tdsl.transforms.fuse import FusePass

    return FusePass


def _sink_views() -> type[ModulePass]:
    from tdsl.transforms.sink_views import SinkViewsPass

    return SinkViewsPass


def _tile() -> type[ModulePass]:
    from tdsl.transforms.tile import TilePass

    return TilePass


def _plan_loops() -> type[ModulePass]:
    from tdsl.backend.llvm.plan_loops import PlanLoopsPass

    return PlanLoopsPass


def _lower_to_loops() -> type[ModulePass]:
    from tdsl.backend.llvm.lower_to_loops import LowerToLoopsPass

    return LowerToLoopsPass


def _convert_to_llvm() -> type[ModulePass]:
    from tdsl.backend.llvm.convert_to_llvm import ConvertToLLVMPass

    return ConvertToLLVMPass


def _llvm_target() -> type[Target]:
    from tdsl.backend.llvm.target import LLVMTarget

    return LLVMTarget


def _tdsl_llvm_target() -> type[Target]:
    from tdsl.backend.llvm.target import TdslLLVMTarget

    return TdslLLVMTarget


def _numpy_target() -> type[Target]:
    from tdsl.backend.numpy.target import NumpyTarget

    return NumpyTarget


def _dot_target() -> type[Target]:
    from tdsl.backend.dot import DotTarget

    return DotTarget


def _tdsl_frontend() -> type[Frontend]:
    from tdsl.frontend.xdsl_frontend import TdslFrontend

    return TdslFrontend


TDSL_DIALECTS = {"tensordsl": _tensordsl, "kernel": _kernel, "tdslmath": _tdslmath}
TDSL_PASSES = {
    "tdsl-sink-views": _sink_views,
    "tdsl-fuse": _fuse,
    "tdsl-tile": _tile,
    "tdsl-plan-loops": _plan_loops,
    "tdsl-lower-to-loops": _lower_to_loops,
    "tdsl-convert-to-llvm": _convert_to_llvm,
}
TDSL_TARGETS = {"numpy": _numpy_target, "tdsl-llvm": _tdsl_llvm_target, "dot": _dot_target}
"""tdsl's targets, as ``xdsl-opt`` registers them.  The LLVM target is ``tdsl-llvm``
here, because xDSL's own universe already has an ``llvm`` target."""

TDSL_OPT_TARGETS = {"numpy": _numpy_target, "llvm": _llvm_target, "dot": _dot_target}
"""tdsl's targets as ``tdsl-opt`` registers them: its ``llvm`` is tdsl's."""
TDSL_FRONTENDS = {"tdsl": _tdsl_frontend}

TDSL_UNIVERSE = Universe(
    all_dialects=TDSL_DIALECTS,
    all_passes=TDSL_PASSES,
    all_targets=TDSL_TARGETS,
    all_frontends=TDSL_FRONTENDS,
)


def _join_xdsl_run() -> None:
    """Give ``xdsl-run`` tdsl's interpreter functions: it registers a fixed list of
    xDSL's own (``xdsl.interpreters.register_implementations``; no entry point names
    interpreter functions), and it loads this module through the ``xdsl.universe``
    entry point before it runs, so the hook is added to its runner then, in that
    process only."""
    run = sys.modules.get("xdsl.tools.xdsl_run")
    main = getattr(run, "xDSLRunMain", None)
    if main is None or getattr(main, "_tdsl_joined", False):
        return
    original = main.register_implementations

    def register_implementations(self: Any, interpreter: Any) -> None:
        original(self, interpreter)
        from tdsl.interpreters.run import register_tdsl

        register_tdsl(interpreter, interpreter.module)

    main.register_implementations = register_implementations
    main._tdsl_joined = True


_join_xdsl_run()
