"""Tiled IR the recorded-plan tests share, and parsing it: ``EXP_MAX_SUB`` is what
``tdsl-tile`` records for ``e - max(e)`` with ``e = exp(x)`` (written by hand: the
language has no ``let``) with 16x300 rows cut into tiles of 100: the max runs in pass
1, the subtraction in pass 3, which computes ``exp`` again."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.parser import Parser

from tdsl.dialects.kernel import Kernel
from tdsl.dialects.tensordsl import TensorDSL

EXP_MAX_SUB = """\
func.func @main(%x: tensor<16x300xf64>) -> tensor<16x300xf64> {
  %0 = kernel.tile(%x) group "g0" space [16, 300] iterators ["parallel", "reduction"] tiles [8, 100] scratch [memref<8xf64>, memref<800xf64>, memref<8xf64>] sweeps [1, 1, 3]
    ins [affine_map<(d0, d1) -> (d0, d1)>]
    outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<16x300xf64>) -> tensor<16x300xf64> {
  ^bb0(%x1: tensor<8x100xf64>):
    %1 = tensordsl.exp %x1 : tensor<8x100xf64>
    %2 = tensordsl.max %1 axis = 1 keepdims : tensor<8x100xf64> -> tensor<8x1xf64>
    %3 = tensordsl.sub %1, %2 : (tensor<8x100xf64>, tensor<8x1xf64>) -> tensor<8x100xf64>
    kernel.yield %3 : tensor<8x100xf64>
  }
  func.return %0 : tensor<16x300xf64>
}
"""


def parse(text: str, verify: bool = True) -> ModuleOp:
    """``text`` parsed with builtin, func, tensordsl and kernel (verified unless not)."""
    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL, Kernel):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text, "plan.mlir").parse_module()
    if verify:
        module.verify()
    return module


def edit(text: str, *changes: tuple[str, str]) -> str:
    """``text`` with each ``old`` (found exactly once) replaced by ``new``."""
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text
