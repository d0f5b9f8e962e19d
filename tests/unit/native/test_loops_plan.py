"""The native loops' plan is recorded in each ``kernel.tile`` (``tdsl-plan-loops``), and
``tdsl-lower-to-loops`` runs it as recorded: an edit of its tiles, of its stored values
or of its BLAS calls changes the loops, the values stay NumPy's, and a plan the loops
cannot run is a located error.

The tiled IR below is what ``tdsl-tile`` records for ``e - max(e)`` with ``e = exp(x)``
on 16x300 rows cut into tiles of 100 (the NumPy target's plan), and
``relu(x @ w) + v`` whose matmul BLAS computes."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from tiled_ir import EXP_MAX_SUB as ROWS
from tiled_ir import edit, parse
from xdsl.utils.exceptions import VerifyException

from tdsl import JITTensorKernel
from tdsl.backend.llvm.plan_loops import plan_loops
from tdsl.errors import TdslBudgetWarning, TdslIRError, TdslLoopsBudgetWarning, TdslWarning
from tdsl.runtime.compile import native_unavailable_reason

pytestmark = pytest.mark.skipif(
    native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
)

MATMUL = """\
func.func @main(%x: tensor<256x48xf32>, %w: tensor<48x64xf32>, %v: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %0 = kernel.tile(%x, %w, %v) group "g0" space [256, 64, 48] iterators ["parallel", "parallel", "reduction"] tiles [256, 64, 48] scratch [] sweeps [0, 0, 0]
    ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<256x48xf32>, tensor<48x64xf32>, tensor<256x64xf32>) -> tensor<256x64xf32> {
  ^bb0(%x1: tensor<256x48xf32>, %w1: tensor<48x64xf32>, %v1: tensor<256x64xf32>):
    %1 = tensordsl.matmul %x1, %w1 : (tensor<256x48xf32>, tensor<48x64xf32>) -> tensor<256x64xf32>
    %2 = tensordsl.relu %1 : tensor<256x64xf32>
    %3 = tensordsl.add %2, %v1 : (tensor<256x64xf32>, tensor<256x64xf32>) -> tensor<256x64xf32>
    kernel.yield %3 : tensor<256x64xf32>
  }
  func.return %0 : tensor<256x64xf32>
}
"""

COMPUTED_OPERAND = """\
func.func @main(%x: tensor<32x16xf32>, %w: tensor<16x8xf32>) -> tensor<32x8xf32> {
  %0 = kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [memref<512xf32>] sweeps [0, 0]
    ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>]
    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32> {
  ^bb0(%x1: tensor<32x16xf32>, %w1: tensor<16x8xf32>):
    %1 = tensordsl.relu %x1 : tensor<32x16xf32>
    %2 = tensordsl.matmul %1, %w1 : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
    kernel.yield %2 : tensor<32x8xf32>
  }
  func.return %0 : tensor<32x8xf32>
}
"""
"""``relu(x) @ w``: the loops keep ``relu(x)`` in scratch for the matmul's loops."""

WHOLE_ROWS = """\
func.func @main(%x: tensor<16x300xf64>) -> tensor<16x300xf64> {
  %0 = kernel.tile(%x) group "g0" space [16, 300] iterators ["parallel", "reduction"] tiles [16, 300] scratch [memref<4800xf64>, memref<16xf64>] sweeps [0, 0, 0]
    ins [affine_map<(d0, d1) -> (d0, d1)>]
    outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<16x300xf64>) -> tensor<16x300xf64> {
  ^bb0(%x1: tensor<16x300xf64>):
    %1 = tensordsl.exp %x1 : tensor<16x300xf64>
    %2 = tensordsl.max %1 axis = 1 keepdims : tensor<16x300xf64> -> tensor<16x1xf64>
    %3 = tensordsl.sub %x1, %2 : (tensor<16x300xf64>, tensor<16x1xf64>) -> tensor<16x300xf64>
    kernel.yield %3 : tensor<16x300xf64>
  }
  func.return %0 : tensor<16x300xf64>
}
"""
"""``x - max(exp(x))`` with the rows whole: a plan the loops have no passes of."""

Array = np.ndarray[Any, Any]


def planned(text: str) -> str:
    """``text`` with the loops' plan ``tdsl-plan-loops`` records."""
    module = parse(text)
    plan_loops(module)
    module.verify()
    return str(module)


def rows_data() -> tuple[Array, Array]:
    x = np.random.default_rng(0).uniform(-3, 3, (16, 300))
    e = np.exp(x)
    return x, e - e.max(axis=1, keepdims=True)


def matmul_data() -> tuple[dict[str, Array], Array]:
    rng = np.random.default_rng(1)
    x, w, v = (rng.standard_normal(s).astype(np.float32) for s in [(256, 48), (48, 64), (256, 64)])
    return {"x": x, "w": w, "v": v}, np.maximum(x @ w, 0) + v


def group_scratch(loops: str) -> list[str]:
    """The scratch memrefs of the group function of ``ROWS``' loops IR ``loops``: its
    arguments after ``lo``, ``hi``, the input and the output."""
    signature = re.search(r"func\.func @main_g0\((.*?)\)", loops)
    assert signature is not None, loops
    return re.findall(r"memref<[0-9x]+xf64>", signature.group(1))[2:]


def test_the_plan_is_recorded_prints_parses_back_and_is_what_the_jit_runs() -> None:
    text = planned(ROWS)
    assert "loops tiles [1, 300] stored [] blas []" in text
    assert str(parse(text)) == text
    generic = parse(text)
    from io import StringIO

    from xdsl.printer import Printer

    out = StringIO()
    Printer(stream=out, print_generic_format=True).print_op(generic)
    assert str(parse(out.getvalue())) == text
    kernel = JITTensorKernel(target="native").compile_ir(ROWS)
    assert kernel.ir["planned"] == text.rstrip("\n") or kernel.ir["planned"] == text
    # a recorded plan is kept: planning planned IR again changes nothing
    assert planned(text) == text
    assert "loops tiles [4, 64, 48] stored [] blas [0]" in planned(MATMUL)


def test_edited_loops_tiles_and_stored_values_are_what_the_loops_run() -> None:
    x, want = rows_data()
    text = planned(ROWS)
    default = JITTensorKernel(target="native").compile_ir(text)
    np.testing.assert_allclose(default(x), want, rtol=1e-13)
    assert group_scratch(default.ir["loops"]) == ["memref<1x1xf64>"]  # the max's accumulator
    # four rows per tile, and exp kept in scratch for the subtraction's sweep
    edited = edit(text, ("loops tiles [1, 300] stored []", "loops tiles [4, 300] stored [0]"))
    kernel = JITTensorKernel(target="native").compile_ir(edited)
    assert "loops tiles [4, 300] stored [0]" in kernel.ir["planned"]
    np.testing.assert_allclose(kernel(x), want, rtol=1e-13)
    assert group_scratch(kernel.ir["loops"]) == ["memref<4x1xf64>", "memref<4x300xf64>"]
    # the rows cut as the tile op cuts them: the loops run its passes (the max over
    # the tiles of 100, then the subtraction, computing exp again), as edited
    edited = edit(text, ("loops tiles [1, 300] stored []", "loops tiles [2, 100] stored []"))
    passes = JITTensorKernel(target="native").compile_ir(edited)
    assert "loops tiles [2, 100] stored []" in passes.ir["planned"]
    np.testing.assert_allclose(passes(x), want, rtol=1e-13)
    assert group_scratch(passes.ir["loops"]) == ["memref<2x1xf64>"]
    # and exp kept in scratch for the max's pass, a tile of it: the subtraction's pass
    # computes it again
    edited = edit(text, ("loops tiles [1, 300] stored []", "loops tiles [2, 100] stored [0]"))
    stored = JITTensorKernel(target="native").compile_ir(edited)
    np.testing.assert_allclose(stored(x), want, rtol=1e-13)
    assert group_scratch(stored.ir["loops"]) == ["memref<2x1xf64>", "memref<2x100xf64>"]


def test_a_staged_plan_cut_by_the_loops_computes_the_staged_value_again() -> None:
    """The tile op stages ``exp`` (its rows whole along the cut dim, for pass 3); the
    loops, given the tile op's tiles, run its passes without keeping rows whole: exp
    in scratch for pass 1, one tile of it, and computed again in pass 3 (a staged
    plan had no passes in the loops)."""
    x, want = rows_data()
    staged = edit(
        ROWS,
        ("sweeps [1, 1, 3]", "sweeps [1, 1, 3] staged [0]"),
        (
            "scratch [memref<8xf64>, memref<800xf64>, memref<8xf64>]",
            "scratch [memref<8xf64>, memref<2400xf64>, memref<8xf64>]",
        ),
    )
    edited = edit(planned(staged), ("loops tiles [1, 300]", "loops tiles [2, 100]"))
    kernel = JITTensorKernel(target="native").compile_ir(edited)
    np.testing.assert_allclose(kernel(x), want, rtol=1e-13)
    assert group_scratch(kernel.ir["loops"]) == ["memref<2x1xf64>", "memref<2x100xf64>"]


def test_a_matmul_taken_from_blas_runs_as_loops() -> None:
    args, want = matmul_data()
    text = planned(MATMUL)
    blas = JITTensorKernel(target="native").compile_ir(text)
    assert "tdsl_matmul_" in blas.ir["loops"]
    np.testing.assert_allclose(blas(**args), want, rtol=1e-5, atol=1e-5)
    loops = JITTensorKernel(target="native").compile_ir(edit(text, ("blas [0]", "blas []")))
    assert "tdsl_matmul_" not in loops.ir["loops"]
    np.testing.assert_allclose(loops(**args), want, rtol=1e-5, atol=1e-5)
    # auto reads the recorded plan: a matmul in loops is the numpy target's to run (and
    # says that the plan given is not run)
    with pytest.warns(TdslWarning, match="the loops plan this kernel.tile records is not run"):
        auto = JITTensorKernel(target="auto").compile_ir(edit(text, ("blas [0]", "blas []")))
    assert auto.target == "numpy" and "would run as compiled loops" in str(auto.target_reason)
    assert "loops" not in auto.ir and "llvm" not in auto.ir  # decided before they were built


FLASH = (
    "func.func @main(%x: tensor<2x4xf32>, %w: tensor<4x2xf32>) -> tensor<2x2xf32> {\n"
    '  %0 = kernel.tile(%x, %w) group "g0" space [2, 4, 2] iterators ["parallel", "reduction", "parallel"] tiles [1, 2, 2] scratch [memref<2xf32>, memref<1xf32>, memref<1xf32>, memref<2xf32>, memref<1xf32>, memref<1xf32>, memref<2xf32>, memref<1xf32>, memref<1xf32>] sweeps [1] loops tiles [1, 2, 2] stored [0] blas []\n'
    "    ins [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>]\n"
    "    outs [affine_map<(d0, d1, d2) -> (d0, d2)>] : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32> {\n"
    "  ^bb0(%x1: tensor<1x2xf32>, %w1: tensor<2x2xf32>):\n"
    "    %1 = tensordsl.softmax_matmul %x1, %w1 : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>\n"
    "    kernel.yield %1 : tensor<1x2xf32>\n"
    "  }\n"
    "  func.return %0 : tensor<2x2xf32>\n"
    "}\n"
)


@pytest.mark.parametrize(
    ("text", "old", "new", "message"),
    [
        (
            ROWS,
            "stored []",
            "stored [7]",
            "the loops plan stores value 7, and the group's ops compute 3 values",
        ),
        (
            COMPUTED_OPERAND,
            "stored [0]",
            "stored []",
            "the loops plan does not store value 0 ('tensordsl.relu'), which the loops need "
            "stored (a matmul's computed operand",
        ),
        (
            MATMUL,
            "blas [0]",
            "blas [1]",
            "the loops plan gives BLAS op 1 of the group, which is 'tensordsl.relu': BLAS "
            "computes only a 2-D f32 or f64 matmul whose right operand is a group input or "
            "its transpose (the group's matmuls, as the loops run it with these tiles, are "
            "op 0)",
        ),
        (
            # (the verifier lets a reduction dim take tiles within the tile op's: a
            # softmax_matmul's keys, or the tile op's passes where the loops run them:
            # this tile op has none)
            WHOLE_ROWS,
            "loops tiles [1, 300]",
            "loops tiles [1, 100]",
            "the loops plan cuts d1 into tiles of 100, a reduction dim the loops run whole",
        ),
        (
            # (a reduction's result, in the plan's passes: a later step computed the max
            # again, "has no element-wise body" or a KeyError; found by fuzzing)
            ROWS,
            "loops tiles [1, 300] stored []",
            "loops tiles [2, 100] stored [1]",
            "the loops plan stores value 1 ('tensordsl.max'), a reduction's result, and "
            "runs the tile op's passes",
        ),
        (
            # (flash attention's result, stored as computed: nan; found by fuzzing)
            FLASH,
            "stored [0]",
            "stored [0]",
            "the loops plan stores value 0 ('tensordsl.softmax_matmul'), which the loops "
            "compute over tiles of its keys",
        ),
    ],
)
def test_a_plan_the_loops_cannot_run_is_a_located_error(
    text: str, old: str, new: str, message: str
) -> None:
    edited = edit(planned(text), (old, new))
    with pytest.raises(TdslIRError) as info:
        JITTensorKernel(target="native").compile_ir(edited)
    assert message in str(info.value)
    # at the tile op's line of the text, caret under its name (found by fuzzing: no
    # location, and xDSL's pattern driver's note printed the whole module again)
    line = next(n for n, row in enumerate(edited.splitlines(), 1) if "kernel.tile" in row)
    where = info.value.location
    assert where is not None and (where.file, where.line) == ("<ir>", line)
    assert where.length == len("kernel.tile")
    assert not getattr(info.value, "__notes__", None)


@pytest.mark.fallback
def test_auto_warns_at_a_recorded_plan_it_does_not_run() -> None:
    """Under ``auto`` a hand-edited plan the loops cannot run fell back to the numpy
    target silently (the edit's error only in ``target_reason``): it is a warning at the
    tile op now, and so is a plan ``auto`` leaves for the numpy target's speed."""
    edited = edit(planned(MATMUL), ("blas [0]", "blas [1]"))
    line = next(n for n, row in enumerate(edited.splitlines(), 1) if "kernel.tile" in row)
    with pytest.warns(
        TdslWarning, match="the loops plan this kernel.tile records is not run"
    ) as seen:
        kernel = JITTensorKernel(target="auto").compile_ir(edited)
    assert kernel.target == "numpy" and "op 1 of the group" in str(kernel.target_reason)
    (warning,) = [w for w in seen if "loops plan" in str(w.message)]
    assert f"<ir>:{line}:" in str(warning.message) and warning.filename == __file__
    assert "op 1 of the group" in str(warning.message)
    # (the plan as recorded runs under auto without a word)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TdslWarning)
        assert JITTensorKernel(target="auto").compile_ir(planned(MATMUL)).target == "native"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("loops tiles [1, 300]", "loops tiles [17, 300]", "must be between 1 and 16"),
        ("loops tiles [1, 300]", "loops tiles [1]", "1 loops tiles for a 2-d iteration space"),
        ("stored []", "stored [0, 0]", "loops stored [0, 0] must be distinct"),
        ("blas []", "blas [] limit 1", "loops limit 1 is less than the"),
        ("loops tiles [1, 300] stored [] blas []", "summed", "loops `summed` without a plan"),
    ],
)
def test_an_inconsistent_loops_plan_is_refused_by_the_verifier(
    old: str, new: str, message: str
) -> None:
    module = parse(edit(planned(ROWS), (old, new)), verify=False)
    with pytest.raises(VerifyException, match=re.escape(message)):
        module.verify()


def test_tdsl_opt_prints_the_plan_and_locates_a_bad_edit(tmp_path: Path) -> None:
    path = tmp_path / "rows.mlir"
    path.write_text(ROWS)
    done = subprocess.run(
        [sys.executable, "-m", "tdsl.tools.tdsl_opt", str(path), "-p", "tdsl-plan-loops"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "loops tiles [1, 300] stored [] blas []" in done.stdout
    path.write_text(edit(planned(WHOLE_ROWS), ("loops tiles [1, 300]", "loops tiles [1, 100]")))
    done = subprocess.run(
        [sys.executable, "-m", "tdsl.tools.tdsl_opt", str(path), "-p", "tdsl-lower-to-loops"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{path}:3:" in done.stderr and "the loops run whole" in done.stderr


@pytest.mark.parametrize("dtype", ["f16", "i32"])
def test_a_matmul_in_loops_runs_its_columns_innermost(dtype: str) -> None:
    """A matmul the loops compute (float16 and integers: no BLAS) sums its products in
    order, so its contraction innermost would not vectorize: the loop over the result's
    columns runs innermost (a row of the accumulator, a row of ``v``), even where ``v``
    has fewer columns than the contraction has terms (48 against 16 here)."""
    kernel = JITTensorKernel(target="native").compile(
        "relu(x) @ v", {"x": (64, 48), "v": (48, 16)}, dtype
    )
    group = kernel.ir["loops"].split("func.func @main_g0")[1]
    lines = group.splitlines()
    product = next(
        i for i, line in enumerate(lines) if re.search(r"arith\.mul[fi] .*: [fi]32$", line)
    )
    loop = next(line for line in reversed(lines[:product]) if "scf.for" in line)
    upper = re.search(r"to (%\w+) step", loop)
    assert upper is not None, loop
    constants = dict(re.findall(r"(%\w+) = arith.constant (\d+) : index", group))
    assert constants[upper.group(1)] == "16", loop
    rng = np.random.default_rng(0)
    x, v = rng.integers(-4, 5, (64, 48)), rng.integers(-4, 5, (48, 16))
    t = np.float16 if dtype == "f16" else np.int32
    got = kernel(x.astype(t), v.astype(t))
    np.testing.assert_array_equal(got, (np.maximum(x, 0) @ v).astype(t))


HEAD_OF_WINDOWS = """\
def head(h: f32[512, 192], m: f32[512, 512]):
    return softmax(h[:, 0:64] @ transpose(h[:, 64:128]) * 0.125 + m) @ h[:, 128:192]
"""


def test_a_head_of_windows_shares_its_rows_among_threads() -> None:
    """The transpose of a group input that BLAS reads as it lies (``k.T``, ``k`` a window
    of a qkv product) computes nothing in the loops, so it does not keep a head's rows in
    one tile: at a budget that holds them all, they still go to the two threads."""
    kernel = JITTensorKernel(target="native", threads=2, memory_budget=10**7).compile(
        HEAD_OF_WINDOWS
    )
    rows = int(re.search(r"loops tiles \[(\d+),", kernel.ir["planned"]).group(1))  # type: ignore[union-attr]
    assert rows <= 256
    rng = np.random.default_rng(8)
    h = rng.standard_normal((512, 192)).astype(np.float32)
    m = np.triu(np.full((512, 512), -1e10, np.float32), 1)
    s = h[:, 0:64] @ h[:, 64:128].T * np.float32(0.125) + m
    e = np.exp(s - s.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True) @ h[:, 128:192]
    np.testing.assert_allclose(kernel(h, m), want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize(
    "body", ["exp(a)", "sum(a, axis=1)", "softmax(a)", "relu(a @ b) + 1", "cumsum(a, axis=1)"]
)
@pytest.mark.parametrize("shapes", [((3, 0), (0, 2)), ((0, 4), (4, 2)), ((3, 4), (4, 0))])
def test_a_dim_of_extent_zero_is_planned_in_tiles_of_one(
    body: str, shapes: tuple[tuple[int, int], tuple[int, int]]
) -> None:
    """An empty dim's loops tile is 1, as its tile op's is: the planned IR verifies (it
    recorded 0, which the verifier refuses; found by fuzzing), and the loops compute
    NumPy's empty or zero result."""
    (m, k), (_, n) = shapes
    source = f"def main(a: f32[{m}, {k}], b: f32[{k}, {n}]):\n    return {body}\n"
    import tdsl

    module = tdsl.tile(tdsl.fuse(tdsl.to_tensordsl(source)))
    plan_loops(module)
    module.verify()
    a = np.ones((m, k), np.float32)
    b = np.ones((k, n), np.float32)
    got = JITTensorKernel(target="native").compile(source)(a=a, b=b)
    want = {
        "exp(a)": np.exp(a),
        "sum(a, axis=1)": a.sum(axis=1),
        "softmax(a)": a,  # (empty, or rows of 0 elements)
        "relu(a @ b) + 1": np.maximum(a @ b, 0) + 1,
        "cumsum(a, axis=1)": np.cumsum(a, axis=1),
    }[body]
    if body == "softmax(a)" and a.size:
        want = np.exp(a) / np.exp(a).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-6)  # (native exp: within 1 ulp)


def test_an_empty_group_plans_without_a_budget_warning() -> None:
    """A group with an empty dim computes nothing, so it needs no scratch: no warning
    that its loops need more than the plan records (an attention of 0 keys warned)."""
    import warnings

    import tdsl

    source = "def main(a: f32[0, 0], b: f32[0, 0]):\n    return softmax(a @ b) @ transpose(b)\n"
    module = tdsl.tile(tdsl.fuse(tdsl.to_tensordsl(source)))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        plan_loops(module)
    assert not seen, [str(w.message) for w in seen]
    module.verify()


def test_edited_loops_tiles_beyond_the_recorded_scratch_are_a_located_error() -> None:
    """Parallel tiles edited larger than the scratch the tile op records (and the budget)
    allow, where smaller ones fit, are refused where the loops are lowered (they ran,
    keeping 256 rows of 1000 elements under a budget of 4096); the planner's own slack
    (:data:`LOOPS_SCRATCH_SLACK`) is allowed an edit too."""
    from tdsl.backend.llvm.loops_choices import LOOPS_SCRATCH_SLACK

    jit = JITTensorKernel(target="native", memory_budget=4096)
    kernel = jit.compile("exp(x) - max(exp(x), axis=1, keepdims=True)", {"x": (256, 1000)})
    text = kernel.ir["planned"]
    found = re.search(r"loops tiles \[(\d+), 1000\] stored \[\]", text)
    assert found is not None and int(found.group(1)) * 1000 <= 4096 + LOOPS_SCRATCH_SLACK
    # exp kept in scratch: a tile of 4 rows fits, of 256 rows (256,256 elements) does not
    fits = text.replace(found.group(0), f"loops tiles [{found.group(1)}, 1000] stored [0]")
    assert JITTensorKernel(target="native").compile_ir(fits).target == "native"
    edited = text.replace(found.group(0), "loops tiles [256, 1000] stored [0]")
    with pytest.raises(TdslIRError, match=r"loops tiles \[256, 1000\] need 256256 elements"):
        JITTensorKernel(target="native").compile_ir(edited)


def test_two_groups_of_one_name_are_a_located_error() -> None:
    # both lowered to @main_g0: an internal error, unlocated (found by fuzzing)
    from tdsl.backend.llvm.lower_to_loops import lower_to_loops

    group = (
        'kernel.tile(%{a}) group "g0" space [{n}] iterators ["parallel"] tiles [{n}] scratch [] '
        "sweeps [0] ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0)>] : "
        "(tensor<{n}xf32>) -> tensor<{n}xf32> {{\n"
        "  ^bb0(%v: tensor<{n}xf32>):\n    %r = tensordsl.relu %v : tensor<{n}xf32>\n"
        "    kernel.yield %r : tensor<{n}xf32>\n  }}"
    )
    module = parse(
        "func.func @main(%x: tensor<4xf32>, %y: tensor<8xf32>) -> (tensor<4xf32>, tensor<8xf32>) {\n"
        f"  %0 = {group.format(a='x', n=4)}\n  %1 = {group.format(a='y', n=8)}\n"
        "  func.return %0, %1 : tensor<4xf32>, tensor<8xf32>\n}\n"
    )
    with pytest.raises(TdslIRError, match="two groups of @main are named 'g0'") as caught:
        lower_to_loops(module)
    assert caught.value.op is not None


def test_a_stored_mean_is_read_as_it_was_stored() -> None:
    # `stored [0]` kept the finished mean, and its reader divided it by the count again
    # (native results 2.46 and -6.19 where NumPy has 0; found by fuzzing)
    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    text = (
        "func.func @main(%x: tensor<2x8xf32>) -> tensor<2xf32> {\n"
        '  %0 = kernel.tile(%x) group "g0" space [2, 8] iterators ["parallel", "reduction"] '
        "tiles [1, 2] scratch [memref<1xf32>, memref<2xf32>, memref<1xf32>] sweeps [1, 3, 3] "
        "loops tiles [1, 8] stored [0] blas []\n"
        "    ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0)>] : "
        "(tensor<2x8xf32>) -> tensor<2xf32> {\n"
        "  ^bb0(%x_1: tensor<1x2xf32>):\n"
        "    %1 = tensordsl.mean %x_1 axis = 1 keepdims : tensor<1x2xf32> -> tensor<1x1xf32>\n"
        "    %2 = tensordsl.sub %x_1, %1 : (tensor<1x2xf32>, tensor<1x1xf32>) -> tensor<1x2xf32>\n"
        "    %3 = tensordsl.sum %2 axis = 1 : tensor<1x2xf32> -> tensor<1xf32>\n"
        "    kernel.yield %3 : tensor<1xf32>\n  }\n"
        "  func.return %0 : tensor<2xf32>\n}\n"
    )
    x = np.arange(16, dtype=np.float32).reshape(2, 8) * 3 + 1
    kernel = JITTensorKernel(target="native", threads=1).compile_ir(text)
    assert "stored [0]" in kernel.ir["planned"]
    want = np.sum(x - np.mean(x, axis=1, keepdims=True), axis=1)
    np.testing.assert_allclose(kernel(x), want, atol=1e-4)


def test_a_value_stored_in_place_of_its_operand_is_not_computed_again_from_it() -> None:
    """``x + -sum(x)`` with ``sum(x)`` and ``-sum(x)`` stored (an edit): ``-sum(x)`` took
    over the sum's slot, written in place, while the sweep of its own level that adds it
    to ``x`` computed it again from that slot, negating it twice (``x + sum(x)``,
    silently; found by fuzzing).  Any stored values give NumPy's result."""
    text = (
        "func.func @main(%x: tensor<4x6xf64>) -> tensor<4x6xf64> {\n"
        '  %0 = kernel.tile(%x) group "g0" space [4, 6] iterators ["parallel", "reduction"] '
        "tiles [4, 6] scratch [memref<4xf64>] sweeps [0, 0, 0] loops tiles [1, 6] "
        "stored [STORED] blas []\n"
        "    ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : "
        "(tensor<4x6xf64>) -> tensor<4x6xf64> {\n"
        "  ^bb0(%x1: tensor<4x6xf64>):\n"
        "    %1 = tensordsl.sum %x1 axis = 1 keepdims : tensor<4x6xf64> -> tensor<4x1xf64>\n"
        "    %2 = tensordsl.neg %1 : tensor<4x1xf64>\n"
        "    %3 = tensordsl.add %x1, %2 : (tensor<4x6xf64>, tensor<4x1xf64>) -> tensor<4x6xf64>\n"
        "    kernel.yield %3 : tensor<4x6xf64>\n  }\n"
        "  func.return %0 : tensor<4x6xf64>\n}\n"
    )
    x = np.arange(24.0).reshape(4, 6)
    for stored in ("0, 1", "0", "1", ""):
        kernel = JITTensorKernel(target="native").compile_ir(text.replace("STORED", stored))
        np.testing.assert_array_equal(kernel(x), x - x.sum(axis=1, keepdims=True))


NEG_RELU = (
    "func.func @main(%x: tensor<4x8xf32>, %w1: tensor<8x6xf32>, %w2: tensor<6x4xf32>) -> tensor<4x4xf32> {\n"
    '  %0 = kernel.tile(%x, %w1, %w2) group "g0" space [4, 4, 6, 8] iterators ["parallel", "parallel", "reduction", "reduction"] tiles [4, 4, 6, 8] scratch [memref<24xf32>] sweeps [0, 0, 0, 0] loops tiles [4, 4, 6, 8] stored [2, 1] blas [0, 3]\n'
    "    ins [affine_map<(d0, d1, d2, d3) -> (d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d2, d1)>]\n"
    "    outs [affine_map<(d0, d1, d2, d3) -> (d0, d1)>] : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<6x4xf32>) -> tensor<4x4xf32> {\n"
    "  ^bb0(%x1: tensor<4x8xf32>, %w11: tensor<8x6xf32>, %w21: tensor<6x4xf32>):\n"
    "    %1 = tensordsl.matmul %x1, %w11 : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>\n"
    "    %2 = tensordsl.neg %1 : tensor<4x6xf32>\n"
    "    %3 = tensordsl.relu %2 : tensor<4x6xf32>\n"
    "    %4 = tensordsl.matmul %3, %w21 : (tensor<4x6xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>\n"
    "    kernel.yield %4 : tensor<4x4xf32>\n"
    "  }\n"
    "  func.return %0 : tensor<4x4xf32>\n"
    "}\n"
)


@pytest.mark.parametrize("stored", ["[2, 1]", "[1, 2]"])
def test_stored_values_sharing_a_slot_are_stored_in_program_order(stored: str) -> None:
    # `relu(neg)` computed in place of `neg`: `stored [2, 1]` stored relu, then neg over it,
    # and the second matmul read neg (native errors of 6.2; found by fuzzing)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w1 = rng.standard_normal((8, 6)).astype(np.float32)
    w2 = rng.standard_normal((6, 4)).astype(np.float32)
    text = NEG_RELU.replace("stored [2, 1]", f"stored {stored}")
    kernel = JITTensorKernel(target="native", threads=1).compile_ir(text)
    assert f"stored {stored}" in kernel.ir["planned"]
    want = np.maximum(-(x @ w1), 0) @ w2
    np.testing.assert_allclose(kernel(x, w1, w2), want, rtol=1e-5, atol=1e-5)


def test_a_matmul_stored_in_a_plan_running_passes_is_a_located_error() -> None:
    """``sum(relu(a @ w) - max(relu(a @ w), axis=0), axis=0)`` (33x160 by 160x8; with a
    contraction of 16 the loops compute the matmul, cheaper than BLAS) at budget 64 runs
    the tile op's passes, BLAS computing ``a @ w`` a tile of rows at a time.  An edit storing that
    matmul's result made a later step compute it again, element by element: a bare
    KeyError, or "'tensordsl.matmul' has no element-wise body" (found by fuzzing)."""
    text = "sum(relu(a @ w) - max(relu(a @ w), axis=0, keepdims=True), axis=0)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslWarning)
        kernel = JITTensorKernel(target="native", memory_budget=64, threads=1).compile(
            text, {"a": (33, 160), "w": (160, 8)}, "f32"
        )
    planned = kernel.ir["planned"]
    assert "stored [] blas [0, 2]" in planned
    edited = planned.replace("stored [] blas [0, 2]", "stored [0] blas [0, 2]")
    with pytest.raises(TdslIRError, match=r"stores value 0 \('tensordsl.matmul'\)") as info:
        JITTensorKernel(target="native").compile_ir(edited)
    assert info.value.location is not None


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_a_matvecs_computed_operand_is_stored_only_where_the_scratch_holds_it(
    dtype: str,
) -> None:
    """``tanh(a) @ e`` with one column ``e``: the loops store the operand a matmul in
    loops reads along its contraction, so that each column of the result reads it, and
    so that it is computed in a sweep of its own, vectorized.  A matvec has one column:
    they kept all of ``tanh(a)`` for ``log_softmax(tanh(a) @ e, axis=0) + (tanh(a) @
    e)`` at budget 1024 (77,058 elements of scratch, a loops budget warning; 68 of 240
    such matvec configurations warned).  Such an operand is now stored only where the
    scratch holds it, as long chains' values are: not at 1024, but at the default
    budget (there ``tanh(a) @ e`` takes 5.9 ms stored, 23.8 ms without, at 2048x2048)."""
    roomy = JITTensorKernel(target="native").compile(
        "tanh(a) @ e", {"a": (2048, 2048), "e": (2048, 1)}, dtype
    )
    assert re.search(r"loops tiles \[\d+, \d+\] stored \[0\]", roomy.ir["planned"])
    rng = np.random.default_rng(5)
    a, e = rng.standard_normal((128, 300)), rng.standard_normal((300, 1))
    text = "log_softmax(tanh(a) @ e, axis=0) + (tanh(a) @ e)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)  # (no fusion plan fits 1024)
        warnings.simplefilter("error", TdslLoopsBudgetWarning)
        kernel = JITTensorKernel(target="native", memory_budget=1024).compile(
            text, {"a": a.shape, "e": e.shape}, dtype
        )
    assert re.search(r"loops tiles \[\d+, \d+\] stored \[\] blas \[\]", kernel.ir["planned"])
    p = np.tanh(a) @ e
    m = p.max(axis=0, keepdims=True)
    want = p - m - np.log(np.exp(p - m).sum(axis=0, keepdims=True)) + p
    cast = np.float32 if dtype == "f32" else np.float64
    got = kernel(a=a.astype(cast), e=e.astype(cast))
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == "f32" else 1e-12, atol=1e-5)


@pytest.mark.parametrize(
    ("text", "budget", "blas"),
    [
        ("mean(relu(a) @ b, axis=0)", 64, "[]"),  # (BLAS for each contraction element)
        ("mean(relu(a) @ b, axis=0)", 256, "[]"),
        ("mean(relu(a) @ b, axis=0)", 1024, "[1]"),  # (50 calls of 2 rows by 80)
        ("max(tanh(a) @ b, axis=0, keepdims=True)", 64, "[1]"),  # (tanh at each product)
    ],
)
def test_the_loops_compute_a_matmul_where_blas_calls_would_cost_more(
    text: str, budget: int, blas: str
) -> None:
    """``mean(relu(a) @ b, axis=0)`` (100x300 by 300x160) at budgets 64 and 256 called
    BLAS once per column and element of the contraction (48,000 calls of 100x1 by 1x1,
    39 ms); the loops compute it in 3.7 ms, within the same scratch
    (``loops_split.cheaper_loops``).  Not where the calls are few, nor where the loops
    would compute ``tanh(a)`` again at each product (14.3 ms against BLAS's 2.8 ms on
    a stored column of it, at 100x160 by 160x160)."""
    shapes = {"a": (100, 300), "b": (300, 160)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)
        warnings.simplefilter("error", TdslLoopsBudgetWarning)
        kernel = JITTensorKernel(target="native", memory_budget=budget, threads=1).compile(
            text, shapes, "f32"
        )
    pattern = rf"loops tiles \[[0-9, ]+\] stored \[[0-9, ]*\] blas {re.escape(blas)}"
    assert re.search(pattern, kernel.ir["planned"])
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((100, 300)), rng.standard_normal((300, 160))
    a, b = a.astype(np.float32), b.astype(np.float32)
    f = np.tanh(a) if "tanh" in text else np.maximum(a, 0)
    want = (f @ b).max(axis=0, keepdims=True) if "max" in text else (f @ b).mean(axis=0)
    np.testing.assert_allclose(kernel(a, b), want, rtol=1e-4, atol=1e-4)
