"""tdsl's standard pipeline, spelled as ``tdsl-opt`` takes it.

The JIT compiles with exactly the passes a user would run by hand::

    tdsl-opt model.tdsl -p "$(pipeline_spec(...))" -t "$(target_spec(threads))"

:func:`pipeline_spec` builds the ``-p`` string (``tdsl-fuse`` then
``tdsl-tile``, both under one memory budget, plus the tile options that are
set), :func:`target_spec` the ``-t`` string of the NumPy target, and
:func:`build_pipeline` turns a spec into xDSL's ``PassPipeline`` from the pass
classes registered in :mod:`tdsl.universe`, as ``tdsl-opt`` does.  Building a
spec is pure string work: this module imports xDSL only in
:func:`build_pipeline`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tdsl.defaults import DEFAULT_MEMORY_BUDGET
from tdsl.errors import internal_error

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass, PassPipeline

STAGES: dict[str, str] = {
    "canonicalize": "canonical",
    "tdsl-fuse": "fused",
    "tdsl-tile": "tiled",
    "tdsl-plan-loops": "planned",
    "tdsl-lower-to-loops": "loops",
    "tdsl-convert-to-llvm": "llvm",
}
"""The name of the IR stage each pass of the standard pipeline produces."""


def pipeline_spec(
    memory_budget: int | None = DEFAULT_MEMORY_BUDGET,
    tile_size: int | None = None,
    tile_sizes: Sequence[int] = (),
    start: str = "tensordsl",
    fallback_budget: int | None = None,
) -> str:
    """``canonicalize,tdsl-fuse{memory-budget=B},tdsl-tile{memory-budget=B ...}``: the
    ``-p`` argument.  xDSL's ``canonicalize`` applies the ops' canonicalization
    patterns first (``x * 1`` is ``x``, ``x ** 3`` is ``x * x * x``: see
    :class:`~tdsl.dialects.tensordsl.powers.PowerByConstant`).

    ``tile-size=`` and ``tile-sizes=`` are added to ``tdsl-tile`` only when set.
    The values are not checked here; the passes check them when they run.
    ``start`` is the stage the IR is at (:data:`INPUT_STAGES`): from ``fused`` IR
    only ``tdsl-tile`` runs, from ``tiled`` IR no pass (the spec is empty).

    ``memory_budget=None`` is the JIT's default: ``tdsl-fuse`` plans at
    :data:`DEFAULT_MEMORY_BUDGET`, or at ``fallback_budget`` (when given) for a function
    no plan of that fits, and ``tdsl-tile`` tiles each group under the budget it
    records.
    """
    fuse_options = [f"memory-budget={memory_budget or DEFAULT_MEMORY_BUDGET}"]
    if memory_budget is None and fallback_budget is not None:
        fuse_options.append(f"fallback-budget={fallback_budget}")
    tile_options = [] if memory_budget is None else [f"memory-budget={memory_budget}"]
    if tile_size is not None:
        tile_options.append(f"tile-size={tile_size}")
    if tile_sizes:
        tile_options.append(f"tile-sizes={','.join(str(t) for t in tile_sizes)}")
    passes = [
        f"canonicalize,tdsl-fuse{{{' '.join(fuse_options)}}}",
        f"tdsl-tile{{{' '.join(tile_options)}}}" if tile_options else "tdsl-tile",
    ]
    return ",".join(passes[INPUT_STAGES.index(start) :])


INPUT_STAGES = ("tensordsl", "fused", "tiled")
"""The stages the standard pipeline starts from, in order."""


def target_spec(threads: int = 1) -> str:
    """``numpy{threads=N}``: the ``-t`` argument for the NumPy target."""
    return f"numpy{{threads={threads}}}"


PipelineCallback = Callable[["ModulePass | None", "ModuleOp", "ModulePass | None"], None]
"""Called before the first pass, between passes and after the last: (previous, module, next)."""


def build_pipeline(spec: str, callback: PipelineCallback | None = None) -> PassPipeline:
    """The ``PassPipeline`` of ``spec``, from the passes :mod:`tdsl.universe` registers.

    The passes of a spec are parsed once per process (:func:`_parsed_passes`): xDSL
    reads each pass's type hints to convert its options, which took about 1% of the
    test suite's time when every compile parsed its pipelines again.  The passes are
    frozen dataclasses, so pipelines can share them."""
    from xdsl.passes import PassPipeline

    return PassPipeline(_parsed_passes(spec), callback)


@functools.lru_cache(maxsize=256)
def _parsed_passes(spec: str) -> tuple[ModulePass, ...]:
    """The passes ``spec`` names, with their options (errors as ``PassPipeline.parse_spec``
    raises them, and not cached)."""
    from xdsl.passes import PassPipeline

    from tdsl.universe import TDSL_PASSES

    passes = PassPipeline.parse_spec({**STANDARD_PASSES, **TDSL_PASSES}, spec).passes
    for made in passes:
        params = getattr(type(made), "__dataclass_params__", None)
        if params is None or not params.frozen:  # pragma: no cover - every pass is frozen
            raise internal_error(f"pass {made.name} is not a frozen dataclass: it cannot be shared")
    return passes


def _canonicalize() -> type[ModulePass]:
    from xdsl.transforms.canonicalize import CanonicalizePass

    return CanonicalizePass


STANDARD_PASSES = {"canonicalize": _canonicalize}
"""The passes of xDSL's own that the standard pipeline runs."""


__all__ = [
    "INPUT_STAGES",
    "STAGES",
    "PipelineCallback",
    "build_pipeline",
    "pipeline_spec",
    "target_spec",
]
