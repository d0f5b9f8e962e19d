"""The JIT's cache on disk: hits across processes, keys, bad files, concurrent writers.

Every test runs once per target (the ``jit_target`` fixture sets ``$TDSL_TARGET``,
which child processes inherit), but one that names its target.  Results are compared with NumPy; no timing is
asserted here (``benchmarks/cache_load.py`` measures the load time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tdsl
from tdsl.errors import TdslCallError, TdslOptionError
from tdsl.jit import CompiledKernel, DiskCacheInfo, JITTensorKernel, disk_cache
from tdsl.jit.disk_cache import SUFFIX

ONE_DEFAULT_TARGET = pytest.mark.parametrize("jit_target", ["numpy"], indirect=True)
"""For a test that names its targets itself: the folder's default target
(``jit_target``) takes one value, not both, whose two runs were the same."""

EXPR = "softmax(A @ B) + sin(A @ B) * s"
"""A matmul (a BLAS call in native code), a libm function and a reduction."""
SHAPES = {"A": (128, 64), "B": (64, 128)}
DTYPES: dict[str, Any] = {"A": "f32", "B": "f32", "s": float}


def reference(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], s: float) -> Any:
    m = a @ b
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) + np.sin(m) * np.float32(s)


def inputs() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(7)
    return (
        rng.standard_normal(SHAPES["A"], np.float32) * 0.1,
        rng.standard_normal(SHAPES["B"], np.float32) * 0.1,
    )


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"*{SUFFIX}"))


def jit_in(folder: Path, **options: Any) -> JITTensorKernel:
    return JITTensorKernel(cache_dir=folder, threads=options.pop("threads", 1), **options)


def compile_in(folder: Path, **options: Any) -> tuple[JITTensorKernel, CompiledKernel]:
    jit = jit_in(folder, **options)
    return jit, jit.compile(EXPR, SHAPES, DTYPES)


def info(jit: JITTensorKernel) -> tuple[int, int, int, int]:
    found = jit.disk_cache_info()
    assert found is not None
    return found.hits, found.misses, found.rejected, found.writes


# --------------------------------------------------------------------------- across processes

_CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tdsl
    jit = tdsl.JITTensorKernel(cache_dir=sys.argv[1], threads=1)
    kernel = jit.compile({expr!r}, {shapes!r}, {{"A": "f32", "B": "f32", "s": float}})
    rng = np.random.default_rng(7)
    a = rng.standard_normal({a!r}, np.float32) * 0.1
    b = rng.standard_normal({b!r}, np.float32) * 0.1
    out = kernel(a, b, 0.5)
    np.save(sys.argv[2], out)
    print(json.dumps({{
        "disk": jit.disk_cache_info()._asdict(),
        "target": kernel.target,
        "xdsl": sorted(m for m in sys.modules if m == "xdsl" or m.startswith("xdsl.")),
        "llvmlite": "llvmlite" in sys.modules,
    }}))
    """
).format(expr=EXPR, shapes=SHAPES, a=SHAPES["A"], b=SHAPES["B"])


def run_child(folder: Path, result: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", _CHILD, str(folder), str(result)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_new_process_loads_the_kernel_without_xdsl(tmp_path: Path, jit_target: str) -> None:
    folder = tmp_path / "cache"
    first = run_child(folder, tmp_path / "first.npy")
    assert first["disk"] | {"directory": ""} == {
        "directory": "",
        "hits": 0,
        "misses": 1,
        "rejected": 0,
        "writes": 1,
        "evicted": 0,
    }
    assert first["target"] == jit_target and first["xdsl"]  # it compiled
    assert len(entries(folder)) == 1

    second = run_child(folder, tmp_path / "second.npy")
    assert (second["disk"]["hits"], second["disk"]["misses"]) == (1, 0)
    assert second["disk"]["writes"] == 0
    assert second["target"] == jit_target
    assert second["xdsl"] == []  # a hit never imports xDSL
    # llvmlite is needed to load native code only
    assert second["llvmlite"] == (jit_target == "native")
    a, b = inputs()
    got = np.load(tmp_path / "second.npy")
    np.testing.assert_array_equal(got, np.load(tmp_path / "first.npy"))
    np.testing.assert_allclose(got, reference(a, b, 0.5), rtol=1e-4, atol=1e-5)


_WRITER = textwrap.dedent(
    """
    import sys, time
    import tdsl
    start = float(sys.argv[2])
    while time.time() < start:
        time.sleep(0.001)
    jit = tdsl.JITTensorKernel(cache_dir=sys.argv[1], threads=1)
    for n in (16, 32, 48):
        jit.compile("relu(A) @ B + 1.0", {"A": (n, 8), "B": (8, n)}, "f32")
    print(jit.disk_cache_info().writes)
    """
)


def test_concurrent_writers_leave_whole_entries(tmp_path: Path) -> None:
    import time

    folder = tmp_path / "cache"
    start = str(time.time() + 1.0)  # both start compiling at about the same time
    writers = [
        subprocess.Popen(
            [sys.executable, "-W", "error", "-c", _WRITER, str(folder), start],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err
        assert int(out) in (0, 1, 2, 3)
    assert len(entries(folder)) == 3
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary left
    jit = jit_in(folder)
    rng = np.random.default_rng(0)
    for n in (16, 32, 48):
        kernel = jit.compile("relu(A) @ B + 1.0", {"A": (n, 8), "B": (8, n)}, "f32")
        a, b = rng.standard_normal((n, 8), np.float32), rng.standard_normal((8, n), np.float32)
        np.testing.assert_allclose(kernel(a, b), np.maximum(a, 0) @ b + 1, rtol=1e-5, atol=1e-5)
    assert info(jit) == (3, 0, 0, 0)


# --------------------------------------------------------------------------- in one process


def test_a_second_jit_loads_what_the_first_wrote(tmp_path: Path, jit_target: str) -> None:
    jit, fresh = compile_in(tmp_path)
    assert info(jit) == (0, 1, 0, 1)
    again, loaded = compile_in(tmp_path)
    assert info(again) == (1, 0, 0, 0)
    assert loaded is not fresh and loaded.target == fresh.target == jit_target
    a, b = inputs()
    np.testing.assert_array_equal(loaded(a, b, 0.5), fresh(a, b, 0.5))
    np.testing.assert_allclose(loaded(A=a, B=b, s=0.5), reference(a, b, 0.5), rtol=1e-4, atol=1e-5)
    assert again.compile(EXPR, SHAPES, DTYPES) is loaded  # now in memory
    assert again.cache_info().currsize == 1


def test_a_weak_integer_and_its_bounds_are_stored(tmp_path: Path) -> None:
    t = np.array([3, -4], np.int32)
    for _ in range(2):  # compiled and stored, then loaded
        jit = jit_in(tmp_path, target="numpy")
        kernel = jit.compile("t * n", {"t": (2,)}, {"t": "i32", "n": int})
        np.testing.assert_array_equal(kernel(t, 3), t * 3)
        assert kernel.args[1].bounds == (-(2**31), 2**31 - 1)
        with pytest.raises(TdslCallError, match="NumPy 2 raises OverflowError"):
            kernel(t, 2**31)
    assert info(jit) == (1, 0, 0, 0)


def test_a_loaded_kernel_shows_what_was_done(tmp_path: Path) -> None:
    source = Path("examples/mlp.tdsl")
    root = Path(__file__).resolve().parents[3]
    text = (root / source).read_text()
    fresh = jit_in(tmp_path, memory_budget=4096).compile(text, filename=str(source))
    jit = jit_in(tmp_path, memory_budget=4096)
    loaded = jit.compile(text, filename=str(source))
    assert info(jit) == (1, 0, 0, 0)
    for attr in (
        "name",
        "args",
        "results",
        "signature",
        "expression",
        "source",
        "llvm_ir",
        "pipeline",
        "target",
        "target_reason",
        "target_spec",
        "groups",
        "program",
        "filename",
        "options",
    ):
        assert getattr(loaded, attr) == getattr(fresh, attr), attr
    assert repr(loaded) == repr(fresh)
    assert list(loaded.ir) == list(fresh.ir)
    for stage in fresh.ir:
        assert loaded.ir[stage] == fresh.ir[stage], stage
    assert "xdsl" in sys.modules  # (this process compiled; the text needs no parse)
    assert loaded.explain() == fresh.explain()
    assert "examples/mlp.tdsl:" in loaded.explain()  # source locations survive
    assert loaded.to_dot() == fresh.to_dot()
    assert loaded.fusion_report.render(None) == fresh.fusion_report.render(None)
    assert [g.name for g in loaded.fusion_report.groups] == [g.name for g in fresh.groups]


def test_one_shot_calls_and_programs_use_the_disk_too(tmp_path: Path) -> None:
    a = np.linspace(-1, 1, 12).reshape(3, 4)
    first = jit_in(tmp_path)
    first("relu(A) * s", A=a, s=2.0)
    second = jit_in(tmp_path)
    np.testing.assert_array_equal(second("relu(A) * s", A=a, s=2.0), np.maximum(a, 0) * 2)
    assert info(second) == (1, 0, 0, 0)
    program = "def k(x: f32[4]):\n    return x * 2.0\n\ndef m(x: f32[4]):\n    return relu(x)\n"
    jit_in(tmp_path).compile(program, kernel="k")
    loaded = jit_in(tmp_path)
    kernel = loaded.compile(program, kernel="k")
    assert info(loaded) == (1, 0, 0, 0) and kernel.name == "k"
    assert loaded.compile(program).name == "m"  # another kernel of the program: a miss
    assert info(loaded) == (1, 1, 0, 1)


@pytest.mark.parametrize(
    "change",
    [
        {"source": "softmax(A @ B) + sin(A @ B) * s "},
        {"shapes": {"A": (128, 32), "B": (32, 128)}},
        {"dtypes": {"A": "f64", "B": "f64", "s": float}},
        # a strong scalar, not a weak one
        {"shapes": {**SHAPES, "s": ()}, "dtypes": {"A": "f32", "B": "f32", "s": "f32"}},
        {"filename": "model.tdsl"},
        {"memory_budget": 4096},
        {"tile_size": 16},
        {"tile_sizes": (16, 128, 64)},
        {"threads": 2},
        {"target": "other"},
    ],
    ids=lambda change: "-".join(change),
)
def test_every_part_of_the_key_counts(
    tmp_path: Path, jit_target: str, change: dict[str, Any]
) -> None:
    compile_in(tmp_path)
    if "target" in change:  # the other target
        change = {"target": "numpy" if jit_target == "native" else "native"}
    request = {"source": EXPR, "shapes": SHAPES, "dtypes": DTYPES, "filename": "<expr>"}
    options = {k: v for k, v in change.items() if k not in request}
    request |= {k: v for k, v in change.items() if k in request}
    jit = jit_in(tmp_path, **options)
    jit.compile(
        request["source"], request["shapes"], request["dtypes"], filename=request["filename"]
    )
    assert info(jit) == (0, 1, 0, 1)
    assert len(entries(tmp_path)) == 2
    same = jit_in(tmp_path)
    same.compile(EXPR, SHAPES, DTYPES)
    assert info(same) == (1, 0, 0, 0)


@pytest.mark.parametrize("part", ["tdsl_source", "xdsl", "numpy", "llvmlite", "python"])
def test_other_software_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part: str) -> None:
    compile_in(tmp_path)
    changed = {**disk_cache.software_key(), part: "something else"}
    monkeypatch.setattr(disk_cache, "software_key", lambda: changed)
    jit, _ = compile_in(tmp_path)
    assert info(jit) == (0, 1, 0, 1)


def test_the_cpu_is_in_the_key_of_native_code_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jit_target: str
) -> None:
    compile_in(tmp_path)
    host = disk_cache.host_key()
    if host is None:
        pytest.skip("no native code here")
    other = {**host, "cpu": "another-cpu", "features": [*host["features"], "avx-9000"]}
    monkeypatch.setattr(disk_cache, "host_key", lambda: other)
    jit, kernel = compile_in(tmp_path)
    if jit_target == "native":
        assert info(jit) == (0, 1, 0, 1) and kernel.host_specific
    else:  # the numpy target's code is the same on every CPU
        assert info(jit) == (1, 0, 0, 0) and not kernel.host_specific


# --------------------------------------------------------------------------- bad files


def damage_flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def damage_truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 7])


def damage_empty(path: Path) -> None:
    path.write_bytes(b"")


def damage_other_key(path: Path) -> None:
    # a whole, well-formed file whose key is another one (as after a hash collision)
    magic, digest_size = disk_cache.MAGIC, 32
    data = path.read_bytes()
    body = data[len(magic) + digest_size :]
    (length,) = disk_cache._LENGTH.unpack_from(body)
    header = json.loads(body[8 : 8 + length])
    header["key"]["source"] = "something else"
    text = json.dumps(header).encode()
    body = disk_cache._LENGTH.pack(len(text)) + text + body[8 + length :]
    import hashlib

    path.write_bytes(magic + hashlib.sha256(body).digest() + body)


@pytest.mark.parametrize(
    "damage",
    [damage_flip, damage_truncate, damage_empty, damage_other_key],
    ids=lambda f: f.__name__,
)
def test_a_bad_file_is_compiled_again_and_overwritten(
    tmp_path: Path, damage: Any, jit_target: str
) -> None:
    compile_in(tmp_path)
    (path,) = entries(tmp_path)
    damage(path)
    jit, kernel = compile_in(tmp_path)
    assert info(jit) == (0, 1, 1, 1)
    a, b = inputs()
    np.testing.assert_allclose(kernel(a, b, 0.5), reference(a, b, 0.5), rtol=1e-4, atol=1e-5)
    assert entries(tmp_path) == [path]
    jit, _ = compile_in(tmp_path)
    assert info(jit) == (1, 0, 0, 0)


def _fifo_in_place(path: Path, tmp_path: Path) -> Path:
    path.unlink()
    os.mkfifo(path)
    return path


def _link_to_fifo(path: Path, tmp_path: Path) -> Path:
    fifo = tmp_path / "elsewhere.fifo"
    os.mkfifo(fifo)
    path.unlink()
    path.symlink_to(fifo)
    return fifo


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("replace", [_fifo_in_place, _link_to_fifo], ids=["fifo", "symlink"])
def test_a_named_pipe_in_place_of_a_kernel_file_is_a_miss(
    tmp_path: Path, replace: Any, jit_target: str
) -> None:
    """Opening a named pipe for reading blocks until a writer comes (forever): the
    cache opens kernel files without blocking and reads only regular files."""
    import threading

    compile_in(tmp_path)
    (path,) = entries(tmp_path)
    fifo = replace(path, tmp_path)
    done: list[tuple[JITTensorKernel, CompiledKernel]] = []
    worker = threading.Thread(target=lambda: done.append(compile_in(tmp_path)), daemon=True)
    worker.start()
    worker.join(timeout=60)
    if worker.is_alive():  # unblock the reader (a writer that closes at once), then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=10)
        pytest.fail("the compile blocked on the named pipe")
    ((jit, kernel),) = done
    assert info(jit) == (0, 1, 1, 1)
    a, b = inputs()
    np.testing.assert_allclose(kernel(a, b, 0.5), reference(a, b, 0.5), rtol=1e-4, atol=1e-5)
    # the store replaced the pipe (or the link) with a regular file: the next one hits
    assert path.is_file() and not path.is_symlink()
    jit, _ = compile_in(tmp_path)
    assert info(jit) == (1, 0, 0, 0)


@ONE_DEFAULT_TARGET
def test_every_byte_is_checked(tmp_path: Path) -> None:
    compile_in(tmp_path, target="numpy")
    (path,) = entries(tmp_path)
    good = path.read_bytes()
    for at in range(0, len(good), max(1, len(good) // 40)):
        bad = bytearray(good)
        bad[at] ^= 0x80
        path.write_bytes(bytes(bad))
        jit, _ = compile_in(tmp_path, target="numpy")
        assert info(jit)[2] == 1, at
        path.write_bytes(good)


def test_native_code_with_a_symbol_this_process_lacks_is_refused() -> None:
    from tdsl.runtime.compile import (
        NativeCompileError,
        _llvm,
        _target_machine,
        load_object,
        native_unavailable_reason,
        undefined_symbols,
    )

    if native_unavailable_reason() is not None:
        pytest.skip("no native code here")
    llvm, tm = _llvm(), _target_machine()
    module = llvm.parse_assembly(
        "declare float @sinf(float)\ndeclare void @tdsl_no_such_function()\n"
        "define float @f(float %x) {\n  call void @tdsl_no_such_function()\n"
        "  %y = call float @sinf(float %x)\n  ret float %y\n}\n"
    )
    module.triple = tm.triple
    code = tm.emit_object(module)
    if not code.startswith(b"\x7fELF"):
        pytest.skip("symbols are checked in ELF objects only")
    assert sorted(undefined_symbols(code)) == ["sinf", "tdsl_no_such_function"]
    with pytest.raises(NativeCompileError, match="'tdsl_no_such_function'"):
        load_object(code, {"f": ("float", ("float",))})


# --------------------------------------------------------------------------- the folder


def test_the_environment_variable_turns_it_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TDSL_CACHE_DIR", str(tmp_path / "from-env"))
    jit = JITTensorKernel()
    assert jit.cache_dir == tmp_path / "from-env"
    assert f"cache_dir='{tmp_path / 'from-env'}'" in repr(jit)
    assert jit.disk_cache_info() == DiskCacheInfo(str(tmp_path / "from-env"), 0, 0, 0, 0, 0)
    assert JITTensorKernel(cache_dir=False).disk_cache_info() is None
    assert JITTensorKernel(cache_dir=tmp_path / "given").cache_dir == tmp_path / "given"
    monkeypatch.setenv("TDSL_CACHE_DIR", "")
    assert JITTensorKernel().cache_dir is None
    monkeypatch.delenv("TDSL_CACHE_DIR")
    assert JITTensorKernel().cache_dir is None


def test_a_folder_that_cannot_be_written_is_an_option_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(tdsl.TdslOptionError, match=r"cannot use cache_dir '.*a-file/cache'"):
        JITTensorKernel(cache_dir=blocker / "cache")
    with pytest.raises(tdsl.TdslOptionError, match=r"a-file' .*: it is a file, not a folder"):
        JITTensorKernel(cache_dir=blocker)  # (the system says only "File exists")
    with pytest.raises(tdsl.TdslOptionError, match="cache_dir must be a folder path"):
        JITTensorKernel(cache_dir=True)
    # (a bare ValueError, "embedded null byte"; found by fuzzing the API)
    with pytest.raises(tdsl.TdslOptionError, match="a folder path, got one with a NUL byte"):
        JITTensorKernel(cache_dir=str(tmp_path / "a\0b"))


def test_a_failed_write_warns_and_the_kernel_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jit = jit_in(tmp_path)

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.warns(tdsl.TdslCacheWarning, match="No space left on device") as seen:
        kernel = jit.compile(EXPR, SHAPES, DTYPES)
    a, b = inputs()
    np.testing.assert_allclose(kernel(a, b, 0.5), reference(a, b, 0.5), rtol=1e-4, atol=1e-5)
    assert entries(tmp_path) == [] and list(tmp_path.iterdir()) == []
    assert info(jit) == (0, 1, 0, 0)
    # at the user's call (a one-shot call's named tdsl/jit/api.py; found by fuzzing)
    with pytest.warns(tdsl.TdslCacheWarning, match="No space left on device") as one_shot:
        jit("A + 1", A=np.ones(3))
    assert [w.filename for w in [*seen, *one_shot]] == [__file__, __file__]


def test_cache_clear_with_disk_deletes_the_entries(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("not an entry")
    jit, _ = compile_in(tmp_path)
    assert len(entries(tmp_path)) == 1
    jit.cache_clear()
    assert len(entries(tmp_path)) == 1
    jit.cache_clear(disk=True)
    assert entries(tmp_path) == [] and (tmp_path / "keep.txt").exists()
    (tmp_path / "keep.txt").unlink()
    tmp_path.rmdir()  # removed since, by hand or a cleaner: nothing to delete
    jit.cache_clear(disk=True)
    assert not tmp_path.exists()
    # a file in its place: a warning, as a failed write (it raised NotADirectoryError)
    tmp_path.write_text("not a folder")
    with pytest.warns(tdsl.TdslCacheWarning, match="could not clear the cache") as seen:
        jit.cache_clear(disk=True)
    assert [w.filename for w in seen] == [__file__]


def test_a_relative_folder_stays_the_one_it_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cache_dir="rel"`` (or ``$TDSL_CACHE_DIR``) names a folder of the working
    directory when the JIT is made; after ``os.chdir`` kernels went to another."""
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    given = JITTensorKernel(cache_dir="rel")
    monkeypatch.setenv("TDSL_CACHE_DIR", "env")
    from_env = JITTensorKernel()
    assert given.cache_dir == tmp_path / "rel" and from_env.cache_dir == tmp_path / "env"
    monkeypatch.chdir(tmp_path / "sub")
    for jit in (given, from_env):
        jit.compile(EXPR, SHAPES, DTYPES)
    assert len(entries(tmp_path / "rel")) == 1 and len(entries(tmp_path / "env")) == 1
    assert list((tmp_path / "sub").iterdir()) == []


@pytest.mark.parametrize(("spelled", "python"), [("weak", float), ("weak_int", int)])
def test_a_dtype_string_never_shares_a_python_types_key(
    tmp_path: Path, spelled: str, python: type
) -> None:
    """The string ``"weak"`` had the key of ``float`` (a weak input): once a weak-float
    kernel was stored, ``dtypes={"s": "weak"}``, which a compile refuses, loaded it."""
    jit_in(tmp_path).compile("A * s", {"A": (4,)}, {"s": python})
    with pytest.raises(tdsl.TdslError):
        jit_in(tmp_path).compile("A * s", {"A": (4,)}, {"s": spelled})


def test_software_versions_are_read_without_importing(tmp_path: Path) -> None:
    import llvmlite
    import xdsl

    key = disk_cache.software_key()
    assert (key["xdsl"], key["llvmlite"], key["numpy"]) == (
        str(xdsl.__version__),
        llvmlite.__version__,
        np.__version__,
    )
    assert key["tdsl"] == tdsl.__version__ and key["python"] == sys.version
    # an edited source file (another size or time) changes tdsl's fingerprint
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "m.py").write_text("x = 1\n")
    before = disk_cache._source_fingerprint(str(package))
    (package / "sub" / "m.py").write_text("x = 22\n")
    assert disk_cache._source_fingerprint(str(package)) != before


# --------------------------------------------------------------------------- its size

EXPRS = ["A + B", "A * B", "A - B", "A / B"]
SQUARE = {"A": (16, 16), "B": (16, 16)}


def test_least_recently_used_files_go_past_the_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the size, the files least recently written or hit are deleted until the
    rest fill three quarters of it; the file just written stays."""
    folder = tmp_path / "kernels"
    files: list[Path] = []
    for expr in EXPRS[:3]:
        jit_in(folder, target="numpy").compile(expr, SQUARE, "f32")
        (new,) = set(entries(folder)) - set(files)
        files.append(new)
    first, second, third = files
    for age, path in enumerate(files):  # oldest first, a second apart
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
    # a hit in a new JIT marks the oldest file as used
    hit = jit_in(folder, target="numpy")
    hit.compile(EXPRS[0], SQUARE, "f32")
    assert info(hit) == (1, 0, 0, 0)
    assert first.stat().st_mtime > third.stat().st_mtime
    # room for the three files: the fourth write deletes down to 3/4 of it
    monkeypatch.setenv("TDSL_CACHE_MAX_BYTES", str(sum(p.stat().st_size for p in files)))
    small = jit_in(folder, target="numpy")
    small.compile(EXPRS[3], SQUARE, "f32")
    left = set(entries(folder))
    assert second not in left and third not in left, "the least recently used went"
    assert first in left and len(left) == 2
    found = small.disk_cache_info()
    assert found is not None and found.writes == 1 and found.evicted == 2
    # the evicted kernel is compiled again, and written
    again = jit_in(folder, target="numpy")
    again.compile(EXPRS[1], SQUARE, "f32")
    assert info(again) == (0, 1, 0, 1)


def test_no_limit_and_bad_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tdsl.jit.disk_cache import DEFAULT_MAX_BYTES, resolve_max_bytes

    assert resolve_max_bytes("") == DEFAULT_MAX_BYTES == 1 << 30
    assert resolve_max_bytes("0") == 0
    assert resolve_max_bytes("500M") == 500 << 20
    assert resolve_max_bytes("2 GiB") == 2 << 30
    assert resolve_max_bytes("1.5k") == 1536
    assert resolve_max_bytes("4096") == 4096
    monkeypatch.setenv("TDSL_CACHE_MAX_BYTES", "0")
    jit = jit_in(tmp_path, target="numpy")
    for expr in EXPRS[:3]:
        jit.compile(expr, SQUARE, "f32")
    assert len(entries(tmp_path)) == 3 and info(jit)[3] == 3
    for bad in ["lots", "-1", "1X", "nan", "G"]:
        monkeypatch.setenv("TDSL_CACHE_MAX_BYTES", bad)
        with pytest.raises(TdslOptionError, match="TDSL_CACHE_MAX_BYTES must be a size"):
            jit_in(tmp_path)
    # less than a byte is no "no limit" (0.5 rounded to 0; found by fuzzing the API)
    for tiny in ["0.5", "1e-9"]:
        with pytest.raises(TdslOptionError, match="is less than one byte"):
            resolve_max_bytes(tiny)


def test_a_loaded_native_kernel_reads_strided_inputs_in_variants(
    tmp_path: Path, jit_target: str, variants_at_any_size: None
) -> None:
    """A native kernel loaded from disk compiles its strided variants from the stored
    tiled IR (parsed when the first strided input comes), as a compiled one does; a
    numpy kernel reads views as NumPy does."""
    shapes = {"A": (96, 80), "B": (96, 80)}
    compile_in_folder = jit_in(tmp_path)
    compile_in_folder.compile("softmax(relu(A) + B)", shapes, "f32")
    loaded = jit_in(tmp_path).compile("softmax(relu(A) + B)", shapes, "f32")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((80, 96), np.float32).T  # a transposed view
    b = rng.standard_normal((96, 80), np.float32)
    z = np.maximum(a, 0) + b
    want = np.exp(z - z.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    np.testing.assert_allclose(loaded(A=a, B=b), want, rtol=2e-6, atol=1e-7)
    if jit_target == "native":
        variants = loaded.function.variants
        assert variants is not None and variants.compiled == [((1, 96), None)]


@pytest.mark.fallback
def test_a_stored_fallback_is_compiled_again_under_no_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel stored after auto fell back (its native compile failed) loads as it was,
    except under $TDSL_NO_FALLBACK: then it is compiled again, where the failure raises."""
    import tdsl.runtime.native as runtime
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))

    def broken(*args: Any, **kwargs: Any) -> None:
        raise tdsl.TdslIRError("a malformed loop nest")

    monkeypatch.setattr(runtime, "NativeProgram", broken)
    expr, shapes = "exp(A) + B", {"A": (128, 128), "B": (128,)}
    stored = jit_in(tmp_path, target="auto").compile(expr, shapes, "f32")
    assert stored.fallback == "the native compile failed: a malformed loop nest"
    jit = jit_in(tmp_path, target="auto")
    loaded = jit.compile(expr, shapes, "f32")
    assert loaded.fallback == stored.fallback and info(jit)[:3] == (1, 0, 0)
    monkeypatch.setenv("TDSL_NO_FALLBACK", "1")
    jit = jit_in(tmp_path, target="auto")
    with pytest.raises(tdsl.TdslNativeError, match="a malformed loop nest"):
        jit.compile(expr, shapes, "f32")
    assert info(jit)[:3] == (0, 1, 0)  # a miss, not a bad entry
