"""The JIT's persistent cache: compiled kernels in files, shared between processes.

``JITTensorKernel(cache_dir=...)``, or ``$TDSL_CACHE_DIR`` (:data:`CACHE_DIR_VARIABLE`),
turns it on.  One file per kernel, named by the SHA-256 of its key; the key
holds everything that changes the result:

- the request: source text, kernel name, filename, shapes, dtypes, and the
  options (memory budget, tile sizes, threads, and the target after
  ``$TDSL_TARGET`` is applied);
- the software: tdsl's version and a fingerprint of its source files (size
  and modification time of each, so that an edited checkout misses), and the
  versions of xDSL, NumPy, llvmlite and Python, and the machine type;
- for a kernel whose code (or choice of target) depends on the CPU (native
  code): the CPU's triple, name and features, as LLVM sees them.

A lookup therefore tries up to two files: unless the target is ``native``, the
kernel whose code does not depend on the CPU (numpy code), then, unless the
target is ``numpy``, the kernel for this CPU (which needs llvmlite
initialized to name the CPU).  The
versions are read without importing the packages (from their ``.dist-info``
folders), so a hit imports neither xDSL nor, for a numpy kernel, llvmlite.

A file is ``MAGIC``, the SHA-256 of the rest, then the length of a JSON
header, the header (the key itself, compared on load, and the kernel's data,
see :mod:`tdsl.jit.entry`) and the object code of a native kernel.  It is
written to a temporary file in the same folder and moved into place with
``os.replace``, so a reader sees a whole old file or a whole new one, and
concurrent writers of one kernel (which write equal contents) cannot mix their
bytes.  A file whose checksum, key or contents do not check out (truncated,
corrupted, from another format) is never used: the kernel is compiled again
and the file overwritten.

The folder is kept under a size (:data:`DEFAULT_MAX_BYTES`, or
``$TDSL_CACHE_MAX_BYTES``, :data:`MAX_BYTES_VARIABLE`; 0 for no limit): after
a write that takes the kernel files past it, the least recently used files
(a hit refreshes a file's modification time) are deleted until the rest fill
three quarters of it, never the file just written.  Files left by an older
tdsl or another machine's key are never hit, so they go first.
``cache_clear(disk=True)`` empties the folder of its entries.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import hashlib
import importlib.util
import json
import os
import platform
import stat
import struct
import sys
import threading
from typing import Any, NamedTuple, cast

import numpy as np

from tdsl.errors import TdslCacheWarning, TdslError, TdslOptionError, warn
from tdsl.jit.cache import Request
from tdsl.jit.compiled import CompiledKernel
from tdsl.jit.options import CACHE_DIR_VARIABLE, MAX_BYTES_VARIABLE, JitOptions, no_fallback

FORMAT = 1
"""The entry format; part of the key, so a new format never reads an old file."""

MAGIC = b"tdsl-kernel-cache\n"
SUFFIX = ".tdslk"
_DIGEST = 32
_LENGTH = struct.Struct("<Q")

DEFAULT_MAX_BYTES = 1 << 30
"""The size the kernel files of a folder are kept under unless
``$TDSL_CACHE_MAX_BYTES`` says otherwise: 1 GiB (a native kernel's file is
typically 10-100 KiB)."""

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class DiskCacheInfo(NamedTuple):
    """Statistics of a JIT's cache on disk (this process only)."""

    directory: str
    hits: int
    """Kernels loaded from a file."""
    misses: int
    """Lookups that found no usable file (each compiled the kernel)."""
    rejected: int
    """Files found but not used: corrupt, truncated, or not loadable here."""
    writes: int
    """Files written."""
    evicted: int
    """Files deleted to keep the folder under its size."""


def resolve_cache_dir(cache_dir: str | os.PathLike[str] | bool | None) -> str | None:
    """The folder ``cache_dir`` names: ``None`` reads ``$TDSL_CACHE_DIR`` (unset or
    empty: no cache on disk), ``False`` turns the cache off; ``True`` is an error."""
    if cache_dir is None:
        value = os.environ.get(CACHE_DIR_VARIABLE)
        # (absolute: a relative folder stays the one it named when the JIT was made)
        return os.path.abspath(os.path.expanduser(value)) if value else None
    if cache_dir is False:
        return None
    if cache_dir is True or not isinstance(cache_dir, str | os.PathLike):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TdslOptionError(
            f"cache_dir must be a folder path, None (${CACHE_DIR_VARIABLE}) or False (off), "
            f"got {cache_dir!r}"
        )
    path = os.path.expanduser(os.fspath(cache_dir))
    if "\0" in path:  # (the OS's calls would raise a bare ValueError)
        raise TdslOptionError(f"cache_dir must be a folder path, got one with a NUL byte: {path!r}")
    return os.path.abspath(path)


def resolve_max_bytes(value: str | None = None) -> int:
    """The size limit ``value`` (default: ``$TDSL_CACHE_MAX_BYTES``) gives: bytes, or
    a number with a unit ``K``, ``M``, ``G`` or ``T`` (powers of 1024; ``500M``);
    0 for no limit; unset or empty for :data:`DEFAULT_MAX_BYTES`."""
    if value is None:
        value = os.environ.get(MAX_BYTES_VARIABLE, "")
    text = value.strip().upper().removesuffix("B").removesuffix("I")
    if not text:
        return DEFAULT_MAX_BYTES
    unit = text[-1] if text[-1] in _UNITS else ""
    number = text[: len(text) - len(unit)].strip()
    try:
        amount = float(number)
    except ValueError:
        amount = -1.0
    if not number or amount < 0 or amount != amount or amount == float("inf"):
        raise TdslOptionError(
            f"${MAX_BYTES_VARIABLE} must be a size such as 1073741824, 500M or 2G "
            f"(0 for no limit), got {value!r}"
        )
    size = int(amount * _UNITS[unit])
    if amount and not size:  # (0.5 bytes is not "no limit")
        raise TdslOptionError(
            f"${MAX_BYTES_VARIABLE} is less than one byte ({value!r}): give a size such as "
            "500M, or 0 for no limit"
        )
    return size


class DiskCache:
    """The kernel files in one folder, and this process's statistics of them."""

    def __init__(self, directory: str, max_bytes: int | None = None) -> None:
        """Use ``directory``, creating it if needed, keeping its kernel files under
        ``max_bytes`` (None: :func:`resolve_max_bytes`; 0: no limit); a
        TdslOptionError if it cannot be created or written."""
        import tempfile

        self.directory = directory
        self.max_bytes = resolve_max_bytes() if max_bytes is None else max_bytes
        try:
            os.makedirs(directory, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=directory, prefix=".probe-")
            os.close(fd)
            os.unlink(probe)
        except OSError as err:
            why = "it is a file, not a folder" if os.path.isfile(directory) else None
            raise TdslOptionError(
                f"cannot use cache_dir '{directory}' for compiled kernels: "
                f"{why or err.strerror or err}",
                note=f"give a writable folder as cache_dir= (or ${CACHE_DIR_VARIABLE}), "
                "or cache_dir=False for no cache on disk",
            ) from None
        self.lock = threading.Lock()
        self.hits = self.misses = self.rejected = self.writes = self.evicted = 0

    def info(self) -> DiskCacheInfo:
        with self.lock:
            return DiskCacheInfo(
                self.directory, self.hits, self.misses, self.rejected, self.writes, self.evicted
            )

    def clear(self) -> None:
        """Delete every entry file and temporary file in the folder (a write in
        progress elsewhere then fails, with a warning)."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:  # removed since (by hand, a cleaner): nothing to delete
            return
        except OSError as err:  # (a file in its place, or unreadable: as a failed write)
            warn(
                TdslCacheWarning(f"could not clear the cache in '{self.directory}': {err}"),
                stacklevel=None,
            )
            return
        for name in names:
            if name.endswith(SUFFIX) or name.startswith(".tmp-"):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.directory, name))

    # ----------------------------------------------------------------------- lookup

    def load(self, request: dict[str, Any], options: JitOptions) -> CompiledKernel | None:
        """The stored kernel for ``request`` (from :func:`request_key`), or None."""
        keys: list[dict[str, Any]] = []
        if options.target != "native":
            keys.append(request)
        if options.target != "numpy":
            host = host_key()
            if host is not None:
                keys.append({**request, "host": host})
        for key in keys:
            kernel = self._read(key, options)
            if kernel is not None:
                with self.lock:
                    self.hits += 1
                return kernel
        with self.lock:
            self.misses += 1
        return None

    def _read(self, key: dict[str, Any], options: JitOptions) -> CompiledKernel | None:
        from tdsl.jit.entry import load_kernel

        path = self._path(key)
        try:
            blob = _read_regular(path)
        except FileNotFoundError:
            return None
        except OSError:
            self._reject()
            return None
        if blob is None:  # not a regular file (a named pipe, a symbolic link): a miss
            self._reject()  # (the store after the compile replaces it)
            return None
        try:
            header, code = _unpack(blob)
            if header.get("key") != key:
                raise ValueError("another key")
            kernel = load_kernel(header["kernel"], code, options)
        except (AttributeError, KeyError, TypeError, ValueError, TdslError):
            # TdslError: native code that cannot load here (a missing symbol)
            self._reject()
            return None
        if kernel.fallback is not None and no_fallback():
            # a kernel stored after a native failure: compiled again, where the failure
            # raises (see tdsl.jit.options.no_fallback)
            return None
        with contextlib.suppress(OSError):  # recently used (a read-only folder: not marked)
            os.utime(path)
        return kernel

    def _reject(self) -> None:
        with self.lock:
            self.rejected += 1

    # ----------------------------------------------------------------------- store

    def store(self, request: dict[str, Any], kernel: CompiledKernel) -> None:
        """Write ``kernel`` (compiled with ``keep_object=True``) for ``request``.

        A failure to write is a :class:`~tdsl.errors.TdslCacheWarning`, not an
        error: the kernel was compiled and runs.
        """
        import tempfile

        from tdsl.jit.entry import kernel_entry

        key = request
        if kernel.host_specific:
            host = host_key()
            if host is None:  # pragma: no cover - a native kernel means llvmlite works
                return
            key = {**request, "host": host}
        data, code = kernel_entry(kernel)
        header = json.dumps({"key": key, "kernel": data}, separators=(",", ":")).encode()
        body = _LENGTH.pack(len(header)) + header + code
        blob = MAGIC + hashlib.sha256(body).digest() + body
        path = self._path(key)
        temporary: str | None = None
        try:
            fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(temporary, path)
        except OSError as err:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            warn(  # (at the user's call, however deep in tdsl: compile(), the JIT, a trace)
                TdslCacheWarning(
                    f"could not write the compiled kernel to the cache in '{self.directory}': {err}"
                ),
                stacklevel=None,
            )
            return
        with self.lock:
            self.writes += 1
        self._evict(keep=path)

    def _evict(self, keep: str) -> None:
        """Past :attr:`max_bytes`, delete the least recently used kernel files (but
        ``keep``) until the rest fill three quarters of it.  A file another process
        deletes first, or cannot be deleted, is skipped."""
        if not self.max_bytes:
            return
        entries: list[tuple[float, int, str]] = []
        total = 0
        try:
            with os.scandir(self.directory) as found:
                for entry in found:
                    if entry.name.endswith(SUFFIX):
                        with contextlib.suppress(OSError):
                            stat = entry.stat()
                            entries.append((stat.st_mtime, stat.st_size, entry.path))
                            total += stat.st_size
        except OSError:
            return
        if total <= self.max_bytes:
            return
        goal = self.max_bytes * 3 // 4
        evicted = 0
        for _, size, path in sorted(entries):
            if total <= goal:
                break
            if path == keep:
                continue
            try:
                os.unlink(path)
            except OSError:
                continue
            total -= size
            evicted += 1
        with self.lock:
            self.evicted += evicted

    def _path(self, key: dict[str, Any]) -> str:
        text = json.dumps(key, sort_keys=True, separators=(",", ":"))
        return os.path.join(self.directory, hashlib.sha256(text.encode()).hexdigest() + SUFFIX)


def _unpack(blob: bytes) -> tuple[dict[str, Any], bytes]:
    """The header and object code of a file's bytes; ValueError unless it checks out."""
    start = len(MAGIC) + _DIGEST
    if len(blob) < start + _LENGTH.size or not blob.startswith(MAGIC):
        raise ValueError("not a kernel file")
    body = blob[start:]
    if hashlib.sha256(body).digest() != blob[len(MAGIC) : start]:
        raise ValueError("checksum mismatch")
    (length,) = _LENGTH.unpack_from(body)
    end = _LENGTH.size + length
    header = json.loads(body[_LENGTH.size : end])
    if not isinstance(header, dict):
        raise ValueError("no header")
    return cast(dict[str, Any], header), body[end:]


# --------------------------------------------------------------------------- keys


def request_key(request: Request) -> dict[str, Any]:
    """The key of a kernel request on any CPU (:func:`host_key` adds the CPU's part)."""
    key = {
        "format": FORMAT,
        "source": request.source,
        "kernel": request.kernel,
        "filename": request.filename,
        "shapes": request.shapes,
        "dtypes": _dtypes_key(request.dtypes),
        "options": dataclasses.asdict(request.options),  # every option, whatever comes later
        "software": software_key(),
    }
    # as JSON gives it back (tuples become lists), to compare with a file's key
    return json.loads(json.dumps(key, sort_keys=True))


def _dtype_key(dtype: object) -> str:
    # (each kind tagged: no string a user gives, such as "weak", is a Python type's key)
    if dtype is float:
        return "type:float"  # a weak scalar input
    if dtype is int:
        return "type:int"  # a weak integer input
    if isinstance(dtype, str):
        return f"str:{dtype}"
    return f"other:{dtype!r}"  # the frontend reports it; nothing is stored


def _dtypes_key(dtypes: object) -> object:
    if isinstance(dtypes, dict):
        items = cast(dict[str, object], dtypes)
        return {k: _dtype_key(v) for k, v in sorted(items.items())}
    return _dtype_key(dtypes)


@functools.cache
def software_key() -> dict[str, Any]:
    """tdsl's version and source fingerprint, the dependencies' versions, Python's."""
    from tdsl.version import __version__

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tdsl/
    return {
        "tdsl": __version__,
        "tdsl_source": _source_fingerprint(package),
        "xdsl": _installed_version("xdsl"),
        "numpy": np.__version__,
        "llvmlite": _installed_version("llvmlite"),
        "python": sys.version,
        "implementation": sys.implementation.cache_tag,
        "machine": platform.machine(),
    }


_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_BINARY", 0)
)
"""Opening a kernel file: never blocks (a named pipe with no writer would, in a plain
``open``, forever) and never follows a symbolic link."""


def _read_regular(path: str) -> bytes | None:
    """The bytes of the regular file ``path``; None when it is something else (a named
    pipe, a device, a symbolic link: ``O_NOFOLLOW`` refuses the link itself, with
    ``ELOOP``, which is an :class:`OSError` like the others a read may raise)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb") as f:
            fd = -1  # the file object closes it
            return f.read()
    finally:
        if fd >= 0:
            os.close(fd)


def _source_fingerprint(package: str) -> str:
    """A digest of the path, size and modification time of each ``.py`` file under
    ``package``: an edited source tree makes other keys."""
    digest = hashlib.sha256()
    for folder, subfolders, files in os.walk(package):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                st = os.stat(path)
                relative = os.path.relpath(path, package)
                digest.update(f"{relative}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _installed_version(package: str) -> str | None:
    """The version of an installed package, from its ``.dist-info`` folder next to it
    (without importing it, or :mod:`importlib.metadata`, which costs 40 ms); when
    that folder is elsewhere (an editable install), the package's location and
    the modification time of its ``__init__.py``.  None if it is not installed."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    folder = os.path.dirname(spec.origin)
    prefix, suffix = f"{package}-", ".dist-info"
    found = [
        name
        for name in os.listdir(os.path.dirname(folder))
        if name.startswith(prefix) and name.endswith(suffix)
    ]
    if len(found) == 1:
        return found[0].removeprefix(prefix).removesuffix(suffix)
    return f"{folder}@{os.stat(spec.origin).st_mtime_ns}"


@functools.cache
def host_key() -> dict[str, Any] | None:
    """The CPU native code is compiled for (triple, name, features), or None when
    native code cannot run here.  Initializes llvmlite."""
    from tdsl.runtime.compile import host_info, native_unavailable_reason

    if native_unavailable_reason() is not None:
        return None
    info = host_info()
    return {"triple": info.triple, "cpu": info.cpu, "features": sorted(info.features)}


__all__ = [
    "CACHE_DIR_VARIABLE",
    "DEFAULT_MAX_BYTES",
    "MAX_BYTES_VARIABLE",
    "DiskCache",
    "DiskCacheInfo",
    "host_key",
    "request_key",
    "resolve_cache_dir",
    "resolve_max_bytes",
    "software_key",
]
