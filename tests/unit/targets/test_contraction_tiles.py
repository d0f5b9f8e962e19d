"""The native loops run a matmul's contraction in tiles (``loops_split``): a GPT-2 MLP's
hidden dim, each tile of the hidden layer computed and its product with the second
weight added into the result by BLAS, against NumPy; the tile is part of the recorded
loops plan, and hand edits run or are refused with a located error."""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest
from test_matmul_chains import CHAINS, arrays

from tdsl import JITTensorKernel, TdslError
from tdsl.errors import TdslBudgetWarning

pytestmark = pytest.mark.skipif(
    __import__("importlib").util.find_spec("llvmlite") is None, reason="no llvmlite"
)

TEXT = CHAINS["mlp"][0]


def _compile(args: dict[str, Any], budget: int | None = None) -> Any:
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    return JITTensorKernel(target="native", memory_budget=budget).compile(
        TEXT,
        {k: v.shape for k, v in args.items()},
        {k: str(v.dtype).replace("float", "f") for k, v in args.items()},
    )


def _loops_tiles(planned: str) -> list[int]:
    (loops,) = re.findall(r"loops tiles \[([^\]]*)\]", planned)
    return [int(t) for t in loops.split(",")]


def _space(planned: str) -> list[int]:
    (space,) = re.findall(r"space \[([^\]]*)\]", planned)
    return [int(t) for t in space.split(",")]


def _within_budget(text: str, shapes: dict[str, Any], budget: int | None, **kw: Any) -> Any:
    """``text`` compiled for the native target under ``budget`` (f64), skipping where
    native code does not run here; a ``TdslLoopsBudgetWarning`` (the loops breaking the
    plan's scratch) is an error."""
    from tdsl.errors import TdslLoopsBudgetWarning
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)  # (no fusion plan fits a small one)
        warnings.simplefilter("error", TdslLoopsBudgetWarning)
        return JITTensorKernel(target="native", memory_budget=budget, **kw).compile(
            text, shapes, "f64"
        )


def _close(got: Any, want: Any) -> None:
    tol = 1e-10 if want.dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * float(np.abs(want).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("budget", [None, 20_000])
def test_an_mlps_hidden_dim_runs_in_tiles(dtype: Any, budget: int | None) -> None:
    """``x + tanh(layernorm(x) @ w1 + b) @ w2`` with a hidden dim of 600: the loops cut
    it into tiles (two at the default budget; more, of at least 256, where the budget
    leaves less), each added into the result by a BLAS call inside the loop over them,
    and the result is NumPy's."""
    a = arrays("mlp", 64, 48, 600, dtype, 1)
    kernel = _compile(a, budget)
    tiles = _loops_tiles(kernel.ir["planned"])
    hidden = _space(kernel.ir["planned"]).index(600)
    assert 256 <= tiles[hidden] < 600, tiles
    if budget is None:
        assert tiles[0] == 64 and tiles[hidden] == 300, tiles  # one tile of rows: its thread's
    loops = kernel.ir["loops"]
    assert loops.count("func.call @tdsl_gemm_") == 2  # both matmuls, a tile at a time
    _close(np.asarray(kernel(**a)), CHAINS["mlp"][1](a))


def test_an_edited_contraction_tile_runs_or_is_refused() -> None:
    """The hidden tile is part of the recorded plan (``loops tiles``): edited to 7 (a tile
    that does not divide 600) or to the whole dim, the loops run it to NumPy's result;
    a plan that cuts the hidden dim but takes BLAS from its matmul, or that cuts the
    layer norm's dim, is refused with a located error that says what would run."""
    a = arrays("mlp", 40, 24, 600, np.float32, 2)
    kernel = _compile(a)
    planned = kernel.ir["planned"]
    tiles = _loops_tiles(planned)
    space = _space(planned)
    hidden, inner = space.index(600), space.index(24)
    (blas,) = re.findall(r"blas \[([^\]]*)\]", planned)
    want = CHAINS["mlp"][1](a)

    def edit(new_tiles: list[int], new_blas: str = blas) -> str:
        text = planned.replace(
            "loops tiles [" + ", ".join(map(str, tiles)) + "]",
            "loops tiles [" + ", ".join(map(str, new_tiles)) + "]",
        )
        return text.replace(f"blas [{blas}]", f"blas [{new_blas}]")

    def at(d: int, tile: int) -> list[int]:
        return [tile if k == d else t for k, t in enumerate(tiles)]

    for size in (7, 600):
        edited = JITTensorKernel(target="native").compile_ir(edit(at(hidden, size)))
        assert _loops_tiles(edited.ir["planned"])[hidden] == size
        _close(np.asarray(edited(*a.values())), want)
    first = blas.split(",")[0].strip()
    with pytest.raises(TdslError, match=rf"cuts d{hidden}, the contraction of 'tensordsl.matmul'"):
        JITTensorKernel(target="native").compile_ir(edit(at(hidden, 7), first))
    with pytest.raises(TdslError, match=r"does not give it BLAS: add \d+ to `blas`"):
        JITTensorKernel(target="native").compile_ir(edit(at(hidden, 7), first))
    with pytest.raises(TdslError, match=rf"the loops plan cuts d{inner} into tiles of 5"):
        JITTensorKernel(target="native").compile_ir(edit(at(inner, 5)))


def _tail(x: Any, a: Any, wo: Any, bo: Any, g: Any, c: Any, w1: Any, b: Any, w2: Any) -> Any:
    """A GPT-2 block's tail, as ``benchmarks/transformer.py`` writes it: attention's
    output projection and residual, a layer norm (gain ``g``, bias ``c``), then the MLP
    (gelu's tanh form)."""
    f32 = np.float32
    x1 = x + a @ wo + bo
    mean = x1.mean(axis=-1, keepdims=True)
    n = g * ((x1 - mean) / np.sqrt(x1.var(axis=-1, keepdims=True) + f32(1e-5))) + c
    u = n @ w1 + b
    gelu = f32(0.5) * u * (1 + np.tanh(f32(np.sqrt(2 / np.pi)) * (u + f32(0.044715) * u**3)))
    return x1 + gelu @ w2


def test_the_plan_gives_blas_the_larger_tiles() -> None:
    """A GPT-2 block's tail at the default budget keeps more per row than the MLP alone:
    cutting the hidden dim down to 256 does not fit 256 rows, so the rows are halved;
    the plan then keeps the hidden dim in two tiles of 1536 (BLAS gets 128 rows by
    1536), not 128 rows by 256, and computes NumPy's result. (Where 256 rows fit with
    a shorter hidden tile, they win: BLAS took 25.6 ms on the MLP's GEMMs in tiles of 256
    by 256, 26.7 by 128 by 1536, ``benchmarks/mlp_gemm_tiles.py``.)"""
    from tdsl import trace
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    rng = np.random.default_rng(3)
    t, e, h = 512, 768, 3072

    def draw(*shape: int, scale: float = 1.0) -> Any:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    args = (draw(t, e), draw(t, e), draw(e, e, scale=0.03), draw(e), draw(e), draw(e))
    args += (draw(e, h, scale=0.03), draw(h), draw(h, e, scale=0.02))
    traced = trace(_tail, target="native", threads=2)
    planned = traced.compile(*args).ir["planned"]
    tiles, space = _loops_tiles(planned), _space(planned)
    assert tiles[space.index(h)] == 1536 and tiles[0] == 128, (tiles, space)
    _close(np.asarray(traced(*args)), _tail(*args))


def test_on_dask_arrays_chunked_along_the_rows() -> None:
    """The MLP on a Dask array of rows (chunks of 32): each chunk's native kernel runs
    the hidden dim (600) in tiles, and the result is NumPy's."""
    dask = pytest.importorskip("dask")
    import dask.array as da

    a = arrays("mlp", 96, 32, 600, np.float32, 4)
    _compile(a)  # (skips where native code cannot run)
    jit = JITTensorKernel(target="native")
    chunk = jit.compile(TEXT, {**{k: v.shape for k, v in a.items()}, "x": (32, 32)}, "f32")
    assert _loops_tiles(chunk.ir["planned"])[_space(chunk.ir["planned"]).index(600)] == 300
    with dask.config.set(scheduler="threads"):
        got = jit(TEXT, **{**a, "x": da.from_array(a["x"], chunks=(32, 32))}).compute()
    _close(np.asarray(got), CHAINS["mlp"][1](a))


@pytest.mark.parametrize(
    "text",
    [
        "sum(x * ((x * 2.0) @ w @ w), axis=1)",
        "mean(exp(x) * (tanh(tanh(x) @ w) @ w))",
        "max((relu(x - 1.0) @ w @ w) + x, axis=0)",
    ],
)
def test_a_contraction_a_reduction_reads_after_is_cut(text: str) -> None:
    """A reduction (not a matmul) reading the chain's result after its contraction: the
    loops cut that contraction at 512 and came out a quarter off (found by fuzzing).  The
    cause was the scratch, not the reduction: the second matmul's product took the slot
    of the first one's left operand, last read at an earlier level, but read again in
    each tile of the loop over the contraction.  Such a value now keeps its slot until
    the loop ends; the contraction is cut, and the result is NumPy's."""
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, (8, 512))
    w = rng.uniform(0.5, 1.5, (512, 512)) / 512
    kernel = JITTensorKernel(target="native").compile(text, {"x": x.shape, "w": w.shape}, "f64")
    names = {"sum": np.sum, "mean": np.mean, "max": np.max, "exp": np.exp, "tanh": np.tanh}
    want = eval(text, {**names, "relu": lambda v: np.maximum(v, 0)}, {"x": x, "w": w})
    _close(np.asarray(kernel(x=x, w=w)), np.asarray(want))
    assert _loops_tiles(kernel.ir["planned"])[-1] == 256  # (the contraction in two tiles)


_RELU = lambda v: np.maximum(v, 0)  # noqa: E731


@pytest.mark.parametrize("budget", [64, None])
@pytest.mark.parametrize(
    ("text", "reference"),
    [
        (
            "sum(relu(a), axis=1, keepdims=True) * (relu(a) @ b)",
            lambda a, b: np.sum(_RELU(a), axis=1, keepdims=True) * (_RELU(a) @ b),
        ),
        (
            "exp(a) @ b - mean(exp(a), axis=1, keepdims=True)",
            lambda a, b: np.exp(a) @ b - np.mean(np.exp(a), axis=1, keepdims=True),
        ),
        (
            "tanh(relu(a) @ b) * max(a, axis=1, keepdims=True)",
            lambda a, b: np.tanh(_RELU(a) @ b) * np.max(a, axis=1, keepdims=True),
        ),
    ],
)
def test_a_reduction_along_the_contraction_runs_on_over_its_tiles(
    text: str, reference: Any, budget: int | None
) -> None:
    """A reduction along the contraction beside the matmul (``sum(relu(a), axis=1)``
    next to ``relu(a) @ b``) whose result only ops after the matmul read: its
    accumulator runs on over the contraction's tiles, read after the loop over them.
    The loops took such a contraction whole (a row of ``relu(a)``, 1,024 elements, at
    budget 64, with a warning); they now cut it, and the result is NumPy's."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 1024))
    b = rng.standard_normal((1024, 96)) / 32
    kernel = _within_budget(text, {"a": a.shape, "b": b.shape}, budget)
    assert _loops_tiles(kernel.ir["planned"])[-1] < 1024  # (the contraction, in tiles)
    _close(np.asarray(kernel(a=a, b=b)), reference(a, b))


def test_a_reader_of_a_reduction_over_the_loop_comes_after_it() -> None:
    """``(relu(a) @ b) / (1 + sum(relu(a), axis=1))``: the row sum runs over the
    contraction's tiles, as the matmul does, and ``1 + sum`` came at the matmul's level,
    inside the loop, reading a sum still missing tiles: the planner kept the contraction
    whole, and refused a recorded plan that cut it.  Readers of what the loop computes
    now come after it (``loops_split.level_floors``): the planner cuts the contraction,
    and so may an edited plan, each giving NumPy's result."""
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    text = "(relu(a) @ b) / (1 + sum(relu(a), axis=1, keepdims=True))"
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((64, 1024)), rng.standard_normal((1024, 96)) / 32
    want = (_RELU(a) @ b) / (1 + _RELU(a).sum(1, keepdims=True))
    jit = JITTensorKernel(target="native")
    kernel = jit.compile(text, {"a": a.shape, "b": b.shape}, "f64")
    planned = kernel.ir["planned"]
    tiles = _loops_tiles(planned)
    assert tiles[-1] < 1024
    _close(np.asarray(kernel(a=a, b=b)), want)
    for tile in (256, 100, 1):
        cut = planned.replace(
            "loops tiles [" + ", ".join(map(str, tiles)) + "]",
            "loops tiles [" + ", ".join(map(str, [*tiles[:-1], tile])) + "]",
        )
        edited = jit.compile_ir(cut)
        assert _loops_tiles(edited.ir["planned"])[-1] == tile
        _close(np.asarray(edited(a=a, b=b)), want)


def _layernorm(x: Any) -> Any:
    m = x.mean(1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(1, keepdims=True) + 1e-5)


@pytest.mark.parametrize("budget", [16, 64, 256])
@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("layernorm(a) @ b", lambda a, b: _layernorm(a) @ b),
        (
            "(a / sqrt(sum(a * a, axis=1, keepdims=True))) @ b + sum(a, axis=1, keepdims=True)",
            lambda a, b: (a / np.sqrt((a * a).sum(1, keepdims=True))) @ b + a.sum(1, keepdims=True),
        ),
        ("tanh(layernorm(a) @ b) @ transpose(b)", lambda a, b: np.tanh(_layernorm(a) @ b) @ b.T),
        (
            "(layernorm(a) @ b) * (exp(a / 4) @ b)",
            lambda a, b: (_layernorm(a) @ b) * (np.exp(a / 4) @ b),
        ),
    ],
)
def test_statistics_along_the_contraction_run_before_the_loop(
    text: str, reference: Any, budget: int
) -> None:
    """A layer norm before a matmul, along its contraction: each element of the matmul's
    left operand reads its row's mean and variance, which a loop over the contraction's
    tiles cannot have until the last.  The loops compute them first, in sweeps over the
    whole row (from the inputs: no scratch), then run the loop.  They took the row whole
    (302 elements of scratch at budgets 16 to 256, with a warning, and ``auto`` ran the
    numpy target); now a tile of it, and the result is NumPy's.  An op along the
    contraction that feeds no statistic (``exp(a / 4)``) runs in the loop, after them:
    it came at the first statistic's level, and the loops took the row whole."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((40, 300))
    b = rng.standard_normal((300, 300)) / 16
    kernel = _within_budget(text, {"a": a.shape, "b": b.shape}, budget)
    assert _loops_tiles(kernel.ir["planned"].split("kernel.tile")[1])[-1] < 300
    again = JITTensorKernel(target="native").compile_ir(kernel.ir["planned"])  # (verifies)
    for fn in (kernel, again):
        _close(np.asarray(fn(a=a, b=b)), reference(a, b))


def test_a_value_stored_at_a_statistics_level_keeps_the_contraction_whole() -> None:
    """``layernorm(a) @ b`` with ``a - mean`` stored as well (an edit): its sweep would
    run with the statistics, over the whole row, before the loop over the contraction's
    tiles, into a buffer of one tile.  A recorded plan that does so is refused with a
    located error; marked ``summed`` as well, it runs as the tile op's passes (the stored
    value a tile at a time in the pass that computes it, BLAS adding each tile's
    product: ``loops_common.pass_gemms``), and matches NumPy.  (The planner computes
    this matmul in loops, BLAS's calls of 1 by 60 costing more: an edit gives it BLAS,
    ``blas [7]``, which loops over the contraction's tiles in the sweeps.)"""
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)
        kernel = JITTensorKernel(target="native", memory_budget=64).compile(
            "layernorm(a) @ b", {"a": (40, 300), "b": (300, 300)}, "f64"
        )
    planned = kernel.ir["planned"]
    (chosen,) = re.findall(r"loops tiles \[[^\]]*\] stored \[[^\]]*\] blas [^\n]*", planned)
    assert chosen.endswith("stored [6] blas [] summed") and _loops_tiles(planned)[-1] < 300
    planned = planned.replace(chosen, loops := chosen.replace("blas [] summed", "blas [7]"))
    stored = "6"
    more = loops.replace(f"stored [{stored}]", f"stored [1, {stored}]")
    with pytest.raises(TdslError, match=r"at the level of a statistic along d\d") as err:
        JITTensorKernel(target="native").compile_ir(planned.replace(loops, more))
    assert err.value.location is not None
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((40, 300)), rng.standard_normal((300, 300))
    normed = (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5)
    run = JITTensorKernel(target="native").compile_ir(planned.replace(loops, f"{more} summed"))
    np.testing.assert_allclose(run(a, b), normed @ b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("budget", [64, 256])
@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("(relu(a) @ b) * (relu(a) @ c)", lambda a, b, c: (_RELU(a) @ b) * (_RELU(a) @ c)),
        (
            "(relu(a) @ b) * (relu(a) @ c) + sum(a, axis=1, keepdims=True)",
            lambda a, b, c: (_RELU(a) @ b) * (_RELU(a) @ c) + a.sum(1, keepdims=True),
        ),
    ],
)
def test_matmuls_sharing_a_contraction_run_in_one_loop_over_it(
    text: str, reference: Any, budget: int
) -> None:
    """Two matmuls along one contraction, each with a computed left operand: one loop over
    its tiles, each adding its tile's product into its own result.  The loops cut one
    matmul's contraction only, so they kept the shared one whole, a row of ``relu(a)``
    beyond the plan's scratch (at 128x160 by 160x128 and budget 64, 321 elements, with a
    warning, and ``auto`` ran the numpy target); now a tile of it, and the result is
    NumPy's."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((24, 160))
    b, c = rng.standard_normal((160, 32)) / 8, rng.standard_normal((160, 32)) / 8
    shapes = {"a": a.shape, "b": b.shape, "c": c.shape}
    kernel = _within_budget(text, shapes, budget, threads=1)
    assert _loops_tiles(kernel.ir["planned"].split("kernel.tile")[1])[-1] < 160
    again = JITTensorKernel(target="native").compile_ir(kernel.ir["planned"])  # (verifies)
    for fn in (kernel, again):
        _close(np.asarray(fn(a=a, b=b, c=c)), reference(a, b, c))


@pytest.mark.parametrize("budget", [16, 64])
@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("(relu(a) @ b) * (a @ c)", lambda a, b, c: (_RELU(a) @ b) * (a @ c)),
        ("(a @ c) - relu(a) @ b", lambda a, b, c: (a @ c) - _RELU(a) @ b),
    ],
)
def test_a_matmul_on_an_input_joins_the_loop_over_a_cut_contraction(
    text: str, reference: Any, budget: int
) -> None:
    """``(relu(a) @ b) * (a @ c)`` at budget 64: ``a @ c``, one BLAS call into the output,
    kept the loops from cutting the contraction it shares with ``relu(a) @ b`` (they cut
    one where every op along it feeds the matmul), so they kept a row of ``relu(a)``
    beyond the plan's scratch, warned, and ``auto`` ran the numpy target.  Where that
    plan breaks the budget, ``a @ c`` now joins the loop over the contraction's tiles,
    BLAS reading ``a``'s columns as they lie; the plan verifies when read back.  With
    the contraction cut, the columns are as wide as fit (about the tile op's 5 and 16): the
    planner had halved them to 1 first, a BLAS call per element of the result's row and
    of the contraction (175 ms at 100x300 by 300x160 and budget 256, now 3.4 ms)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((24, 160))
    b, c = rng.standard_normal((160, 32)) / 8, rng.standard_normal((160, 32)) / 8
    shapes = {"a": a.shape, "b": b.shape, "c": c.shape}
    kernel = _within_budget(text, shapes, budget, threads=1)
    columns, _, contraction = _loops_tiles(kernel.ir["planned"])
    assert contraction < 160 and columns >= {16: 4, 64: 16}[budget]
    again = JITTensorKernel(target="native").compile_ir(kernel.ir["planned"])  # (verifies)
    for fn in (kernel, again):
        _close(np.asarray(fn(a=a, b=b, c=c)), reference(a, b, c))


@pytest.mark.parametrize(
    ("text", "shapes", "budget"),
    [
        (
            "(exp(a) @ e) * (relu(g) @ b) - (a @ e)",
            {"a": (2, 600), "g": (2, 600), "b": (600, 16), "e": (600, 16)},
            None,
        ),
        (
            "((relu(a) @ e) - (a @ c)) @ d",
            {"a": (4, 16), "c": (16, 8), "e": (16, 8), "d": (8, 4)},
            16,
        ),
        (
            "(g @ c) * (relu(g) @ e) + (exp(a) @ b)",
            {"a": (6, 33), "g": (6, 33), "b": (33, 14), "c": (33, 14), "e": (33, 14)},
            64,
        ),
        (
            "(a @ b) + (relu(a) @ c) * (layernorm(a) @ e)",
            {"a": (50, 511), "b": (511, 40), "c": (511, 40), "e": (511, 40)},
            20000,
        ),
    ],
)
def test_a_plan_beside_a_matmul_on_an_input_reads_back(
    text: str, shapes: dict[str, Any], budget: int | None
) -> None:
    """Read back, a plan takes the contraction its tiles cut as the planner chose it.
    ``(exp(a) @ e) * (relu(g) @ b) - (a @ e)``: the planner cuts ``relu(g) @ b``'s (``a
    @ e`` runs along ``exp(a) @ e``'s without feeding it); read back with matmuls on
    inputs allowed from the start, ``exp(a) @ e``'s came first, with ``a @ e``, and the
    recorded cut was refused as a dim the loops run whole.  A layer norm beside them
    (the last) needed more scratch read back than planned: its ops came at the levels
    of a cut the plan does not make (found by fuzzing)."""
    rng = np.random.default_rng(8)
    arrays = {n: rng.standard_normal(s) for n, s in shapes.items()}
    kernel = _within_budget(text, shapes, budget)
    want = JITTensorKernel(target="numpy").compile(text, shapes, "f64")(**arrays)
    again = JITTensorKernel(target="native").compile_ir(kernel.ir["planned"])
    for fn in (kernel, again):
        _close(np.asarray(fn(**arrays)), np.asarray(want))


def test_statistics_move_no_op_to_the_loops_level_where_the_contraction_runs_whole() -> None:
    """``(relu(a) @ c) * (layernorm(a) @ e)`` at budget 1000: the plan with the contraction
    whole fits.  Ops that feed no statistic came at the level after them even there (a
    cut's level floors), the scratch grew, and the loops cut the contraction and the
    columns to 1 (2.8 ms against 0.22; found by fuzzing)."""
    rng = np.random.default_rng(9)
    shapes = {"a": (50, 512), "c": (512, 40), "e": (512, 40)}
    arrays = {n: rng.standard_normal(s) for n, s in shapes.items()}
    kernel = _within_budget("(relu(a) @ c) * (layernorm(a) @ e)", shapes, 1000, threads=1)
    assert _loops_tiles(kernel.ir["planned"]) == [1, 40, 512]
    _close(
        np.asarray(kernel(**arrays)),
        (_RELU(arrays["a"]) @ arrays["c"]) * (_layernorm(arrays["a"]) @ arrays["e"]),
    )


def test_a_matmul_on_inputs_keeps_its_whole_blas_call_where_the_budget_allows() -> None:
    """``(relu(a) @ b) * (a @ c)`` with a contraction of 600 at the default budget: the
    loops would cut a contraction that long into two tiles for taller BLAS tiles, but
    not this one: ``a @ c`` is then one BLAS call on both threads, into the output.
    Only where that plan breaks the budget does ``a @ c`` join the loop over the
    contraction's tiles (the test above)."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 600))
    b, c = rng.standard_normal((600, 48)) / 8, rng.standard_normal((600, 48)) / 8
    text = "(relu(a) @ b) * (a @ c)"
    kernel = _within_budget(text, {"a": a.shape, "b": b.shape, "c": c.shape}, None)
    assert _loops_tiles(kernel.ir["planned"])[-1] == 600
    assert "func.call @tdsl_matmul_f64_64x600x48(%a, %c, %out0)" in kernel.ir["loops"]
    _close(np.asarray(kernel(a=a, b=b, c=c)), (_RELU(a) @ b) * (a @ c))


def test_a_reduction_along_the_contraction_runs_in_the_loop_over_its_tiles() -> None:
    """``sum(a, axis=0)`` of ``a``'s columns, the contraction the loops cut, beside a
    layer norm's kind of statistics (``mean(a, axis=1)``, ``min(a, axis=1)``) that run
    before the loop: it ran before the loop too, over all 257 columns, into an
    accumulator of one tile's (three matmuls through the contraction, 74% off; found by
    fuzzing).  Only reductions over the contraction run before the loop."""
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    text = (
        "((a / (1 + abs(sum(a, axis=0, keepdims=True)))) @ b) * "
        "((a - mean(a, axis=1, keepdims=True)) @ c) + ((a - min(a, axis=1, keepdims=True)) @ d)"
    )
    shapes = {"a": (7, 257), "b": (257, 16), "c": (257, 16), "d": (257, 16)}
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.uniform(-2, 2, s) for s in shapes.values())
    kernel = JITTensorKernel(target="native", memory_budget=4096, threads=1).compile(
        text, shapes, "f64"
    )
    want = ((a / (1 + np.abs(a.sum(0, keepdims=True)))) @ b) * (
        (a - a.mean(1, keepdims=True)) @ c
    ) + ((a - a.min(1, keepdims=True)) @ d)
    _close(np.asarray(kernel(a, b, c, d)), want)


@pytest.mark.parametrize(
    ("text", "shapes", "budget"),
    [
        ("sum(softmax(a) @ b)", {"a": (2, 5), "b": (5, 2)}, 16),
        ("sum(softmax(a) @ b, axis=1, keepdims=True)", {"a": (2, 75), "b": (75, 96)}, 64),
        ("sum(softmax(a) @ b, axis=0, keepdims=True)", {"a": (33, 256), "b": (256, 96)}, 2454),
    ],
)
def test_a_plan_of_a_softmax_feeding_a_matmul_reads_back_as_planned(
    text: str, shapes: dict[str, tuple[int, int]], budget: int
) -> None:
    """A softmax feeding a matmul has two forms in the loops: the plain one, and the flash
    one (``softmax_matmul``), which a recorded plan that cuts a reduction dim is read back
    in.  The planner, planning the plain one, cut the contraction (the softmax's row
    statistics before the loop over its tiles): read back in the flash form, its plan
    named ops it does not have ("the loops plan gives BLAS op 5 of the group, which is
    not in its body"; found by fuzzing).  The plain form's plan keeps its reduction dims
    whole, and the result is NumPy's."""
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s) for s in shapes.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)
        kernel = JITTensorKernel(target="native", memory_budget=budget, threads=1).compile(
            text, shapes, "f64"
        )
    e = np.exp(a - a.max(1, keepdims=True))
    product = (e / e.sum(1, keepdims=True)) @ b
    axis = None if "axis" not in text else int(text.split("axis=")[1][0])
    _close(np.asarray(kernel(a, b)), np.asarray(product.sum(axis=axis, keepdims=axis is not None)))


def test_a_reduction_accumulated_over_the_contractions_tiles_cannot_be_stored() -> None:
    """``sum(relu(a), axis=1) + relu(a) @ b`` with the contraction cut and the sum stored
    too (an edit): the sum's accumulator runs on over the loop's tiles, whole only after
    the last, and the stored copy held one tile's sum ([10, 26] for [20, 52]; found by
    fuzzing).  A located error now."""
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    planned = (
        "func.func @main(%a: tensor<2x4xf32>, %b: tensor<4x1xf32>) -> tensor<2x1xf32> {\n"
        '  %0 = kernel.tile(%a, %b) group "g0" space [2, 1, 4] iterators ["parallel", '
        '"parallel", "reduction"] tiles [1, 1, 2] scratch [memref<1xf32>, memref<1xf32>, '
        "memref<2xf32>, memref<1xf32>] sweeps [1, 1, 1, 1, 2] loops tiles [1, 1, 2] "
        "stored [STORED] blas [3]\n"
        "    ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>]\n"
        "    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : "
        "(tensor<2x4xf32>, tensor<4x1xf32>) -> tensor<2x1xf32> {\n"
        "  ^bb0(%a_1: tensor<1x2xf32>, %b_1: tensor<2x1xf32>):\n"
        "    %1 = tensordsl.relu %a_1 : tensor<1x2xf32>\n"
        "    %2 = tensordsl.sum %1 axis = 1 keepdims : tensor<1x2xf32> -> tensor<1x1xf32>\n"
        "    %3 = tensordsl.relu %a_1 : tensor<1x2xf32>\n"
        "    %4 = tensordsl.matmul %3, %b_1 : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>\n"
        "    %5 = tensordsl.add %2, %4 : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>\n"
        "    kernel.yield %5 : tensor<1x1xf32>\n  }\n"
        "  func.return %0 : tensor<2x1xf32>\n}\n"
    )
    a = np.arange(1, 9, dtype=np.float32).reshape(2, 4)
    b = np.ones((4, 1), np.float32)
    kernel = JITTensorKernel(target="native", threads=1).compile_ir(planned.replace("STORED", "2"))
    np.testing.assert_array_equal(kernel(a, b), [[20], [52]])
    edited = planned.replace("STORED", "1, 2")
    with pytest.raises(
        TdslError, match=r"stores value 1 \('tensordsl.sum'\), a reduction over"
    ) as err:
        JITTensorKernel(target="native").compile_ir(edited)
    assert err.value.location is not None


@pytest.mark.parametrize("budget", [1024, 4096])
def test_a_plan_that_cuts_no_contraction_wins_where_its_blas_calls_cost_far_less(
    budget: int,
) -> None:
    """``mean(relu(a) @ b, axis=0)`` (100x300 by 300x160): at budget 1024 the loops
    fitted whole rows of the mean by cutting the contraction and the columns to 5
    (1,920 BLAS calls of 100x5 by 5x5, 1.75 ms); the plan's passes over tiles of rows,
    the contraction whole, make 50 calls (0.1 ms; the numpy target took 0.28 ms).  The
    planner weighs the two by what their BLAS calls cost (``loops_split.blas_cost``)."""
    from tdsl.backend.llvm.loops_split import BLAS_CALL_ELEMENTS

    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((100, 300)), rng.standard_normal((300, 160))
    text = "mean(relu(a) @ b, axis=0)"
    kernel = _within_budget(text, {"a": a.shape, "b": b.shape}, budget, threads=1)
    cols, rows, inner = _loops_tiles(kernel.ir["planned"])
    assert inner == 300 and rows < 100  # (the plan's passes over tiles of rows)
    calls = -(-160 // cols) * -(-100 // rows)
    assert calls * (BLAS_CALL_ELEMENTS + 300 * cols) <= 2 * 50 * (BLAS_CALL_ELEMENTS + 300 * 160)
    _close(np.asarray(kernel(a=a, b=b)), np.mean(_RELU(a) @ b, axis=0))


@pytest.mark.parametrize(
    "text,shapes",
    [
        ("(g @ b) * (g @ c) * (exp(a / 4) @ c)", {"g": (3, 511), "a": (3, 511), "b": (511, 64), "c": (511, 64)}),
        ("(a @ c) * (relu(a) @ b) + sum(a @ c, axis=1, keepdims=True)", {"a": (128, 160), "b": (160, 128), "c": (160, 128)}),
        (
            "tanh((a @ e) - ((a - mean(a, axis=1, keepdims=True)) @ b)) + sum(a @ e, axis=1, keepdims=True)",
            {"a": (32, 255), "b": (255, 40), "e": (255, 40)},
        ),
    ],
)  # fmt: skip
def test_readers_of_a_loops_matmuls_come_after_the_loop(
    text: str, shapes: dict[str, tuple[int, ...]]
) -> None:
    """``g @ b`` and ``g @ c`` (on an input) run at level 0, ``exp(a / 4) @ c`` at level 1
    (after the stored ``exp``), all in the loop over the contraction's tiles: their
    product was read at level 1, inside the loop, so the planner kept the contraction
    whole (513 elements at budget 256, a loops budget warning; so the other two).  Its
    readers now come after the loop (``loops_split.level_floors``)."""
    rng = np.random.default_rng(7)
    arrays = {n: rng.standard_normal(s) / 4 for n, s in shapes.items()}
    kernel = _within_budget(text, shapes, 256, threads=1)
    want = JITTensorKernel(target="numpy", memory_budget=256).compile(text, shapes, "f64")
    _close(np.asarray(kernel(**arrays)), np.asarray(want(**arrays)))
    readback = JITTensorKernel(target="native", memory_budget=256, threads=1)
    assert readback.compile_ir(kernel.ir["planned"]).ir["loops"] == kernel.ir["loops"]


@pytest.mark.parametrize("budget", [64, 256])
@pytest.mark.parametrize(
    "text",
    ["exp((relu(a) @ c) + (relu(a) @ b)) @ d", "relu((exp(a / 4) @ c) + (tanh(a) @ b)) @ d"],
)
def test_the_loops_cut_the_contraction_the_plan_cuts(text: str, budget: int) -> None:
    """Two matmuls feed a third: the plan cuts the hidden dim the third sums over (tiles
    of 26 at budget 256); the loops cut the first qualifying matmuls' contraction
    instead, into tiles of 1 (a BLAS call per element of it), and still kept the hidden
    dim whole (258 elements at 256, a loops budget warning).  They now take the
    contraction the plan cuts, as it cuts it, and read back the same."""
    shapes = {"a": (64, 100), "b": (100, 128), "c": (100, 128), "d": (128, 16)}
    rng = np.random.default_rng(3)
    arrays = {n: rng.standard_normal(s) / 4 for n, s in shapes.items()}
    kernel = _within_budget(text, shapes, budget, threads=1)
    planned = kernel.ir["planned"]
    (plan,) = re.findall(r" tiles \[([^\]]*)\] scratch", planned)
    assert _loops_tiles(planned)[2:] == [100, int(plan.split(",")[3])]
    want = JITTensorKernel(target="numpy", memory_budget=budget).compile(text, shapes, "f64")
    _close(np.asarray(kernel(**arrays)), np.asarray(want(**arrays)))
    readback = JITTensorKernel(target="native", memory_budget=budget, threads=1)
    assert readback.compile_ir(planned).ir["loops"] == kernel.ir["loops"]
