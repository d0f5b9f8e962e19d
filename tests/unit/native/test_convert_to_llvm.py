"""tdsl-convert-to-llvm on hand-written loops-stage modules: what it produces, without
running it (no llvmlite needed)."""

from __future__ import annotations

import pytest
from xdsl.dialects import llvm
from xdsl.dialects.builtin import Float16Type, ModuleOp, UnitAttr
from xdsl.printer import Printer

from tdsl.backend.llvm.convert_to_llvm import ConvertToLLVMPass
from tdsl.errors import TdslIRError, TdslOptionError

from .kernels import chain_2d, context, elementwise_1d, lower, parse, row_sum_exp

UNARY_MATH = [
    "exp", "expm1", "log", "log1p", "tanh", "sinh", "cosh", "log2", "exp2", "cbrt", "log10", "sqrt",
    "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh",
    "absf", "ceil", "floor", "trunc", "roundeven",
]  # fmt: skip
BINARY_MATH = ["math.powf", "math.atan2", "math.copysign", "tdslmath.remf", "tdslmath.hypot",
               "tdslmath.nextafter", "arith.maximumf", "arith.minimumf", "arith.addf",
               "arith.subf", "arith.mulf", "arith.divf"]  # fmt: skip


def printed(module: ModuleOp) -> str:
    import io

    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


def all_modules() -> list[str]:
    modules = [chain_2d(4, 8), row_sum_exp(3, 5), chain_2d(2, 3, "f16")]
    for t in ("f16", "f32", "f64"):
        modules += [elementwise_1d(f"%r = math.{f} %v0 : {t}", 4, [t], t) for f in UNARY_MATH]
        modules += [elementwise_1d(f"%r = {f} %v0, %v1 : {t}", 4, [t, t], t) for f in BINARY_MATH]
    return modules


@pytest.mark.parametrize("text", all_modules())
def test_output_is_llvm_and_round_trips(text: str) -> None:
    module = lower(text)
    for op in module.walk():
        assert op is module or op.dialect_name() == "llvm", op.name
    first = printed(module)
    assert printed(parse(first)) == first
    generic = parse(first)
    generic.verify()


def test_function_signature_follows_the_abi() -> None:
    text = """
func.func @k(%a: memref<4x8xf32, strided<[16, 2], offset: 5>>, %lo: index, %n: i64,
             %s: f64, %flags: memref<8xi1>) {
  func.return
}
func.func private @ext(memref<4xf64>, index, f32)
"""
    module = lower(text)
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, llvm.FuncOp)}
    ptr = llvm.LLVMPointerType()
    k = functions["k"].function_type
    assert list(k.inputs) == [
        ptr,
        *parse("func.func private @t(i64, i64, f64)").ops.first.function_type.inputs,
        ptr,
    ]  # type: ignore[union-attr]
    assert isinstance(k.output, llvm.LLVMVoidType)
    assert not functions["ext"].body.blocks
    assert functions["ext"].linkage.linkage.data == "external"


def test_strided_load_uses_the_strides_not_the_offset() -> None:
    text = """
func.func @k(%a: memref<4xf32, strided<[3], offset: 7>>, %i: index) {
  %v = memref.load %a[%i] : memref<4xf32, strided<[3], offset: 7>>
  memref.store %v, %a[%i] : memref<4xf32, strided<[3], offset: 7>>
  func.return
}
"""
    out = printed(lower(text))
    assert "llvm.mlir.constant(3) : i64" in out
    assert "(7)" not in out


def test_noalias_option_and_argument_attribute() -> None:
    text = """
func.func @k(%a: memref<4xf32> {llvm.noalias}, %b: memref<4xf32>, %n: index) {
  func.return
}
"""
    plain = lower(text)
    (k,) = plain.ops
    assert isinstance(k, llvm.FuncOp) and k.arg_attrs is not None
    assert [("llvm.noalias" in a.data) for a in k.arg_attrs] == [True, False, False]
    marked = lower(text, noalias=True)
    (k,) = marked.ops
    assert isinstance(k, llvm.FuncOp) and k.arg_attrs is not None
    assert [a.data.get("llvm.noalias") for a in k.arg_attrs] == [UnitAttr(), UnitAttr(), None]


def test_no_fast_math_by_default_and_expansions_only_contract() -> None:
    def flags_of(module: ModuleOp) -> set[str]:
        return {
            op.name + ":" + ",".join(sorted(f.value for f in op.fastmathFlags.data))
            for op in module.walk()
            if isinstance(op, llvm.AbstractFloatArithOp)
        }

    # by default the input's float ops get no flags (NumPy's rounding, no fused
    # multiply-adds); the exp expansion's own ops only may contract
    flags = flags_of(lower(row_sum_exp(2, 3)))
    assert "llvm.fadd:" in flags
    assert {f.split(":")[1] for f in flags} == {"", "contract"}
    # the fastmath option, for users who ask for it, flags every float op without flags
    asked = flags_of(lower(row_sum_exp(2, 3), fastmath=("reassoc", "contract")))
    assert "llvm.fadd:contract,reassoc" in asked
    assert {f.split(":")[1] for f in asked} == {"contract,reassoc", "contract"}


@pytest.mark.parametrize("flag", ["nnan", "ninf", "nsz", "fast"])
def test_flags_that_break_numpy_semantics_are_refused(flag: str) -> None:
    with pytest.raises(TdslOptionError, match=flag):
        lower(chain_2d(2, 2), fastmath=(flag,))


def test_f16_arithmetic_is_computed_in_f32() -> None:
    module = lower(chain_2d(2, 3, "f16"))
    allowed = (llvm.LoadOp, llvm.StoreOp, llvm.FPExtOp, llvm.FPTruncOp, llvm.SelectOp,
               llvm.ConstantOp, llvm.BitcastOp)  # fmt: skip
    for op in module.walk():
        types = [*op.operand_types, *op.result_types]
        if any(isinstance(t, Float16Type) for t in types):
            assert isinstance(op, allowed), op.name
        if isinstance(op, llvm.FPExtOp | llvm.FPTruncOp):
            assert {str(t) for t in types} <= {"f16", "f32"}


def test_f64_to_f16_goes_through_f32() -> None:
    text = elementwise_1d("%r = arith.truncf %v0 : f64 to f16", 4, ["f64"], "f16")
    text += elementwise_1d("%r = arith.extf %v0 : f16 to f64", 4, ["f16"], "f64").replace(
        "@f", "@g"
    )
    module = lower(text)
    for op in module.walk():
        if isinstance(op, llvm.FPExtOp | llvm.FPTruncOp):
            assert {str(op.arg.type), str(op.result.type)} != {"f16", "f64"}


def test_unsupported_op_is_an_error_naming_it() -> None:
    text = """
func.func @k(%a: memref<4xf32>) {
  %m = memref.alloc() : memref<4xf32>
  func.return
}
"""
    module = parse(text)
    with pytest.raises(TdslIRError, match=r"memref\.alloc"):
        ConvertToLLVMPass().apply(context(), module)


def test_dynamic_shapes_are_refused() -> None:
    text = """
func.func @k(%a: memref<?xf32>, %i: index) {
  %v = memref.load %a[%i] : memref<?xf32>
  memref.store %v, %a[%i] : memref<?xf32>
  func.return
}
"""
    with pytest.raises(TdslIRError, match=r"memref\.load"):
        ConvertToLLVMPass().apply(context(), parse(text))


def test_each_conversion_pattern_names_the_ops_it_rewrites() -> None:
    # The last walk of the pass tries each pattern only on ops of its declared types
    # (TypeDispatchApplier): a pattern typed `Operation` runs on every op of the kernel,
    # which cost a few percent of every native compile before these were typed.
    import typing

    from xdsl.ir import Operation

    from tdsl.backend.llvm import math_to_llvm
    from tdsl.backend.llvm.arith_to_llvm import ARITH_TO_LLVM_PATTERNS
    from tdsl.backend.llvm.dispatch import _typed
    from tdsl.backend.llvm.func_to_llvm import FUNC_TO_LLVM_PATTERNS
    from tdsl.backend.llvm.memref_to_llvm import MEMREF_TO_LLVM_PATTERNS

    patterns = (
        *FUNC_TO_LLVM_PATTERNS,
        *ARITH_TO_LLVM_PATTERNS,
        *math_to_llvm.MATH_TO_LLVM_PATTERNS,
        *MEMREF_TO_LLVM_PATTERNS,
    )
    untyped = [type(p).__name__ for p in patterns if (t := _typed(p)) is None or t[0] is Operation]
    assert not untyped
    # MathToLLVM's declared ops are every op its tables lower
    tables = {
        *math_to_llvm._UNARY_INTRINSIC_CALLS,
        *math_to_llvm._LIBM_UNARY,
        *math_to_llvm._LIBM_BINARY,
    }
    assert tables <= set(typing.get_args(math_to_llvm.LoweredMathOp))


@pytest.mark.parametrize("views", ["99, 1, 0, 0", "77, 0, 0"])
def test_views_that_are_not_triples_of_arguments_are_a_located_error(views: str) -> None:
    """``tdsl.views`` edited to a length that is no multiple of 3 (an IndexError), or to
    an argument the function does not have (taken without a word)."""
    text = f"""
func.func @k(%a: memref<4xf32>, %b: memref<2xf32, strided<[2]>>) attributes {{tdsl.arg_roles = ["in", "view"], tdsl.views = array<i64: {views}>}} {{
  func.return
}}
"""
    with pytest.raises(TdslIRError, match=r"`tdsl.views` of @k must be triples"):
        lower(text)


def test_a_converted_value_is_read_through_the_cast_back_not_cast_again() -> None:
    # an op the conversion has rewritten leaves its LLVM result cast back to the old type
    # for users not yet converted; a user converted later reads the LLVM value itself
    from xdsl.dialects.builtin import IndexType, UnrealizedConversionCastOp, i64
    from xdsl.ir import Block
    from xdsl.pattern_rewriter import PatternRewriter

    from tdsl.backend.llvm.llvm_types import to_llvm

    block = Block(arg_types=[i64, IndexType()])
    back, index_value = UnrealizedConversionCastOp.cast_one(block.args[0], IndexType())
    block.add_op(back)
    anchor = UnrealizedConversionCastOp.cast_one(block.args[1], i64)[0]
    block.add_op(anchor)
    rewriter = PatternRewriter(anchor)
    assert to_llvm(rewriter, index_value) is block.args[0]
    # a value of the old type that no cast made is cast, once
    fresh = to_llvm(rewriter, block.args[1])
    assert fresh.type == i64 and isinstance(fresh.owner, UnrealizedConversionCastOp)
    assert len(block.ops) == 3
