"""Compile ``llvm``-dialect IR (or LLVM IR text) for the host CPU and call it.

::

    from tdsl.native.compile import compile_llvm, native_unavailable_reason

    if native_unavailable_reason() is None:
        compiled = compile_llvm(module)          # an llvm-dialect ModuleOp, or IR text
        kernel = compiled.function("ew")         # a ctypes function pointer
        kernel(a.ctypes.data, b.ctypes.data, ...)

:func:`compile_llvm` converts a module with xDSL's ``convert_module``, parses
it with llvmlite, optimizes it at O3 with loop and SLP vectorization (LLVM's
new pass manager) for the host CPU and its features, and loads it into an
MCJIT engine.  The returned :class:`CompiledModule` owns the engine: the
machine code lives as long as the object, and ``function`` hands out ctypes
function pointers with the argument types of the ABI of
:mod:`tdsl.lowering.convert_to_llvm` (``ptr`` -> ``c_void_p``, ``i64`` ->
``c_int64``, ``float``/``double`` -> ``c_float``/``c_double``).  ctypes releases
the GIL during a call, so threads may call compiled functions concurrently;
the generated code keeps no state of its own.

External functions resolve to the C math library (loaded once) and to the
``symbols`` given, a dict from name to address.  llvmlite's symbol table is
process-wide, so a name may be bound to one address only: binding it again to
another address raises :class:`NativeCompileError`.

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
import platform
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tdsl.errors import TdslNativeError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

SUPPORTED_MACHINES = ("x86_64", "AMD64", "aarch64", "arm64")
"""``platform.machine()`` values llvmlite publishes wheels for and tdsl was built for."""


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
    """Why native code cannot run in this process, or None when it can."""
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


def _target_machine() -> Any:
    """A new target machine for the host CPU and its features.

    Not shared: an MCJIT engine takes ownership of its target machine and frees
    it with itself."""
    llvm = _llvm()
    info = host_info()
    target = llvm.Target.from_triple(info.triple)
    return target.create_target_machine(
        cpu=info.cpu, features=",".join(f"+{f}" for f in sorted(info.features)), opt=3
    )


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


class CompiledModule:
    """Machine code for one module, owned by an MCJIT engine that lives as long as
    this object."""

    def __init__(self, engine: Any, module: Any, target_machine: Any) -> None:
        self._engine = engine
        self._module = module
        self._target_machine = target_machine
        self._functions: dict[str, Callable[..., Any]] = {}
        self._lock = threading.Lock()

    def function(self, name: str) -> Callable[..., Any]:
        """The compiled function ``name`` as a ctypes function pointer (argument and
        result types from its LLVM signature)."""
        with self._lock:
            found = self._functions.get(name)
            if found is not None:
                return found
            try:
                fn = self._module.get_function(name)
            except NameError:
                raise NativeCompileError(f"no function '{name}' in the module") from None
            if fn.is_declaration:
                raise NativeCompileError(f"'{name}' is declared, not defined, in the module")
            signature = fn.global_value_type
            restype = _ctype(str(signature.get_function_return()))
            argtypes = [_ctype(str(t)) for t in signature.get_function_parameters()]
            address = self._engine.get_function_address(name)
            found = ctypes.CFUNCTYPE(restype, *argtypes)(address)
            self._functions[name] = found
            return found

    @property
    def optimized_ir(self) -> str:
        """The LLVM IR after optimization."""
        return str(self._module)

    def assembly(self) -> str:
        """The host assembly of the optimized module."""
        return self._target_machine.emit_assembly(self._module)


def llvm_ir(module: ModuleOp) -> str:
    """LLVM IR text of an ``llvm``-dialect module (xDSL's ``convert_module``), for the
    host triple."""
    from xdsl.backend.llvm.convert import convert_module

    try:
        return str(convert_module(module, fallback_target_triple=None))
    except Exception as err:  # xDSL's converter or llvmlite's IR builder refusing the IR
        raise NativeCompileError(
            f"xDSL's LLVM IR conversion failed: {type(err).__name__}: {err}"
        ) from err


def compile_llvm(
    module: ModuleOp | str,
    *,
    symbols: Mapping[str, int] | None = None,
    speed_level: int = 3,
    vectorize: bool = True,
) -> CompiledModule:
    """Compile an ``llvm``-dialect module or LLVM IR text for the host CPU.

    ``symbols`` binds external functions to addresses (see :func:`bind_symbols`);
    C math functions resolve without it.  Raises :class:`NativeCompileError` when
    llvmlite is missing, the IR does not parse or verify, or the module uses f16
    on an x86 CPU without F16C.
    """
    llvm = _llvm()
    text = module if isinstance(module, str) else llvm_ir(module)
    info = host_info()
    if "half" in text and not info.native_f16:
        raise NativeCompileError(
            f"the module uses f16, which needs F16C on this CPU ({info.cpu}) to avoid "
            "compiler-rt calls MCJIT cannot resolve"
        )
    tm = _target_machine()
    if symbols:
        bind_symbols(symbols)
    try:
        parsed = llvm.parse_assembly(text)
        parsed.verify()
    except RuntimeError as err:
        raise NativeCompileError(f"invalid LLVM IR: {err}") from None
    parsed.triple = tm.triple
    parsed.data_layout = str(tm.target_data)
    options = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    options.loop_vectorization = vectorize
    options.slp_vectorization = vectorize
    builder = llvm.create_pass_builder(tm, options)
    builder.getModulePassManager().run(parsed, builder)
    engine = llvm.create_mcjit_compiler(parsed, tm)
    engine.finalize_object()
    return CompiledModule(engine, parsed, tm)
