"""The `.tdsl` Frontend: registered in the universe, usable by plain `xdsl-opt`."""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.universe import Universe
from xdsl.xdsl_opt_main import xDSLOptMain

from tdsl.errors import TdslNameError, TdslSyntaxError
from tdsl.frontend.xdsl_frontend import TdslFrontend

KERNEL = b"def k(x: f32[2, 3]):\n    h = relu(x)\n    return softmax(h), h\n"


def test_frontend_parses_a_program() -> None:
    module = TdslFrontend().parse(Context(), BytesIO(KERNEL), "k.tdsl")
    (k,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    assert k.sym_name.data == "k"
    assert len(k.function_type.outputs.data) == 2


def test_frontend_errors_name_the_file() -> None:
    with pytest.raises(TdslNameError) as info:
        TdslFrontend().parse(Context(), BytesIO(b"def k(x: f32[2]):\n    return y\n"), "in.tdsl")
    assert str(info.value).startswith("in.tdsl:2:12: error: unknown name `y`")


def test_frontend_rejects_invalid_utf8() -> None:
    with pytest.raises(TdslSyntaxError, match=r"in\.tdsl: the input is not valid UTF-8 \(byte 1\)"):
        TdslFrontend().parse(Context(), BytesIO(b"a\xff"), "in.tdsl")


def test_universe_registers_the_frontend() -> None:
    factory = Universe.get_multiverse().all_frontends["tdsl"]
    assert factory() is TdslFrontend
    assert TdslFrontend.name == "tdsl"


def test_plain_xdsl_opt_reads_tdsl_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "kernel.tdsl"
    path.write_bytes(KERNEL)
    xDSLOptMain(args=[str(path), "--print-debuginfo"]).run()
    out = capsys.readouterr().out
    assert "%h = tensordsl.relu %x : tensor<2x3xf32>" in out
    assert f'loc("{path}":2:9)' in out
    assert "func.func @k(" in out
