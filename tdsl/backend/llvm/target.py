"""The ``llvm`` target: LLVM IR text of an ``llvm``-dialect module.

``tdsl-opt model.mlir --convert-to-llvm -t llvm`` prints what
:func:`xdsl.backend.llvm.convert.convert_module` makes of the module (via
llvmlite's IR builder, which is pure Python: no LLVM library is loaded).  The
target triple is the host's unless ``triple`` is given, e.g.
``-t 'llvm{triple="x86_64-unknown-linux-gnu"}'``.  A defined ``llvm.func`` keeps
its linkage, and its ``passthrough`` attributes (``["alwaysinline"]``) become LLVM function attributes,
as MLIR's translation makes them (:func:`llvm_ir_module`).  In ``xdsl-opt`` the same
target is ``tdsl-llvm`` (xDSL registers its own, simpler ``llvm``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import IO, Any, ClassVar

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.utils.target import Target

from tdsl.errors import TdslIRError, TdslOptionError, unprintable_op


def llvm_ir_module(module: ModuleOp, triple: str | None) -> Any:
    """llvmlite's IR module of an ``llvm``-dialect module: xDSL's ``convert_module``,
    then each defined ``llvm.func``'s linkage (``internal``: xDSL's converter makes every
    function external) and its ``passthrough`` strings as LLVM function attributes
    (``alwaysinline``; llvmlite refuses a name LLVM does not know); a sum accumulator's
    ``reassoc`` flag becomes its loop's vectorize hint
    (:func:`tdsl.backend.llvm.loop_hints.reorder_sums_by_loop_hints`)."""
    from xdsl.backend.llvm.convert import convert_module

    from tdsl.backend.llvm.loop_hints import reorder_sums_by_loop_hints

    converted = convert_module(module, fallback_target_triple=triple)
    for op in module.ops:
        if not isinstance(op, llvm.FuncOp) or not op.body.blocks:
            continue
        function = converted.get_global(op.sym_name.data)
        if op.linkage.linkage.data != "external":
            function.linkage = op.linkage.linkage.data
        listed = op.passthrough or op.attributes.get("passthrough")
        if not isinstance(listed, ArrayAttr):
            continue
        for name in listed.data:
            if not isinstance(name, StringAttr):
                raise ValueError(f"passthrough of @{op.sym_name.data} holds {name}, not a string")
            function.attributes.add(name.data)
    reorder_sums_by_loop_hints(converted)
    return converted


def check_calls(module: ModuleOp) -> None:
    """Each ``llvm.call`` of a function ``module`` declares passes what the function
    takes and expects what it returns, else an error at the call (xDSL's verifier does
    not check it, and its conversion fails on it with llvmlite's bare ``TypeError``)."""
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, llvm.FuncOp)}
    for op in module.walk():
        if not isinstance(op, llvm.CallOp) or op.callee is None:
            continue
        callee = functions.get(op.callee.string_value())
        if callee is None:
            continue
        ftype = callee.function_type
        want = list(ftype.inputs.data)
        got = [a.type for a in op.args]
        if (got[: len(want)] if ftype.is_variadic else got) != want:
            raise TdslIRError(
                f"-t llvm: 'llvm.call' passes ({', '.join(map(str, got))}) to "
                f"@{callee.sym_name.data}, which takes ({', '.join(map(str, want))})",
                op=op,
            )
        returns = [] if isinstance(ftype.output, llvm.LLVMVoidType) else [ftype.output]
        if list(op.result_types) != returns:
            raise TdslIRError(
                f"-t llvm: 'llvm.call' expects ({', '.join(map(str, op.result_types))}) "
                f"from @{callee.sym_name.data}, which returns "
                f"({', '.join(map(str, returns))})",
                op=op,
            )


@dataclass(frozen=True)
class LLVMTarget(Target):
    """``-t llvm``: print the LLVM IR of a module of ``llvm.func`` ops."""

    name: ClassVar[str] = "llvm"

    triple: str = ""
    """Target triple written into the IR (empty: the host's)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        try:
            import xdsl.backend.llvm.convert  # noqa: F401
        except ImportError as err:
            raise TdslOptionError(
                f"-t llvm needs llvmlite (pip install 'xdsl[llvm]'): {err}"
            ) from None
        for op in module.ops:
            if op.dialect_name() != "llvm":
                raise TdslIRError(
                    f"-t llvm: '{op.name}' is not in the llvm dialect",
                    note="run tdsl-convert-to-llvm (--convert-to-llvm) first",
                    op=op,
                )
            if not isinstance(op, llvm.FuncOp | llvm.GlobalOp):
                raise TdslIRError(
                    f"-t llvm: '{op.name}' stands at the module's top level, which holds "
                    "only 'llvm.func' and 'llvm.mlir.global' ops",
                    op=op,
                )
        check_calls(module)
        try:
            text = str(llvm_ir_module(module, self.triple or None))
        except Exception as err:  # xDSL's converter or llvmlite's IR builder refusing it
            found = unprintable_op(module)
            if found is not None:
                raise TdslIRError(f"-t llvm: {found[1]}", op=found[0]) from None
            named = re.fullmatch(r"Conversion not implemented for op: (\S+)", str(err))
            op = next((o for o in module.walk() if named and o.name == named[1]), None)
            raise TdslIRError(
                f"-t llvm: xDSL's LLVM IR conversion failed: {type(err).__name__}: {err}",
                op=op,
            ) from None
        output.write(text)


@dataclass(frozen=True)
class TdslLLVMTarget(LLVMTarget):
    """The same target under the name ``tdsl-llvm``, for ``xdsl-opt`` (where xDSL's
    own target holds the name ``llvm``)."""

    name: ClassVar[str] = "tdsl-llvm"
