"""The numpy target's API: NumpyTarget, emit_numpy, load_numpy; functions, names, fresh results."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from numpy_target_ir import const, fused, plain, rand, tiled, ttype
from xdsl.builder import ImplicitBuilder
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.parser import Parser

from tdsl.backend.numpy.target import NumpyTarget, emit_numpy, load_numpy
from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import Kernel
from tdsl.errors import TdslIRError, TdslOptionError

MLIR = """
func.func @"my.kernel"(%x: tensor<4x3xf32>, %lambda: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>) {
  %0 = tensordsl.add %x, %lambda : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %1 = kernel.tile(%0) group "g0" space [4, 3] iterators ["parallel", "reduction"] tiles [3, 3] scratch [] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0)>] : (tensor<4x3xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<3x3xf32>):
    %2 = tensordsl.max %a axis = 1 : tensor<3x3xf32> -> tensor<3xf32>
    kernel.yield %2 : tensor<3xf32>
  }
  func.return %0, %1 : tensor<4x3xf32>, tensor<4xf32>
}
func.func @_private(%x: tensor<2xf64>) -> tensor<2xf64> {
  func.return %x : tensor<2xf64>
}
"""


def parse(text: str) -> ModuleOp:
    ctx = Context()
    for dialect in (func.Func, td.TensorDSL, Kernel):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def test_functions_are_named_after_symbols_and_arguments() -> None:
    source = emit_numpy(parse(MLIR))
    assert "def my_kernel(x, lambda_, *, out=None):" in source
    assert "def v_private(x, *, out=None):" in source
    assert (
        "# group g0: kernel.tile space [4, 3] (parallel, reduction) tiles [3, 3] scratch 0"
        in source
    )
    assert "# tensordsl ops (not fused)" in source
    fns = load_numpy(source)
    assert set(fns) == {"my.kernel", "_private"}
    x, b = rand((4, 3), np.float32, 1), rand((3,), np.float32, 2)
    s, m = fns["my.kernel"](x, b)
    np.testing.assert_allclose(s, x + b)
    np.testing.assert_allclose(m, (x + b).max(axis=1))
    y = np.array([1.0, 2.0])
    r = fns["_private"](y)
    assert not np.shares_memory(r, y) and np.array_equal(r, y)


def test_results_are_fresh_arrays() -> None:
    def body(a: SSAValue, b: SSAValue) -> list[SSAValue]:
        s = td.AddOp(a, b).result
        t = td.TransposeOp(a).result
        return [a, s, s, t, const(2.0), td.ConstantOp.splat(1.0, td.element_type(a), (2,)).result]

    t = ttype((2, 3))
    for build in (plain, fused):
        fn = load_numpy(emit_numpy(build([t, t], body)))["main"]
        x, y = rand((2, 3), np.float32, 3), rand((2, 3), np.float32, 4)
        first = fn(x, y)
        second = fn(x, y)
        arrays = [*first, *second, x, y]
        for i, p in enumerate(arrays):
            for q in arrays[i + 1 :]:
                assert not np.shares_memory(p, q)
        assert all(a.flags.owndata and a.flags.c_contiguous for a in first)
        np.testing.assert_array_equal(first[0], x)
        np.testing.assert_array_equal(first[3], x.T)
        assert first[4].shape == () and first[4].dtype == np.float32 and first[4] == 2.0


def test_no_results_and_no_arguments() -> None:
    f = func.FuncOp("nothing", ((), ()))
    with ImplicitBuilder(f.body):
        func.ReturnOp()
    fns = load_numpy(emit_numpy(ModuleOp([f])))
    assert fns["nothing"]() is None


def test_top_level_transpose_feeds_a_group_as_a_view() -> None:
    module = parse(
        """
func.func @main(%w: tensor<3x5xf64>, %x: tensor<4x5xf64>) -> tensor<4x3xf64> {
  %t = tensordsl.transpose %w : tensor<3x5xf64> -> tensor<5x3xf64>
  %y = kernel.fused(%x, %t) group "g1" : (tensor<4x5xf64>, tensor<5x3xf64>) -> tensor<4x3xf64> {
  ^bb0(%a: tensor<4x5xf64>, %b: tensor<5x3xf64>):
    %m = tensordsl.matmul %a, %b : (tensor<4x5xf64>, tensor<5x3xf64>) -> tensor<4x3xf64>
    %s = tensordsl.sigmoid %m : tensor<4x3xf64>
    kernel.yield %s : tensor<4x3xf64>
  }
  func.return %y : tensor<4x3xf64>
}
"""
    )
    source = emit_numpy(module)
    assert "t = w.T" in source and "# group g1: kernel.fused" in source
    w, x = rand((3, 5), np.float64, 5), rand((4, 5), np.float64, 6)
    got = load_numpy(source)["main"](w, x)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-(x @ w.T))), rtol=1e-12)


def test_target_options_and_errors() -> None:
    module = tiled(
        [ttype((8, 8))],
        lambda a: td.ExpOp(a).result,
        space=[8, 8],
        tiles=[2, 8],
        in_dims=[(0, 1)],
        out_dims=[(0, 1)],
    )
    out = io.StringIO()
    NumpyTarget(threads=2).emit(Context(), module, out)
    assert out.getvalue() == emit_numpy(module, threads=2)
    assert "threads=2" in out.getvalue()
    assert NumpyTarget.name == "numpy"
    for bad in (0, -1):
        with pytest.raises(TdslOptionError, match="threads"):
            emit_numpy(module, threads=bad)


def test_unsupported_ops_are_reported() -> None:
    module = parse(
        """
func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = func.call @g(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
"""
    )
    with pytest.raises(TdslIRError, match=r"cannot emit 'func\.call'"):
        emit_numpy(module)


def test_load_numpy_tracebacks_show_generated_lines() -> None:
    fns = load_numpy(emit_numpy(plain([ttype((2,))], lambda a: td.MaxOp(a, 0).result)))
    with pytest.raises(ValueError) as info:
        fns["main"](np.zeros(0, np.float32))  # a max over an empty axis, as in NumPy
    assert any("np.maximum.reduce" in str(entry.statement) for entry in info.traceback)


def test_generated_lines_leave_linecache_with_their_functions() -> None:
    """A module's lines stay in ``linecache`` while its functions live (for tracebacks),
    and leave it with them: each kernel ever compiled kept its source there (found by
    fuzzing: 500 kernels through a cache of one left 500 entries)."""
    import gc
    import linecache

    source = emit_numpy(plain([ttype((2,))], lambda a: td.MaxOp(a, 0).result))
    before = {k for k in linecache.cache if k.startswith("<tdsl-numpy-")}
    fns = [load_numpy(source) for _ in range(20)]
    names = {k for k in linecache.cache if k.startswith("<tdsl-numpy-")} - before
    assert len(names) == 20
    del fns
    gc.collect()
    assert not names & set(linecache.cache)


def expect_dtype(got: Any, dtype: Any) -> None:
    assert got.dtype == dtype


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_literals_keep_the_dtype(dtype: Any) -> None:
    t = ttype((3,), dtype)
    body = [
        lambda a: td.DivOp(td.AddOp(a, const(0.1, dtype)), const(3.0, dtype)).result,
        lambda a: td.MaximumOp(a, const(0.5, dtype)).result,
        lambda a: td.MinimumOp(const(-0.5, dtype), a).result,
    ]
    x = rand((3,), dtype, 7)
    for b in body:
        expect_dtype(load_numpy(emit_numpy(plain([t], b)))["main"](x), dtype)
    source = emit_numpy(plain([t], body[1]))
    assert "_F0 = np.full((3,), 0.5," in source  # a block, not the slow scalar path
    got = load_numpy(source)["main"](x)
    np.testing.assert_array_equal(got, np.maximum(x, np.array(0.5, dtype)))


def test_unusual_names_stay_inside_comments_and_strings() -> None:
    module = parse(
        r"""
func.func @"we\"ird\nname"(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = kernel.tile(%x) group "g\"\"\"\n0" space [3] iterators ["parallel"] tiles [2] scratch [] ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0)>] : (tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%a: tensor<2xf32>):
    %b = tensordsl.neg %a : tensor<2xf32>
    kernel.yield %b : tensor<2xf32>
  }
  func.return %y : tensor<3xf32>
}
"""
    )
    fns = load_numpy(emit_numpy(module))
    assert list(fns) == ['we"ird\nname']
    x = rand((3,), np.float32, 8)
    np.testing.assert_array_equal(fns['we"ird\nname'](x), -x)


def test_loaded_modules_share_one_thread_pool() -> None:
    from tdsl.backend.numpy.target import emit_numpy, load_numpy
    from tdsl.frontend import to_tensordsl
    from tdsl.transforms.fuse import fuse
    from tdsl.transforms.tile import tile

    module = tile(
        fuse(
            to_tensordsl("relu(A) * B", shapes={"A": (1024, 1024), "B": (1024,)}, dtypes="float32")
        )
    )
    source = emit_numpy(module, threads=2)
    assert "_parallel(" in source
    first, second = load_numpy(source)["main"], load_numpy(source)["main"]
    pools = [f.__globals__["_POOL"] for f in (first, second)]
    assert len(pools[0]) == 1 and pools[0][0] is pools[1][0]
    a = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    b = np.arange(1024, dtype=np.float32)
    np.testing.assert_allclose(first(a, b), np.maximum(a, 0) * b, rtol=1e-6)


def test_classifications_write_every_element_of_a_strided_output() -> None:
    # NumPy 2.4.6 here: np.isinf(x, out=o[:, 2]) wrote 3 of 17 elements of the column;
    # a group whose tiles are columns wrote its isinf that way, and the rest of the
    # output kept what the buffer held (found by fuzzing: isinf of an integer cast)
    import tdsl

    rng = np.random.default_rng(0)
    a = rng.standard_normal((17, 33))
    a[::3, ::4] = np.inf
    a[1::5, 2::3] = -np.inf
    kernel = tdsl.JITTensorKernel(target="numpy", tile_sizes=[17, 1], cache_dir=False).compile(
        "isinf(A + 1)", {"A": a.shape}, "float64"
    )
    out = np.ones(a.shape, np.bool_)  # what a buffer may hold
    kernel(A=a, out=out)
    np.testing.assert_array_equal(out, np.isinf(a + 1))


@pytest.mark.parametrize("name", ["isinf", "isnan", "signbit"])
def test_the_strided_safe_call_is_the_ufuncs(name: str) -> None:
    from tdsl.scalar_numpy import STRIDED_OUT_UNSAFE, tdsl_strided_safe

    assert name in STRIDED_OUT_UNSAFE
    fn = getattr(np, name)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((300, 40))
    x[rng.random(x.shape) < 0.2] = np.nan
    x[rng.random(x.shape) < 0.2] = -np.inf
    x[rng.random(x.shape) < 0.1] = -0.0
    cases = [
        (x[:, :1], np.ones((300, 5), np.bool_)[:, 2:3]),  # a column: 300 elements
        (x, np.ones((300, 80), np.bool_)[:, ::2]),  # 12,000 elements: row by row
        (x.ravel()[:9000], np.ones(18_000, np.bool_)[::2]),  # 1-d: blocks of 8192
        (x[0, :1], np.ones((40, 3), np.bool_)[:, 1]),  # a broadcast input
        (x[0, 0], np.ones((), np.bool_)),  # 0-d
    ]
    for values, out in cases:
        got = tdsl_strided_safe(fn, values, out=out)
        assert got is out
        np.testing.assert_array_equal(out, np.broadcast_to(fn(values), out.shape))
