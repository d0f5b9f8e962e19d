"""The native loops run a matmul's contraction in tiles (``loops_split``): a GPT-2 MLP's
hidden dim, each tile of the hidden layer computed and its product with the second
weight added into the result by BLAS, against NumPy; the tile is part of the recorded
loops plan, and hand edits run or are refused with a located error."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from test_matmul_chains import CHAINS, arrays

from tdsl import JITTensorKernel, TdslError

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
