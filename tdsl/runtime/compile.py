"""Compile ``llvm``-dialect IR (or LLVM IR text) for the host CPU and call it.

::

    from tdsl.runtime.compile import compile_llvm, native_unavailable_reason

    if native_unavailable_reason() is None:
        compiled = compile_llvm(module)          # an llvm-dialect ModuleOp, or IR text
        kernel = compiled.function("ew")         # a ctypes function pointer
        kernel(a.ctypes.data, b.ctypes.data, ...)

:func:`compile_llvm` converts a module with xDSL's ``convert_module`` (and gives its
``sin``/``cos`` library calls vector variants: :mod:`tdsl.runtime.vector_math`), parses
it with llvmlite, optimizes it at O3 with loop and SLP vectorization (LLVM's
new pass manager) for the host CPU and its features, without LLVM's loop unroller
(see :func:`compile_llvm`), and loads it into an
MCJIT engine.  The returned :class:`CompiledModule` owns the engine: the
machine code lives as long as the object, and ``function`` hands out ctypes
function pointers with the argument types of the ABI of
:mod:`tdsl.backend.llvm.convert_to_llvm` (``ptr`` -> ``c_void_p``, ``i64`` ->
``c_int64``, ``float``/``double`` -> ``c_float``/``c_double``).  ctypes releases
the GIL during a call, so threads may call compiled functions concurrently;
the generated code keeps no state of its own.

External functions resolve to the C math library (loaded once) and to the
``symbols`` given, a dict from name to address.  llvmlite's symbol table is
process-wide, so a name may be bound to one address only: binding it again to
another address raises :class:`NativeCompileError`.

For a cache on disk, ``compile_llvm(..., keep_object=True)`` generates an
object file (``CompiledModule.object_code``) and loads that into the engine,
so the code that runs is the code stored; :func:`load_object` loads such an
object file in another process (the same CPU and llvmlite), resolving its
external symbols the same way, without parsing or optimizing anything.

:func:`native_unavailable_reason` says why native code cannot run here (no
llvmlite, a CPU llvmlite cannot target), or None; :func:`host_info` gives the
CPU name, its features and whether f16 conversions are native (F16C on x86).
A module using f16 is refused on an x86 CPU without F16C, where LLVM would
call compiler-rt helpers that MCJIT cannot resolve.

llvmlite is imported inside these functions only, so importing this module
never needs it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib
import os
import platform
import re
import struct
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tdsl.errors import TdslNativeError
from tdsl.runtime.vector_math import with_vector_variants

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

SUPPORTED_MACHINES = ("x86_64", "AMD64", "aarch64", "arm64")
"""``platform.machine()`` values llvmlite publishes wheels for and tdsl was built for."""


CTYPES_MAX_ARGS = 1024
"""The most arguments a ctypes function pointer takes (its ``_argtypes_`` limit)."""


class NativeCompileError(TdslNativeError):
    """The module cannot be compiled or loaded as native code here."""


@dataclass(frozen=True)
class HostInfo:
    """What LLVM sees of the machine it compiles for."""

    triple: str
    cpu: str
    features: frozenset[str]
    """Enabled CPU features, e.g. ``avx2``, ``fma``, ``f16c``."""

    @property
    def native_f16(self) -> bool:
        """Whether f16 <-> f32 conversions are instructions (F16C on x86; always on
        AArch64), so f16 code never needs compiler-rt."""
        if self.triple.startswith(("x86_64", "i386", "i686")):
            return "f16c" in self.features
        return True


_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}
_BOUND_SYMBOLS: dict[str, int] = {}


def _llvm() -> Any:
    """llvmlite.binding, initialized once (raises NativeCompileError without it)."""
    with _LOCK:
        if "binding" in _STATE:
            return _STATE["binding"]
        try:
            llvm: Any = importlib.import_module("llvmlite.binding")
        except ImportError as err:  # pragma: no cover - depends on the install
            raise NativeCompileError(f"llvmlite is not installed: {err}") from None
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        libm = ctypes.util.find_library("m")
        if libm is not None:
            llvm.load_library_permanently(libm)
        _STATE["binding"] = llvm
        return llvm


def host_info() -> HostInfo:
    """The host's target triple, CPU name and features (cached)."""
    llvm = _llvm()
    with _LOCK:
        if "host" not in _STATE:
            features = llvm.get_host_cpu_features()
            enabled = frozenset(name for name, on in features.items() if on)
            _STATE["host"] = HostInfo(llvm.get_process_triple(), llvm.get_host_cpu_name(), enabled)
        return _STATE["host"]


def native_unavailable_reason() -> str | None:
    """Why native code cannot run in this process, or None when it can (found once: a
    target machine for the host is made to find it)."""
    with _LOCK:
        if "unavailable" in _STATE:
            return _STATE["unavailable"]
    reason = _unavailable_reason()
    with _LOCK:
        _STATE["unavailable"] = reason
    return reason


def _unavailable_reason() -> str | None:
    machine = platform.machine()
    if machine not in SUPPORTED_MACHINES:
        return f"unsupported machine '{machine}' (native code is built for x86_64 and aarch64)"
    try:
        _target_machine()
    except NativeCompileError as err:
        return str(err)
    except Exception as err:  # llvmlite failing to load or to find a target
        return f"llvmlite cannot target this host: {err}"
    return None


def machine_features(info: HostInfo) -> str:
    """The feature string of the target machine for ``info``'s CPU: its features, and
    on a CPU with AVX-512 the vectorizers' full 512-bit width (``-prefer-256-bit``).

    LLVM's tuning for Intel's AVX-512 cores from Skylake-X on prefers 256-bit vectors
    (the first of them lowered their clock on 512-bit code); NumPy's own loops use
    512-bit ones on every AVX-512 CPU.  On this project's Intel machine (2 cores, LLVM's
    ``rocketlake``), one thread, 512x3072 f32 (two runs each): ``exp`` took 0.48 ms at
    512 bits against 0.80 ms at 256, ``tanh`` 0.82-0.83 against 1.07-1.10, ``log``
    0.69 against 0.90, softmax 0.95-1.01 against 1.12-1.21, ``sum(exp(A) * B, axis=1)``
    0.48-0.51 against 0.63-0.68; ``A * 0.5 + B`` and layernorm, bound by memory, 0.64
    and 0.52 ms either way.  Only a non-integer power was slower: ``A ** 1.7`` took
    3.86-4.12 ms against 3.68-3.85 (three interleaved runs).  AMD's Zen 4 takes 512-bit
    vectors by default."""
    features = ",".join(f"+{f}" for f in sorted(info.features))
    if "avx512f" in info.features:
        features += ",-prefer-256-bit"
    return features


def _target_machine() -> Any:
    """A new target machine for the host CPU and its features
    (:func:`machine_features`).

    Not shared: an MCJIT engine takes ownership of its target machine and frees
    it with itself."""
    llvm = _llvm()
    info = host_info()
    target = llvm.Target.from_triple(info.triple)
    return target.create_target_machine(cpu=info.cpu, features=machine_features(info), opt=3)


def bind_symbols(symbols: Mapping[str, int]) -> None:
    """Make each ``name`` resolve to ``address`` in compiled code (process-wide)."""
    llvm = _llvm()
    with _LOCK:
        for name, address in symbols.items():
            bound = _BOUND_SYMBOLS.get(name)
            if bound is not None and bound != address:
                raise NativeCompileError(
                    f"symbol '{name}' is already bound to another address "
                    f"({bound:#x}, not {address:#x})"
                )
            if bound is None:
                llvm.add_symbol(name, address)
                _BOUND_SYMBOLS[name] = address


_CTYPES: dict[str, Any] = {
    "ptr": ctypes.c_void_p,
    "i64": ctypes.c_int64,
    "i32": ctypes.c_int32,
    "i8": ctypes.c_int8,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "void": None,
}


def _ctype(type_name: str) -> Any:
    try:
        return _CTYPES[type_name]
    except KeyError:
        raise NativeCompileError(f"no ctypes equivalent for LLVM type '{type_name}'") from None


Signature = tuple[str, tuple[str, ...]]
"""A function's LLVM return type and parameter types, spelled as in LLVM IR
(``("void", ("i64", "i64", "ptr"))``)."""


def _signatures(module: Any) -> dict[str, Signature]:
    """The signature of each function ``module`` defines."""
    found: dict[str, Signature] = {}
    for fn in module.functions:
        if not fn.is_declaration:
            t = fn.global_value_type
            params = tuple(str(p) for p in t.get_function_parameters())
            found[fn.name] = (str(t.get_function_return()), params)
    return found


class CompiledModule:
    """Machine code for one module, owned by an MCJIT engine that lives as long as
    this object.

    ``signatures`` gives each defined function's LLVM types; ``object_code`` is
    the object file the engine loaded (None unless compiled with
    ``keep_object=True`` or loaded by :func:`load_object`).  A module loaded
    from an object file has no LLVM IR: ``optimized_ir`` and ``assembly()``
    raise :class:`NativeCompileError` there.
    """

    def __init__(
        self,
        engine: Any,
        signatures: Mapping[str, Signature],
        module: Any = None,
        target_machine: Any = None,
        object_code: bytes | None = None,
    ) -> None:
        self._engine = engine
        self.signatures: dict[str, Signature] = dict(signatures)
        self._module = module
        self._target_machine = target_machine
        self.object_code = object_code
        self._functions: dict[str, Callable[..., Any]] = {}
        self._lock = threading.Lock()

    def function(self, name: str) -> Callable[..., Any]:
        """The compiled function ``name`` as a ctypes function pointer (argument and
        result types from its LLVM signature)."""
        with self._lock:
            found = self._functions.get(name)
            if found is not None:
                return found
            signature = self.signatures.get(name)
            if signature is None:
                raise NativeCompileError(f"no function '{name}' defined in the module")
            restype = _ctype(signature[0])
            argtypes = [_ctype(t) for t in signature[1]]
            if len(argtypes) > CTYPES_MAX_ARGS:
                raise NativeCompileError(
                    f"function '{name}' takes {len(argtypes)} arguments (its buffers), more "
                    f"than ctypes can pass ({CTYPES_MAX_ARGS})"
                )
            address = self._engine.get_function_address(name)
            if not address:
                raise NativeCompileError(f"no function '{name}' in the machine code")
            found = ctypes.CFUNCTYPE(restype, *argtypes)(address)
            self._functions[name] = found
            return found

    @property
    def optimized_ir(self) -> str:
        """The LLVM IR after optimization."""
        return str(self._ir_module())

    def assembly(self) -> str:
        """The host assembly of the optimized module."""
        return self._target_machine.emit_assembly(self._ir_module())

    def _ir_module(self) -> Any:
        if self._module is None:
            raise NativeCompileError("a module loaded from object code has no LLVM IR")
        return self._module


def llvm_ir(module: ModuleOp, *, vector_math: bool = True) -> str:
    """LLVM IR text of an ``llvm``-dialect module (xDSL's ``convert_module``, with the
    functions' ``passthrough`` attributes: :func:`tdsl.backend.llvm.target.llvm_ir_module`),
    for the host triple; with ``vector_math``, its C library ``sin``/``cos`` calls given
    masked vector variants (:func:`tdsl.runtime.vector_math.with_vector_variants`)."""
    from tdsl.backend.llvm.target import llvm_ir_module

    try:
        text = str(llvm_ir_module(module, None))
    except Exception as err:  # xDSL's converter or llvmlite's IR builder refusing the IR
        raise NativeCompileError(
            f"xDSL's LLVM IR conversion failed: {type(err).__name__}: {err}"
        ) from err
    return with_vector_variants(text) if vector_math else text


def compile_llvm(
    module: ModuleOp | str,
    *,
    symbols: Mapping[str, int] | None = None,
    speed_level: int = 3,
    vectorize: bool = True,
    unroll: bool = False,
    keep_object: bool = False,
    guarded: bool = False,
) -> CompiledModule:
    """Compile an ``llvm``-dialect module or LLVM IR text for the host CPU.

    ``guarded`` first optimizes the module in a child process: llvmlite's LLVM is built
    with assertions, and its loop vectorizer asserts on some copies read through
    negative strides (a 31x4 float16 ``x[::-1] * 1``: "VPlan cost model and legacy cost
    model disagreed"), which aborts the process.  Where the child dies, the module
    compiles without loop vectorization, probed the same way; where that dies too, a
    :class:`NativeCompileError`.

    ``unroll`` runs LLVM's loop unroller.  It is off by default: on the small,
    constant trip counts of small arrays it unrolled whole loop nests (a 64x64 ``max``
    reduction, which does not vectorize, became 6,600 lines of IR: 0.47 s of the
    0.49 s compile), and on large arrays it bought nothing measurable (the vectorizer
    interleaves its own loops: ``python benchmarks/compile_time.py unroll``).

    ``symbols`` binds external functions to addresses (see :func:`bind_symbols`);
    C math functions resolve without it.  ``keep_object`` generates an object
    file and runs that (kept as ``object_code``, for :func:`load_object`).

    The same IR text with the same options compiles once per process: the
    :data:`COMPILED_CACHE_SIZE` most recently used modules are kept and handed out
    again (machine code is read-only, and symbols are bound process-wide, so the text
    fixes what it calls).  Kernels that lower to the same IR, such as one expression
    under two memory budgets that plan alike, share their code.

    Raises :class:`NativeCompileError` when llvmlite is missing, the IR does
    not parse or verify, or the module uses f16 on an x86 CPU without F16C.
    """
    llvm = _llvm()
    text = module if isinstance(module, str) else llvm_ir(module)
    if symbols:
        bind_symbols(symbols)
    key = (text, speed_level, vectorize, unroll, keep_object)
    with _LOCK:
        found = _COMPILED.get(key)
        if found is not None:
            _COMPILED.move_to_end(key)
            return found
    if guarded and vectorize and not _survives(llvm, text, speed_level, True, unroll):
        vectorize = False  # (LLVM's loop vectorizer aborted: without it)
        if not _survives(llvm, text, speed_level, False, unroll):
            raise NativeCompileError("LLVM aborted while optimizing the module")
    compiled = _compile(llvm, text, speed_level, vectorize, unroll, keep_object)
    with _LOCK:
        _COMPILED[key] = compiled
        while len(_COMPILED) > COMPILED_CACHE_SIZE:
            _COMPILED.popitem(last=False)
    return compiled


COMPILED_CACHE_SIZE = 256
"""How many compiled modules :func:`compile_llvm` keeps, the most recently used."""

_COMPILED: OrderedDict[tuple[str, int, bool, bool, bool], CompiledModule] = OrderedDict()


def _survives(llvm: Any, text: str, speed_level: int, vectorize: bool, unroll: bool) -> bool:
    """Whether optimizing ``text`` and emitting its object code in a child process ends
    without the child dying (an LLVM assertion aborts it; its message is dropped); True
    where the child fails otherwise (the compile here then says why) or does not end
    within :data:`PROBE_SECONDS`.  A fresh interpreter (about 60 ms), not a fork: a fork
    of a process with threads may deadlock (JAX warns of it)."""
    import subprocess  # (here: most compiles are not probed)

    del llvm  # (the child loads its own)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    code = (
        "import sys\n"
        "from tdsl.runtime.compile import optimize_object\n"
        f"optimize_object(sys.stdin.read(), {speed_level}, {vectorize}, {unroll})\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=text.encode(),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return True
    return done.returncode >= 0


def optimize_object(text: str, speed_level: int, vectorize: bool, unroll: bool) -> bytes:
    """The object code of LLVM IR ``text`` optimized as :func:`compile_llvm` does (what
    the child process of :func:`_survives` runs)."""
    from tdsl.backend.llvm.loop_hints import VECTORIZE

    llvm = _llvm()
    tm = _target_machine()
    parsed = llvm.parse_assembly(text)
    parsed.triple = tm.triple
    parsed.data_layout = str(tm.target_data)
    hinted = VECTORIZE in text
    return tm.emit_object(_optimize(llvm, tm, parsed, speed_level, vectorize, unroll, hinted))


def _optimize(
    llvm: Any,
    tm: Any,
    parsed: Any,
    speed_level: int,
    vectorize: bool,
    unroll: bool,
    hinted: bool,
) -> Any:
    """Run LLVM's pipeline at ``speed_level`` on module ``parsed``: the optimized
    module (``parsed`` itself, or, where it is ``hinted`` (a sum's loop carries the
    vectorize hint), the same code with its sums' last steps reordered:
    :func:`_sum_lanes_in_a_tree`)."""
    options = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    options.loop_vectorization = vectorize
    options.slp_vectorization = vectorize
    options.loop_unrolling = unroll
    builder = llvm.create_pass_builder(tm, options)
    builder.getModulePassManager().run(parsed, builder)
    if not hinted:  # (no loop the vectorizer may reorder a sum in: no lanes to add)
        return parsed
    text = str(parsed)
    if _ORDERED_LANE_SUM.search(text) is None:
        return parsed
    reordered = llvm.parse_assembly(_sum_lanes_in_a_tree(text))
    reordered.triple = parsed.triple
    reordered.data_layout = parsed.data_layout
    return reordered


_ORDERED_LANE_SUM = re.compile(
    r"call ((?:(?!reassoc\b)[a-z]+ )*)((?:half|float|double) @llvm\.vector\.reduce\.fadd)"
)


def _sum_lanes_in_a_tree(text: str) -> str:
    """Optimized LLVM IR ``text`` whose ordered ``llvm.vector.reduce.fadd`` calls are
    marked ``reassoc``.  The loop vectorizer makes such a call only in a loop whose
    sum may be reordered (:mod:`tdsl.backend.llvm.loop_hints`; without that hint it
    does not vectorize a float reduction whose adds lack the flag), to add up its
    partial sums' lanes after the loop: in order, one lane after another, 16 dependent
    adds per f32 row, where the flag lets the code generator add them in a tree
    (``log2`` of the lanes).  Rows of 64 elements summed in 1.8 times the time without it."""
    return _ORDERED_LANE_SUM.sub(r"call \1reassoc \2", text)


PROBE_SECONDS = 120.0
"""How long :func:`_survives` waits for its child: past it, the compile runs unprobed."""


def _compile(
    llvm: Any, text: str, speed_level: int, vectorize: bool, unroll: bool, keep_object: bool
) -> CompiledModule:
    """:func:`compile_llvm` without its cache."""
    from tdsl.backend.llvm.loop_hints import VECTORIZE

    info = host_info()
    if "half" in text and not info.native_f16:
        raise NativeCompileError(
            f"the module uses f16, which needs F16C on this CPU ({info.cpu}) to avoid "
            "compiler-rt calls MCJIT cannot resolve"
        )
    tm = _target_machine()
    try:
        parsed = llvm.parse_assembly(text)
        parsed.verify()
    except RuntimeError as err:
        raise NativeCompileError(f"invalid LLVM IR: {err}") from None
    parsed.triple = tm.triple
    parsed.data_layout = str(tm.target_data)
    parsed = _optimize(llvm, tm, parsed, speed_level, vectorize, unroll, VECTORIZE in text)
    if keep_object:
        code = tm.emit_object(parsed)
        engine = _load(llvm, code)
        return CompiledModule(engine, _signatures(parsed), parsed, tm, code)
    engine = llvm.create_mcjit_compiler(parsed, tm)
    engine.finalize_object()
    return CompiledModule(engine, _signatures(parsed), parsed, tm)


def _load(llvm: Any, code: bytes) -> Any:
    """An MCJIT engine running object file ``code`` (over an empty IR module)."""
    tm = _target_machine()
    empty = llvm.parse_assembly("")
    empty.triple = tm.triple
    engine = llvm.create_mcjit_compiler(empty, tm)
    try:
        engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        engine.finalize_object()
    except RuntimeError as err:  # pragma: no cover - llvmlite rejects the object
        raise NativeCompileError(f"cannot load object code: {err}") from None
    return engine


def load_object(
    code: bytes, signatures: Mapping[str, Signature], *, symbols: Mapping[str, int] | None = None
) -> CompiledModule:
    """Load object code made by ``compile_llvm(..., keep_object=True)`` on this CPU.

    ``signatures`` are the module's (its :attr:`CompiledModule.signatures`);
    ``symbols`` binds external functions as for :func:`compile_llvm`, before
    the object is linked.  Every symbol an ELF object leaves undefined must
    resolve in this process (the C library, the math library, ``symbols``),
    else :class:`NativeCompileError`: MCJIT would link a call to it to address
    0.  Nothing checks that the code was made for this CPU: a cache keys it so.
    """
    llvm = _llvm()
    if symbols:
        bind_symbols(symbols)
    missing = [n for n in undefined_symbols(code) if not llvm.address_of_symbol(n)]
    if missing:
        raise NativeCompileError(
            f"the object code calls {', '.join(repr(n) for n in missing)}, "
            "which this process does not define"
        )
    return CompiledModule(_load(llvm, code), signatures, object_code=code)


_ELF64_LE = b"\x7fELF\x02\x01"
_SHT_SYMTAB = 2


def undefined_symbols(code: bytes) -> list[str]:
    """The names a 64-bit little-endian ELF object file uses but does not define
    (its ``SHN_UNDEF`` symbols); empty for any other format, which is not checked."""
    if not code.startswith(_ELF64_LE) or len(code) < 64:
        return []
    (shoff,) = struct.unpack_from("<Q", code, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", code, 0x3A)
    names: list[str] = []
    for i in range(shnum):
        header = shoff + i * shentsize
        (kind,) = struct.unpack_from("<I", code, header + 4)
        if kind != _SHT_SYMTAB:
            continue
        offset, size, link, _, _, entsize = struct.unpack_from("<QQIIQQ", code, header + 0x18)
        (strtab,) = struct.unpack_from("<Q", code, shoff + link * shentsize + 0x18)
        for sym in range(offset + entsize, offset + size, entsize):  # entry 0 is null
            name_at, _, _, shndx = struct.unpack_from("<IBBH", code, sym)
            if shndx == 0 and name_at:
                end = code.index(b"\0", strtab + name_at)
                names.append(code[strtab + name_at : end].decode())
    return names
