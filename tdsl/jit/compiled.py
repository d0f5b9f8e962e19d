"""What compiling gives: :class:`CompiledKernel`, its arguments and its fusion groups."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tdsl.defaults import DEFAULT_MEMORY_BUDGET
from tdsl.dtypes import SHORT_NAMES, type_str
from tdsl.errors import TdslCallError, TdslError
from tdsl.jit.calls import FELL_BACK_AT_CALL
from tdsl.jit.options import JitOptions
from tdsl.pipeline import target_spec

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from tdsl.transforms.fuse import FusionReport

ELEMENT_NAMES: dict[str, str] = SHORT_NAMES
"""NumPy dtype name -> the short name signatures use (the one table, :mod:`tdsl.dtypes`)."""
"""NumPy dtype name -> the language's element type name."""


@dataclass(frozen=True)
class GroupInfo:
    """One fusion group of a compiled kernel, as the tiled IR records it."""

    name: str
    """The group's name (``g0``, ``g1``, ... in the IR and the generated code)."""
    ops: tuple[str, ...]
    """The ops the group runs, in order (``tensordsl.relu``, ...)."""
    inputs: tuple[str, ...]
    """Types of the values the group reads, as ``f32[8, 16]``."""
    outputs: tuple[str, ...]
    """Types of the values the group materializes."""
    space: tuple[int, ...] | None
    """The extent of each iteration dimension (None if the group was not tiled)."""
    tiles: tuple[int, ...] | None
    """The tile size along each iteration dimension (None if not tiled)."""
    scratch: int | None
    """Elements one tile allocates for intermediate values (None if not tiled)."""
    budget: int | None
    """The memory budget (elements) the group was fused and tiled under."""

    @property
    def num_tiles(self) -> int:
        """How many tiles the loop runs (1 if untiled)."""
        if self.space is None or self.tiles is None:
            return 1
        count = 1
        for extent, size in zip(self.space, self.tiles, strict=True):
            count *= -(-extent // size) if size > 0 else 1
        return count

    def __str__(self) -> str:
        ops = ", ".join(op.removeprefix("tensordsl.") for op in self.ops)
        text = f"{self.name}: [{ops}] ({', '.join(self.inputs)}) -> ({', '.join(self.outputs)})"
        if self.tiles is not None:
            text += f" tiles {list(self.tiles)} of {list(self.space or ())} scratch {self.scratch}"
        return text


@dataclass(frozen=True)
class ArgSpec:
    """One argument of a compiled kernel: its name, shape and dtype, and whether it is weak."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    weak: bool = False
    """A weak scalar: it takes a Python ``int`` or ``float`` (``dtype`` float64), or a
    Python ``int`` (``dtype`` int64), typed like a literal (``shape`` is ``()``, and
    ``dtype`` the type it is passed to the code in)."""
    bounds: tuple[int, int] | None = None
    """A weak integer's range: that of the narrowest integer dtype it meets (NumPy 2
    raises ``OverflowError`` for a Python int beyond it); None for int64's.  A weak
    float's: the range of a Python int passed for it, int64's where it meets an integer
    tensor (:func:`~tdsl.jit.weak_bounds.int_bounds`), else None (any int a float holds)."""

    @property
    def expected(self) -> str:
        """What the argument takes: ``an array of f32[4, 3]``, ``a Python int or float``."""
        if self.weak and self.bounds is not None and self.dtype.kind == "i":
            low, high = self.bounds
            if low > high:  # (`u8 + (s * 0 + 300)`: 300 meets uint8 whatever s is)
                return "no Python int (what the kernel computes from it never fits)"
            return f"a Python int in [{low}, {high}]"
        if self.weak:
            return "a Python int" if self.dtype.kind == "i" else "a Python int or float"
        return f"an array of {type_str(self.dtype, self.shape)}"

    def __str__(self) -> str:
        if self.weak:
            return f"{self.name}: {'int' if self.dtype.kind == 'i' else 'float'}"
        return f"{self.name}: {type_str(self.dtype, self.shape)}"


LOCATED_STAGES = ("tensordsl", "tiled")
"""The stages whose IR the fusion report, ``explain()`` and ``to_dot()`` read: a
stored kernel keeps them with their source locations too."""

SHARED_STAGES = ("loops", "llvm")
"""The stages kernels that plan alike share (:func:`tdsl.jit.stages.lower_planned`): read,
never changed, and copied for whoever asks for their IR objects."""

COMPILE_FAILED = "the native compile failed"
"""How ``target_reason`` begins when ``target="auto"`` fell back to the numpy target
because the native compile failed."""


class LazyIR(Mapping[str, str]):
    """Stage name -> IR text, from the modules of a compilation or from stored texts.

    Over modules, each text is printed on first access.  Over texts (a kernel
    loaded from the JIT's cache on disk) the texts are those stored, and
    :meth:`module` parses a stage back to IR only when asked (importing xDSL
    then), from its text with source locations (``located``) where one was kept.
    """

    def __init__(
        self,
        modules: Mapping[str, ModuleOp] | None = None,
        *,
        texts: Mapping[str, str] | None = None,
        located: Mapping[str, str] | None = None,
    ) -> None:
        self._modules: dict[str, ModuleOp] = dict(modules or {})
        self._text: dict[str, str] = dict(texts or {})
        self._located: dict[str, str] = dict(located or {})
        self._stages = list(self._modules) if modules is not None else list(self._text)

    def __getitem__(self, stage: str) -> str:
        text = self._text.get(stage)
        if text is None:
            if stage not in self._modules:
                raise KeyError(f"no IR stage {stage!r}; the stages: {', '.join(self._stages)}")
            text = str(self._modules[stage])
            self._text[stage] = text
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self._stages)

    def __len__(self) -> int:
        return len(self._stages)

    def __repr__(self) -> str:
        return f"<IR stages {', '.join(self._stages)}>"

    def module(self, stage: str) -> ModuleOp:
        """The IR of ``stage`` (parsed from the stored text on first use); a copy for the
        :data:`SHARED_STAGES`, which other kernels may hold too."""
        module = self._modules.get(stage)
        if module is not None and stage in SHARED_STAGES:
            return module.clone()
        if module is None:
            if stage not in self._stages:
                raise KeyError(stage)
            module = parse_ir(self._located.get(stage) or self[stage])
            self._modules[stage] = module
        return module

    def located(self, stage: str) -> str:
        """The text of ``stage`` with each op's source location (``loc(...)``)."""
        text = self._located.get(stage)
        if text is None:
            module = self._modules.get(stage)  # (a shared stage's own, not a copy)
            text = print_located(self.module(stage) if module is None else module)
            self._located[stage] = text
        return text


def print_located(module: ModuleOp) -> str:
    """``module`` printed with its source locations, as ``loc("file":line:col)``."""
    import io

    from tdsl.ir_text import UniqueNamesPrinter

    stream = io.StringIO()
    UniqueNamesPrinter(stream=stream, print_debuginfo=True).print_op(module)
    return stream.getvalue()


def parse_ir(text: str) -> ModuleOp:
    """A module parsed from the text of any stage of the pipeline."""
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects
    from xdsl.parser import Parser

    from tdsl.universe import TDSL_DIALECTS

    ctx = Context()
    for name, factory in {**get_all_dialects(), **TDSL_DIALECTS}.items():
        ctx.register_dialect(name, factory)
    return Parser(ctx, text).parse_module()


class CompiledKernel:
    """A compiled tensor kernel: call it with NumPy arrays, read what was done.

    ``kernel(A=a, B=b)``, or positionally in signature order (``.args``): each
    argument an array of exactly its shape and dtype (any strides; a NumPy
    scalar of the dtype for a 0-d argument); a weak argument (``s: float`` in
    the signature) takes a Python ``int`` or ``float``, and so may any 0-d
    argument, converted to its dtype.  One result comes back as a fresh array,
    several as a tuple.  ``kernel(..., out=buf)`` writes the result into
    ``buf``, an array of exactly the result's shape and dtype that shares no
    memory with the inputs, and returns it; with several results ``out`` is a
    tuple of such arrays, one per result, and the tuple comes back.  Anything
    else raises :class:`~tdsl.errors.TdslCallError` saying what was expected.
    Called with Dask arrays (any argument), it returns lazy Dask arrays
    computed chunk by chunk by tdsl kernels (:mod:`tdsl.dask`).

    Attributes: ``name`` (the kernel function), ``args`` (:class:`ArgSpec` per
    input), ``results`` (``(shape, dtype)`` per result), ``options``
    (:class:`JitOptions`), ``expression`` (the source text compiled),
    ``target`` (``"native"`` or ``"numpy"``: which code runs),
    ``target_reason`` (why this target runs: ``auto``'s reasons, or that it was asked for),
    ``fallback`` (that reason when a native failure caused it; also in the ``repr``),
    ``variant_failures`` (why strided variants failed to compile, by stride pattern),
    ``source`` (the NumPy target's generated Python, always produced),
    ``llvm_ir`` (the LLVM IR compiled, with its BLAS shims; None unless native),
    ``function`` (what runs: positional arrays, no checks), ``pipeline`` (the
    passes run, as the ``-p`` argument of ``tdsl-opt``), ``target_spec`` (the
    ``-t`` argument that prints, after ``pipeline``, the code that runs:
    ``source`` or the LLVM IR), ``ir`` (stage name -> IR text for
    ``"tensordsl"``, ``"fused"`` and ``"tiled"``, and for a native kernel
    ``"planned"`` (the tiled IR with the loops' plan), ``"loops"`` and ``"llvm"``, printed on first access),
    ``groups`` (:class:`GroupInfo` per fusion group), ``filename`` (the name the
    source was compiled under), :meth:`to_dot` (the fusion plan as a Graphviz
    graph), ``try_call`` (given a dict
    of arguments by name and an ``out`` or ``None``, runs the kernel if the
    arguments fit exactly, as a one-shot call would have compiled it, else
    returns ``NotImplemented``; only a bad ``out`` raises).
    """

    name: str
    args: tuple[ArgSpec, ...]
    results: tuple[tuple[tuple[int, ...], np.dtype[Any]], ...]
    options: JitOptions
    expression: str
    source: str
    function: Callable[..., Any]
    pipeline: str
    ir: LazyIR
    groups: tuple[GroupInfo, ...]
    program: bool
    """Whether the kernel is a ``def`` of a ``.tdsl`` program (else an expression's ``main``)."""
    target: str
    target_reason: str | None
    llvm_ir: str | None
    filename: str
    """The name the source was compiled under (in error messages and IR locations)."""
    host_specific: bool
    """Whether the code, or the choice of target, depends on the CPU compiled on
    (native code; ``auto``'s fallback after a failed native compile): the cache
    on disk keys such a kernel by the CPU too."""
    try_call: Callable[..., Any]

    def __init__(
        self,
        *,
        name: str,
        args: Sequence[ArgSpec],
        results: Sequence[tuple[tuple[int, ...], np.dtype[Any]]],
        options: JitOptions,
        expression: str,
        source: str,
        function: Callable[..., Any],
        pipeline: str,
        modules: Mapping[str, ModuleOp] | LazyIR,
        groups: Sequence[GroupInfo],
        program: bool = False,
        target: str = "numpy",
        target_reason: str | None = None,
        llvm_ir: str | None = None,
        filename: str = "<expr>",
        host_specific: bool = False,
    ) -> None:
        self.name = name
        self.args = tuple(args)
        self.results = tuple(results)
        self.options = options
        self.expression = expression
        self.source = source
        self.function = function
        self.pipeline = pipeline
        self.ir = modules if isinstance(modules, LazyIR) else LazyIR(modules)
        self.groups = tuple(groups)
        self.program = program
        self.target = target
        self.target_reason = target_reason
        self.llvm_ir = llvm_ir
        self.filename = filename
        self.host_specific = host_specific
        self.compile_time: dict[str, float] = {}
        """Seconds per stage of the compile that made this kernel, in order: the
        frontend, each pass (by its ``tdsl-opt -p`` name), the numpy target and, for
        native code, the compile to machine code (:mod:`tdsl.jit.timing`); empty for a
        kernel loaded from the cache on disk, which did not compile it."""

    @property
    def arg_names(self) -> tuple[str, ...]:
        """The input names, in signature (positional) order."""
        return tuple(a.name for a in self.args)

    @property
    def signature(self) -> str:
        """``main(A: f32[8, 16], B: f32[16, 8]) -> f32[8, 8]``."""
        outs = ", ".join(type_str(dtype, shape) for shape, dtype in self.results)
        if len(self.results) != 1:
            outs = f"({outs})"
        return f"{self.name}({', '.join(str(a) for a in self.args)}) -> {outs}"

    @property
    def target_spec(self) -> str:
        """The ``tdsl-opt -t`` argument that prints, after :attr:`pipeline`, the code that
        runs: :attr:`source` (``numpy{threads=N}``) or the LLVM IR (``llvm``; without
        the BLAS shims :attr:`llvm_ir` adds)."""
        if self.target == "native":
            return "llvm"
        return target_spec(self.options.threads)

    @property
    def memory_budget(self) -> int:
        """The memory budget (elements) the kernel was planned at: the one asked for, or
        with the default, :data:`~tdsl.defaults.DEFAULT_MEMORY_BUDGET` or, where no plan
        fits that, the inputs' elements (:func:`~tdsl.defaults.default_fallback_budget`)."""
        recorded = [g.budget for g in self.groups if g.budget is not None]
        if recorded:
            return max(recorded)
        return self.options.memory_budget or DEFAULT_MEMORY_BUDGET

    @property
    def fusion_report(self) -> FusionReport:
        """The fusion report of the fused IR (groups, their members, materialized values)."""
        from tdsl.transforms.fuse import fusion_report

        return fusion_report(self._tensordsl("fusion_report"), self.memory_budget)

    def explain(self) -> str:
        """Why the ops were grouped as they were: the fusion remarks, with source locations."""
        from tdsl.transforms.fuse import explain_fusion

        return explain_fusion(self._tensordsl("explain()"), self.memory_budget)

    def _tensordsl(self, what: str) -> ModuleOp:
        """The tensordsl IR the kernel was fused from, which ``what`` reads."""
        if "tensordsl" not in self.ir:
            first = next(iter(self.ir))
            raise TdslError(
                f"`{what}` of kernel `{self.name}` reads the fusion decisions, and the kernel "
                f"was compiled from {first} IR, fused already: read its groups in "
                f'`.ir["{first}"]` or `.groups`'
            )
        return self.ir.module("tensordsl")

    @property
    def dot_target(self) -> str:
        """The ``tdsl-opt -t`` argument that prints :meth:`to_dot` after :attr:`pipeline`."""
        return f"dot{{memory-budget={self.memory_budget}}}"

    def to_dot(self) -> str:
        """The fusion plan of the compiled kernel as a Graphviz graph.

        The same text as ``tdsl-opt`` prints for the source with ``-p`` :attr:`pipeline`
        and ``-t`` :attr:`dot_target`; render it with ``dot -Tsvg``.
        """
        from tdsl.backend.dot import render_dot

        return render_dot(
            self.ir.module("tiled"),
            self.memory_budget,
            sources={self.filename: self.expression},
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Each kernel gets a subclass whose generated __call__ has the fast checks
        # (see tdsl.jit.calls.make_calls); this generic path is the fallback.
        from tdsl.jit.calls import call_generic

        return call_generic(self, args, kwargs)

    @property
    def fallback(self) -> str | None:
        """Why a native failure made this kernel run the numpy target under ``auto`` (its
        native compile failed, or a strided variant failed to compile at call time), or
        None when nothing failed: a kernel on the numpy target by choice (small, asked
        for, a matmul BLAS would not compute) has its :attr:`target_reason` but no
        fallback."""
        reason = self.target_reason
        if reason is not None and reason.startswith((COMPILE_FAILED, FELL_BACK_AT_CALL)):
            return reason
        return None

    @property
    def variant_failures(self) -> dict[tuple[tuple[int, ...] | None, ...], str]:
        """Why strided variants of a native kernel failed to compile, by stride pattern
        (element strides per input, None for C-contiguous): under ``target="native"``
        such an input is copied instead.  Empty for the numpy target."""
        variants = getattr(self.function, "variants", None)
        return dict(getattr(variants, "failures", {}))

    def __reduce__(self) -> Any:
        """A kernel holds machine code and generated functions, which do not pickle: say
        so, and what to send to another process instead."""
        raise TdslCallError(
            f"a compiled kernel ({self.signature}) does not pickle: it holds machine code "
            "and generated functions",
            note="send the @tdsl.function or tdsl.trace function (it pickles by name), or "
            "the source, and compile it there; with a cache on disk ($TDSL_CACHE_DIR) "
            "that compile is a load",
        )

    def __repr__(self) -> str:
        groups = len(self.groups)
        fallback = self.fallback
        return (
            f"<CompiledKernel {self.signature}: {groups} group{'s' if groups != 1 else ''}, "
            f"memory_budget={self.memory_budget}, threads={self.options.threads}, "
            f"target={self.target}"
            + ("" if fallback is None else f" (fell back: {fallback})")
            + ">"
        )


__all__ = [
    "COMPILE_FAILED",
    "ELEMENT_NAMES",
    "LOCATED_STAGES",
    "SHARED_STAGES",
    "ArgSpec",
    "CompiledKernel",
    "GroupInfo",
    "LazyIR",
    "parse_ir",
    "print_located",
    "type_str",
]
