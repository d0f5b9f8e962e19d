"""Compile feedback: each stage's time on the kernel, and the ``tdsl`` logger."""

from __future__ import annotations

import logging

import pytest

from tdsl import JITTensorKernel
from tdsl.jit import timing


def test_compile_time_has_each_stage_in_order(jit_target: str) -> None:
    kernel = JITTensorKernel().compile("softmax(x) @ w", {"x": (64, 32), "w": (32, 16)})
    stages = list(kernel.compile_time)
    want = ["frontend", "canonicalize", "tdsl-fuse", "tdsl-tile", "numpy target"]
    if kernel.target == "native":
        want += [
            "tdsl-plan-loops",
            "tdsl-lower-to-loops",
            "tdsl-convert-to-llvm",
            "machine code (llvmlite)",
        ]
    assert stages == want
    assert all(seconds >= 0 for seconds in kernel.compile_time.values())
    # the passes are the pipeline's, by the names tdsl-opt -p takes
    assert all(name in kernel.pipeline for name in stages if name.startswith(("tdsl-", "canon")))


def test_the_logger_reports_stages_at_debug_and_the_whole(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="tdsl"):
        kernel = JITTensorKernel().compile("relu(a) + b", {"a": (8, 8), "b": (8, 8)})
    messages = [r.getMessage() for r in caplog.records if r.name == "tdsl"]
    assert any(m.startswith("compile stage tdsl-fuse: ") for m in messages)
    whole = [m for m in messages if m.startswith("compiled ")]
    assert len(whole) == 1 and kernel.signature in whole[0]
    assert all(r.levelno == logging.DEBUG for r in caplog.records if r.name == "tdsl")


def test_a_slow_compile_is_reported_at_info(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timing, "SLOW_COMPILE_S", 0.0)  # every compile is "slow"
    with caplog.at_level(logging.INFO, logger="tdsl"):
        JITTensorKernel().compile("exp(a)", {"a": (8, 8)})
    (record,) = [r for r in caplog.records if r.name == "tdsl"]
    assert record.levelno == logging.INFO and record.getMessage().startswith("compiled main(")
    assert "s (" in record.getMessage()  # with its slowest stages


def test_nothing_is_logged_unless_asked(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        JITTensorKernel().compile("exp(a) * 2", {"a": (8, 8)})
    assert not [r for r in caplog.records if r.name == "tdsl"]
