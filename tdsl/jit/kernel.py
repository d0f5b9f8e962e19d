"""What compiling gives: :class:`CompiledKernel`, its arguments and its fusion groups."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tdsl.dtypes import SHORT_NAMES
from tdsl.jit.options import JitOptions
from tdsl.pipeline import target_spec

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from tdsl.lowering.fuse import FusionReport

ELEMENT_NAMES: dict[str, str] = SHORT_NAMES
"""NumPy dtype name -> the short name signatures use (the one table, :mod:`tdsl.dtypes`)."""
"""NumPy dtype name -> the language's element type name."""


def type_str(dtype: np.dtype[Any], shape: Sequence[int]) -> str:
    """``f32[8, 16]``: the language's own spelling of a tensor type (``>f4[2]`` if swapped)."""
    name = ELEMENT_NAMES.get(dtype.name, dtype.name) if dtype.isnative else dtype.str
    return f"{name}[{', '.join(str(d) for d in shape)}]"


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
    """A weak scalar: it takes a Python ``int`` or ``float``, typed like a literal
    (``shape`` is ``()``, ``dtype`` float64, the type it is passed to the code in)."""

    @property
    def expected(self) -> str:
        """What the argument takes: ``an array of f32[4, 3]``, ``a Python int or float``."""
        if self.weak:
            return "a Python int or float"
        return f"an array of {type_str(self.dtype, self.shape)}"

    def __str__(self) -> str:
        return f"{self.name}: {'float' if self.weak else type_str(self.dtype, self.shape)}"


class LazyIR(Mapping[str, str]):
    """Stage name -> IR text, printed on first access from the modules kept."""

    def __init__(self, modules: dict[str, ModuleOp]) -> None:
        self._modules = modules
        self._text: dict[str, str] = {}

    def __getitem__(self, stage: str) -> str:
        text = self._text.get(stage)
        if text is None:
            text = str(self._modules[stage])
            self._text[stage] = text
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __repr__(self) -> str:
        return f"<IR stages {', '.join(self._modules)}>"


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
    ``target_reason`` (why the numpy target runs, None when native code does),
    ``source`` (the NumPy target's generated Python, always produced),
    ``llvm_ir`` (the LLVM IR compiled, with its BLAS shims; None unless native),
    ``function`` (what runs: positional arrays, no checks), ``pipeline`` (the
    passes run, as the ``-p`` argument of ``tdsl-opt``), ``target_spec`` (the
    ``-t`` argument that prints, after ``pipeline``, the code that runs:
    ``source`` or the LLVM IR), ``ir`` (stage name -> IR text for
    ``"tensordsl"``, ``"fused"`` and ``"tiled"``, and for a native kernel
    ``"loops"`` and ``"llvm"``, printed on first access),
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
    ir: Mapping[str, str]
    groups: tuple[GroupInfo, ...]
    program: bool
    """Whether the kernel is a ``def`` of a ``.tdsl`` program (else an expression's ``main``)."""
    target: str
    target_reason: str | None
    llvm_ir: str | None
    filename: str
    """The name the source was compiled under (in error messages and IR locations)."""
    _modules: dict[str, ModuleOp]
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
        modules: dict[str, ModuleOp],
        groups: Sequence[GroupInfo],
        program: bool = False,
        target: str = "numpy",
        target_reason: str | None = None,
        llvm_ir: str | None = None,
        filename: str = "<expr>",
    ) -> None:
        self.name = name
        self.args = tuple(args)
        self.results = tuple(results)
        self.options = options
        self.expression = expression
        self.source = source
        self.function = function
        self.pipeline = pipeline
        self._modules = modules
        self.ir = LazyIR(modules)
        self.groups = tuple(groups)
        self.program = program
        self.target = target
        self.target_reason = target_reason
        self.llvm_ir = llvm_ir
        self.filename = filename

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
    def fusion_report(self) -> FusionReport:
        """The fusion report of the fused IR (groups, their members, materialized values)."""
        from tdsl.lowering.fuse import fusion_report

        return fusion_report(self._modules["tensordsl"], self.options.memory_budget)

    def explain(self) -> str:
        """Why the ops were grouped as they were: the fusion remarks, with source locations."""
        from tdsl.lowering.fuse import explain_fusion

        return explain_fusion(self._modules["tensordsl"], self.options.memory_budget)

    @property
    def dot_target(self) -> str:
        """The ``tdsl-opt -t`` argument that prints :meth:`to_dot` after :attr:`pipeline`."""
        return f"dot{{memory-budget={self.options.memory_budget}}}"

    def to_dot(self) -> str:
        """The fusion plan of the compiled kernel as a Graphviz graph.

        The same text as ``tdsl-opt`` prints for the source with ``-p`` :attr:`pipeline`
        and ``-t`` :attr:`dot_target`; render it with ``dot -Tsvg``.
        """
        from tdsl.tools.dot_target import render_dot

        return render_dot(
            self._modules["tiled"],
            self.options.memory_budget,
            sources={self.filename: self.expression},
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Each kernel gets a subclass whose generated __call__ has the fast checks
        # (see tdsl.jit.calls.make_calls); this generic path is the fallback.
        from tdsl.jit.calls import call_generic

        return call_generic(self, args, kwargs)

    def __repr__(self) -> str:
        groups = len(self.groups)
        return (
            f"<CompiledKernel {self.signature}: {groups} group{'s' if groups != 1 else ''}, "
            f"memory_budget={self.options.memory_budget}, threads={self.options.threads}, "
            f"target={self.target}>"
        )


__all__ = ["ELEMENT_NAMES", "ArgSpec", "CompiledKernel", "GroupInfo", "LazyIR", "type_str"]
