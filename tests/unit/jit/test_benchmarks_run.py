"""The benchmark script runs (tiny sizes; no timing is asserted)."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "run.py"
CACHE_LOAD = BENCH.with_name("cache_load.py")


@pytest.fixture(autouse=True)
def jit_target() -> str:
    """The benchmarks name their targets themselves: they run once, not once per
    default target (which is what the folder's ``jit_target`` fixture would do)."""
    return "numpy"


def load(path: Path = BENCH, name: str = "tdsl_benchmarks_run") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_benchmark_runs_on_tiny_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a cache on disk: the child process that measures Dask's memory loads the kernels
    # this one compiled, instead of compiling them again
    monkeypatch.setenv("TDSL_CACHE_DIR", str(tmp_path))
    bench = load()
    # one Dask chunking of the two: the same code, at half the cost
    cfg = dataclasses.replace(bench.Config.tiny(), dask_chunks=bench.Config.tiny().dask_chunks[:1])
    out = io.StringIO()
    results = bench.run(cfg, out=out)
    text = out.getvalue()
    for label in (
        "relu(A)+B*C-D",
        "softmax(X)",
        "sum(exp(A)*B, axis=1)",
        "relu(x@w+b)",
        "compile time against op count",
        "targets",
    ):
        assert label in text
    data = bench.to_json(results, cfg, "tiny")
    json.dumps(data)  # serializable
    assert data["environment"]["numpy"]
    assert {row["kind"] for rows in data["workloads"].values() for row in rows} >= {
        "eager",
        "compiled",
    }
    assert data["targets"] and data["memory"]
    assert [row["ops"] for row in data["compile_scaling"]] == [
        bench.scaling_ops(row["terms"]) for row in data["compile_scaling"]
    ]
    check_report(bench, data, tmp_path)
    if importlib.util.find_spec("dask") is not None:
        # tdsl on Dask against plain dask.array: every workload, each chunking, measured
        assert {(row["workload"], row["chunking"]) for row in data["dask"]} == {
            (w, "blocks") for w in ("ew", "softmax", "sumexp", "mlp")
        }
        assert "tdsl on Dask: softmax(X) 48x48 f32, chunks 16x16 (blocks)" in text
        for row in data["dask"]:
            # each target measured (native where it runs), auto's pick among them
            assert row["auto_target"] in row["tdsl"] and "numpy" in row["tdsl"]
            assert all(t["median_s"] > 0 for t in row["tdsl"].values())
            assert row["dask"]["median_s"] > 0
            assert set(row["peak_rss_bytes"]) == {*row["tdsl"], "dask"}
            assert all(v >= 0 for v in row["peak_rss_bytes"].values())


def check_report(bench: ModuleType, data: dict[str, Any], tmp_path: Path) -> None:
    """The tables and the chart of ``run.py --markdown/--plot`` show this run's medians."""
    report = bench._report()
    text = report.markdown(data)
    large, small = report.split_workloads(data)
    assert small == data["small_keys"] and large and set(large).isdisjoint(small)
    for key in data["workloads"]:
        rows = data["workloads"][key]
        eager = next(r for r in rows if r["kind"] == "eager")
        native = next(r for r in rows if r["kind"] == "compiled" and r["target"] == "native")
        name = f"| `{data['exprs'][key]}` {report._shape_tag(key)} |"
        (line,) = (line for line in text.splitlines() if line.startswith(name))
        # eager's median, then a target's median with eager's over it: from the JSON
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1] == report.fmt_time(eager["median_s"])
        ratio = eager["median_s"] / native["median_s"]
        assert f"{report.fmt_time(native['median_s'])} ({ratio:.2f}x)" in cells
        if key in small:
            assert f", {data['auto_targets'][key]}" in line  # the target auto ran
    # the chain into out= against the triad: a row per size and dtype that ran one
    triads = [k for k, rows in data["workloads"].items() if {"triad"} & {r["kind"] for r in rows}]
    assert triads and report.triad_table(data).count("\n") == len(triads) + 1
    chart = tmp_path / "chart.svg"
    report.plot(data, str(chart))
    svg = chart.read_text()
    assert svg.startswith("<?xml") and "tdsl native" in svg and "small arrays" in svg
    report.plot(data, str(tmp_path / "again.svg"))  # the same data draws the same file
    assert (tmp_path / "again.svg").read_text() == svg


def test_cache_load_benchmark_runs_and_loads_without_xdsl() -> None:
    bench = load(CACHE_LOAD, "tdsl_benchmarks_cache_load")
    chosen = [c for c in bench.cases() if c.target == "numpy" and c.shapes is not None]
    results = bench.measure(1, chosen)
    out = io.StringIO()
    bench.report(results, True, out=out)
    assert "load average" in out.getvalue() and chosen[0].name in out.getvalue()
    (sample,) = results[0]["hits"]
    assert sample["hit"] and not sample["xdsl"] and not sample["llvmlite"]
