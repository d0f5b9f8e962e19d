"""``func`` and ``cf`` to xDSL's ``llvm`` dialect.

- ``func.func`` -> ``llvm.func`` with the argument types of
  :func:`tdsl.backend.llvm.llvm_types.llvm_type` (a memref becomes one ``!llvm.ptr``,
  ``index`` becomes ``i64``), no result or one scalar result; a declaration
  (``func.func private`` without a body) becomes an external ``llvm.func``
  declaration; a defined private function gets internal linkage, any other
  external linkage.  Argument attributes are kept, so ``llvm.noalias`` (and
  the other ``llvm.*`` parameter attributes ``convert_module`` knows) written
  on a ``func.func`` argument reach LLVM, and so does the function attribute
  ``passthrough`` (MLIR's list of LLVM function attributes, such as
  ``["alwaysinline"]``).  Every block's arguments take their LLVM types.
- ``func.return`` -> ``llvm.return``; ``func.call`` -> ``llvm.call``.
- ``cf.br`` / ``cf.cond_br`` -> ``llvm.br`` / ``llvm.cond_br``.
"""

from __future__ import annotations

from xdsl.dialects import cf, func, llvm
from xdsl.dialects.builtin import ArrayAttr, UnrealizedConversionCastOp
from xdsl.ir import Attribute, Block, Region
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from tdsl.backend.llvm.llvm_types import llvm_type, replace_op, to_llvm


def llvm_function_type(inputs: tuple[Attribute, ...], outputs: tuple[Attribute, ...]):
    """The ``!llvm.func`` type of a ``func`` function type (at most one result)."""
    if len(outputs) > 1:
        raise ValueError("functions with more than one result are not supported")
    output = llvm_type(outputs[0]) if outputs else None
    return llvm.LLVMFunctionType([llvm_type(t) for t in inputs], output)


def convert_block_arguments(rewriter: PatternRewriter, block: Block) -> None:
    """Give every argument of ``block`` its LLVM type; its users read it through a
    cast back to the old type, inserted at the start of the block."""
    for arg in tuple(block.args):
        old_type = arg.type
        new_type = llvm_type(old_type)
        if new_type == old_type:
            continue
        new_arg = rewriter.replace_value_with_new_type(arg, new_type)
        if not new_arg.uses:
            continue
        cast, result = UnrealizedConversionCastOp.cast_one(new_arg, old_type)
        rewriter.insert(cast, InsertPoint.at_start(block))
        rewriter.replace_uses_with_if(
            new_arg, result, lambda use, cast=cast: use.operation is not cast
        )


class FuncToLLVM(RewritePattern):
    """``func.func`` -> ``llvm.func`` (the body moved, its block arguments converted)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        function_type = llvm_function_type(
            op.function_type.inputs.data, op.function_type.outputs.data
        )
        declaration = not op.body.blocks
        private = op.sym_visibility is not None and op.sym_visibility.data == "private"
        linkage = "internal" if private and not declaration else "external"
        body = Region() if declaration else rewriter.move_region_contents_to_new_regions(op.body)
        for block in body.blocks:
            convert_block_arguments(rewriter, block)
        props: dict[str, Attribute | None] = {}
        if op.arg_attrs is not None:
            props["arg_attrs"] = op.arg_attrs
        passthrough = op.attributes.get("passthrough")
        if isinstance(passthrough, ArrayAttr):
            props["passthrough"] = passthrough
        new = llvm.FuncOp(
            op.sym_name,
            function_type,
            linkage=llvm.LinkageAttr(linkage),
            body=body,
            other_props=props or None,
        )
        rewriter.replace(op, new, [])


class ReturnToLLVM(RewritePattern):
    """``func.return`` -> ``llvm.return``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter) -> None:
        if len(op.arguments) > 1:
            return
        value = to_llvm(rewriter, op.arguments[0]) if op.arguments else None
        rewriter.replace(op, llvm.ReturnOp(value), [])


class CallToLLVM(RewritePattern):
    """``func.call`` -> ``llvm.call`` of the same symbol."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter) -> None:
        if len(op.res) > 1:
            return
        args = [to_llvm(rewriter, a) for a in op.arguments]
        return_type = llvm_type(op.res[0].type) if op.res else None
        call = llvm.CallOp(op.callee, *args, return_type=return_type)
        rewriter.insert(call)
        replace_op(rewriter, op, list(call.results))


class BranchToLLVM(RewritePattern):
    """``cf.br`` -> ``llvm.br``; ``cf.cond_br`` -> ``llvm.cond_br``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: cf.BranchOp | cf.ConditionalBranchOp, rewriter: PatternRewriter
    ) -> None:
        if isinstance(op, cf.BranchOp):
            args = [to_llvm(rewriter, a) for a in op.arguments]
            rewriter.replace(op, llvm.BrOp(op.successor, *args), [])
            return
        then_args = [to_llvm(rewriter, a) for a in op.then_arguments]
        else_args = [to_llvm(rewriter, a) for a in op.else_arguments]
        new = llvm.CondBrOp(op.cond, op.then_block, then_args, op.else_block, else_args)
        rewriter.replace(op, new, [])


FUNC_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    FuncToLLVM(),
    ReturnToLLVM(),
    CallToLLVM(),
    BranchToLLVM(),
)
"""Every pattern of this module."""
