"""The order a step of a ``kernel.tile``'s schedule runs its ops in: a value only one
later op reads is computed just before that op (the larger tree of such operands
first), so that fewer tiles are live at once and the memory budget holds taller tiles.
Only the schedule moves: every op runs once, on the same values, so results are
NumPy's."""

from __future__ import annotations

import numpy as np

from tdsl import JITTensorKernel
from tdsl.dialects.kernel import TileOp
from tdsl.dialects.kernel_schedule import schedule

GELU = """\
def main(x: f32[64, 32], w: f32[32, 128]):
    h = x @ w
    return 0.5 * h * (1.0 + tanh(0.7978846 * (h + 0.044715 * (h * h * h))))
"""


def test_gelus_half_runs_after_the_tanh_chain_and_frees_a_tile() -> None:
    """``0.5 * h``, written first and read only by the last product: it runs just before
    that product, after the ``tanh`` chain, so one tile of scratch holds the chain (the
    result's slice the other), where the program's order needed two: at budget 3000 the
    tiles hold 22 rows, not 11."""
    kernel = JITTensorKernel(target="numpy", memory_budget=3000).compile(GELU)
    (tile,) = [op for op in kernel.ir.module("tiled").walk() if isinstance(op, TileOp)]
    body = tile.group_body()
    (step,) = schedule(body, tile.tiles_value, *tile.recorded_plan(body)).steps
    order = [body.position[op] for op in step.ops]
    names = [op.name.removeprefix("tensordsl.") for op in body.ops]
    assert names[1] == "mul" and names[7] == "tanh" and names[9] == "mul"
    assert sorted(order) == list(range(10))  # each op once
    assert order.index(1) == order.index(9) - 1 and order.index(1) > order.index(7), order
    assert tile.tiles_value[0] == 22
    assert [b.elements for b in tile.scratch_buffers] == [22 * 128]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    w = rng.standard_normal((32, 128)).astype(np.float32)
    h = x @ w
    f = np.float32
    want = f(0.5) * h * (f(1.0) + np.tanh(f(0.7978846) * (h + f(0.044715) * (h * h * h))))
    np.testing.assert_allclose(kernel(x, w), want, rtol=2e-6, atol=1e-6)
