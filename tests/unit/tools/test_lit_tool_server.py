"""lit's fork server for the tools (tests/filecheck/tool_server.py) runs a tool as the
tool's own process would: the same output, error output and exit status, in the
caller's working directory; and its clients fall back to the tool when it is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

FILECHECK = Path(__file__).resolve().parents[2] / "filecheck"
sys.path.insert(0, str(FILECHECK))
import tool_server  # noqa: E402

BIN = Path(sys.executable).parent
TOOLS = {tool: str(BIN / tool) for tool in tool_server.TOOLS}


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[subprocess.Popen[str], str]]:
    if not all(Path(script).exists() for script in TOOLS.values()):
        pytest.skip("the tools' console scripts are not installed next to this Python")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    started = tool_server.start(TOOLS, env)
    assert started is not None, "the server did not start"
    yield started
    started[0].terminate()
    started[0].wait(timeout=30)


BAD_IR = '"tensordsl.relu"() : () -> ()\n'

CASES = [
    (["tdsl-opt", "--expr", "relu(x) + x", "--shape", "x=4x2xf32", "--fuse"], ""),
    (["tdsl-opt"], BAD_IR),
    (["tdsl-opt", "missing.mlir"], ""),
    (["tdsl-run", "input.mlir", "--random-args", "1"], ""),
    (["xdsl-opt", "input.mlir"], ""),
]


@pytest.mark.parametrize(("argv", "stdin"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_served_run_is_the_tools_own_run(
    server: tuple[subprocess.Popen[str], str], tmp_path: Path, argv: list[str], stdin: str
) -> None:
    (tmp_path / "input.mlir").write_text(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %r = tensordsl.relu %x : tensor<4xf32>\n"
        "  func.return %r : tensor<4xf32>\n"
        "}\n"
    )
    _, folder = server

    def run(program: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [program, *argv[1:]],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )

    served, own = run(os.path.join(folder, argv[0])), run(TOOLS[argv[0]])
    assert (served.returncode, served.stdout, served.stderr) == (
        own.returncode,
        own.stdout,
        own.stderr,
    )


def test_clients_fall_back_to_the_tool_when_the_server_is_gone(tmp_path: Path) -> None:
    if not all(Path(script).exists() for script in TOOLS.values()):
        pytest.skip("the tools' console scripts are not installed next to this Python")
    started = tool_server.start(TOOLS, {**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert started is not None
    process, folder = started
    client = Path(folder) / "tdsl-opt"
    copy = tmp_path / "tdsl-opt"
    copy.write_text(client.read_text())
    copy.chmod(0o755)
    process.terminate()
    process.wait(timeout=30)
    assert not Path(folder).exists(), "the server leaves its folder behind"
    done = subprocess.run(
        [str(copy), "--expr", "relu(x)", "--shape", "x=3xf32"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "tensordsl.relu" in done.stdout
