"""Users' type checkers see tdsl's types: the package ships ``py.typed``, and a small user
file using the public API passes pyright in strict mode with tdsl as an installed library.

pyright looks tdsl up in a site-packages made of links (the editable install is an
import hook, which no type checker follows), with ``useLibraryCodeForTypes`` off:
a library without ``py.typed`` is then unknown, as it is to mypy.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

USER = """\
from typing import Annotated

import numpy as np

import tdsl
from tdsl.lang import Array, f32, f64, relu, softmax

jit = tdsl.JITTensorKernel(memory_budget=4096, threads=1)
kernel = jit.compile("relu(A) + B", shapes={"A": (4,), "B": (4,)}, dtypes="f32")
reveal_type(kernel)
reveal_type(kernel.groups)
reveal_type(kernel.to_dot())
reveal_type(tdsl.explain_fusion)


@tdsl.function
def layer(x: f32[8, 4], w: Array, b: Annotated[Array, "f32[4]"]):
    return softmax(relu(x @ w + b), axis=-1)


@tdsl.function(memory_budget=64)
def scale(a: Array, s: f64[()]):
    return a * s


reveal_type(layer)
reveal_type(layer(np.zeros((8, 4), np.float32), np.zeros((4, 4), np.float32), np.zeros(4)))
reveal_type(layer.compile)
reveal_type(relu)
reveal_type(scale.python)
"""

EXPECTED = [
    'Type of "kernel" is "CompiledKernel"',
    'Type of "kernel.groups" is "tuple[GroupInfo, ...]"',
    'Type of "kernel.to_dot()" is "str"',
    'Type of "tdsl.explain_fusion" is "(module: ModuleOp, memory_budget: int | None = None, ',
    'Type of "layer" is "Function[(x: f32, w: ndarray[',
    'Type of "layer(np.zeros((8, 4), np.float32), np.zeros((4, 4), np.float32), np.zeros(4))" '
    'is "ndarray[',
    'Type of "layer.compile" is "(...) -> CompiledKernel"',
    'Type of "relu" is "(x: ndarray[',
    'Type of "scale.python" is "(a: ndarray[',
]
"""The start of what pyright reveals (NumPy's stubs spell the array types)."""


def _site(tmp_path: Path, typed: bool) -> Path:
    """A venv whose site-packages links tdsl (without py.typed unless ``typed``) and its
    dependencies."""
    site = tmp_path / "venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = site / "site-packages"
    site.mkdir(parents=True)
    package = site / "tdsl"
    package.mkdir()
    for entry in (ROOT / "tdsl").iterdir():
        if entry.name != "py.typed" or typed:
            (package / entry.name).symlink_to(entry)
    import numpy
    import xdsl

    for module in (numpy, xdsl):
        (site / module.__name__).symlink_to(Path(str(module.__file__)).parent)
    return site


def pyright(tmp_path: Path, typed: bool) -> dict[str, Any]:
    executable = shutil.which("pyright") or str(Path(sys.executable).parent / "pyright")
    _site(tmp_path, typed)
    (tmp_path / "user.py").write_text(USER)
    config = {
        "typeCheckingMode": "strict",
        "venvPath": str(tmp_path),
        "venv": "venv",
        "pythonVersion": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "useLibraryCodeForTypes": False,
    }
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(config))
    result = subprocess.run(
        [executable, "--outputjson", "user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return json.loads(result.stdout)


def messages(report: dict[str, Any], severity: str) -> list[str]:
    return [d["message"] for d in report["generalDiagnostics"] if d["severity"] == severity]


def test_py_typed_is_shipped() -> None:
    assert (ROOT / "tdsl" / "py.typed").exists()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '[tool.setuptools.package-data]\ntdsl = ["py.typed"]' in pyproject


@pytest.mark.parametrize("typed", [True, False], ids=["with-py.typed", "without"])
def test_user_file_type_checks(tmp_path: Path, typed: bool) -> None:
    report = pyright(tmp_path, typed)
    if typed:
        assert messages(report, "error") == []
        revealed = messages(report, "information")
        for expected in EXPECTED:
            assert any(r.startswith(expected) for r in revealed), (expected, revealed)
    else:  # the control: without the marker, the same file does not check
        assert 'Stub file not found for "tdsl"' in messages(report, "error")
