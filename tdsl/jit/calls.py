"""Calling a compiled kernel: argument checks, ``out=``, and the generated fast call path.

A compiled kernel checks its arguments on every call.  The generated
``__call__`` (:func:`make_calls`) does one comparison per operand (class,
shape, dtype); anything irregular goes to :func:`call_checked`, which either
raises :class:`~tdsl.errors.TdslCallError` naming the argument, what was
expected and what came, or converts and calls.  What each argument takes:

- an array parameter: an ``ndarray`` (or subclass) of exactly its shape and
  dtype, any strides; a 0-d parameter also a NumPy scalar of its dtype, or a
  Python ``int``/``float`` (converted to its dtype, as NumPy converts a
  Python scalar it meets);
- a weak parameter (:attr:`ArgSpec.weak <tdsl.jit.compiled.ArgSpec.weak>`): a
  Python ``int`` or ``float`` (not a ``bool``), passed to the generated code
  as a 0-d float64 array.

``out`` (:func:`call_with_out`) is checked, then handed to the generated
function, which computes the results straight into it.

An array parameter also takes an array of a registered type
(:mod:`tdsl.array_types`) of its shape and dtype: when any argument is one, the
slow path hands the call to the type's ``call``.  :mod:`tdsl.dask` registers
Dask arrays, whose call (:func:`tdsl.dask.graph.call_dask`) returns lazy Dask
arrays (NumPy arrays and scalars may be mixed in; ``out`` may not be given).
Neither Dask nor :mod:`tdsl.dask` is imported here.

The one-shot ``jit(source, **values)`` infers what to compile from its values
(:func:`infer`): an array (NumPy or Dask) gives its shape and dtype, a NumPy
scalar a 0-d input of its dtype, a Python ``int``/``float`` a weak 0-d input.  It first
tries the kernel the source last ran with through ``try_call``, whose check is
the fast path's: it accepts exactly what the one-shot would have compiled
that kernel for, so a Python float never runs a kernel compiled for a NumPy
scalar, nor the other way round.
"""

from __future__ import annotations

import builtins
import keyword
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tdsl.array_types import array_type_of
from tdsl.dtypes import type_str
from tdsl.errors import TdslCallError, TdslError, in_source
from tdsl.jit.trace_names import holds_traced, traced_argument
from tdsl.jit.values import (
    convert_weak,
    describe,
    is_numpy_scalar,
    is_python_number,
    scalar_dtype,
    show_big,
    weak_range,
)

if TYPE_CHECKING:
    from tdsl.jit.compiled import ArgSpec, CompiledKernel

FELL_BACK_AT_CALL = "target='auto' fell back at call time"
"""How ``target_reason`` begins when a ``target="auto"`` kernel switched to the numpy
target because a strided variant failed to compile."""

Array = np.ndarray[Any, Any]

OUT = "out"
"""The keyword that takes the result arrays; no input may have this name."""

_FLOAT64 = np.dtype(np.float64)
_INT64 = np.dtype(np.int64)


class _Missing:
    """The default of an argument the caller did not pass."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


# --------------------------------------------------------------------------- arguments


def unlike_an_array(value: object, name: str) -> str | None:
    """What makes ``value`` (the argument ``name``), a NumPy array subclass, compute
    otherwise than an array (as the rest of an error message), or None: tdsl would drop a
    mask or a matrix's products."""
    if isinstance(value, np.ma.MaskedArray):
        return (
            "is a numpy.ma.MaskedArray: tdsl computes on plain arrays and would ignore its "
            f"mask; pass `{name}.filled(...)` (or `np.asarray({name})`, its data)"
        )
    if isinstance(value, np.matrix):
        return (
            "is a numpy.matrix, whose `*` and `**` are matrix products: tdsl computes on "
            f"plain arrays; pass `np.asarray({name})`"
        )
    return None


def convert_argument(kernel: CompiledKernel, spec: ArgSpec, value: Any) -> Array:
    """``value`` as the array the generated code takes for ``spec``, or TdslCallError."""
    where = f"argument `{spec.name}` of kernel `{kernel.name}`"
    if value is MISSING:
        raise TdslCallError(f"missing {where}: expected {spec.expected}")
    if isinstance(value, bool):
        hint = f" (np.bool_({value!r}))" if spec.dtype == np.bool_ and not spec.weak else ""
        raise TdslCallError(f"{where} is a Python bool ({value!r}): expected {spec.expected}{hint}")
    if spec.weak:
        return convert_weak(where, spec, value)
    if not spec.shape:
        if is_numpy_scalar(value) and scalar_dtype(value) == spec.dtype:
            return np.asarray(value)
        if is_python_number(value):
            try:
                return np.array(value, spec.dtype)
            except OverflowError:
                if spec.dtype.kind in "iu" and isinstance(value, int):
                    info = np.iinfo(spec.dtype)
                    raise TdslCallError(
                        f"{where} is {type_str(spec.dtype, ())}: the Python int "
                        f"{show_big(value)} does not fit in [{info.min}, {info.max}]"
                    ) from None
                raise TdslCallError(
                    f"{where} is too large for a float: {show_big(value)}"
                ) from None
    expected = type_str(spec.dtype, spec.shape)
    if not isinstance(value, np.ndarray):
        if holds_traced(value):
            traced_argument(where)
        raise TdslCallError(f"{where} must be a NumPy array of {expected}, got {describe(value)}")
    unlike = unlike_an_array(cast(object, value), spec.name)
    if unlike is not None:
        raise TdslCallError(f"{where} {unlike}")
    array = cast(Array, value)
    if array.shape != spec.shape:
        raise TdslCallError(
            f"{where} has the wrong shape: expected {expected}, got {describe(array)}"
        )
    if array.dtype != spec.dtype:
        u8 = spec.dtype == np.uint8 and array.dtype == np.uint64  # (NumPy's code `u8`)
        raise TdslCallError(
            f"{where} has the wrong dtype: expected {expected}, got {describe(array)}"
            + (" (tdsl's `u8` is uint8; NumPy's code `u8` is tdsl's `u64`)" if u8 else "")
        )
    return np.asarray(array)


def _fits(spec: ArgSpec, value: Any) -> bool:
    """Whether ``value`` is what a one-shot call would compile ``spec`` for (no conversion)."""
    if spec.weak and spec.dtype == _INT64:
        low, high = weak_range(spec)
        return type(value) is int and low <= value <= high
    if spec.weak:  # (an int compiles a weak int input: another result dtype)
        return type(value) is float
    if not spec.shape and is_numpy_scalar(value):
        return scalar_dtype(value) == spec.dtype
    return (
        isinstance(value, np.ndarray)
        and cast(Array, value).shape == spec.shape
        and cast(Array, value).dtype == spec.dtype
        and (type(value) is np.ndarray or unlike_an_array(value, spec.name) is None)
    )


def call_checked(
    kernel: CompiledKernel,
    given: Sequence[Any],
    more: Sequence[Any],
    extra: Mapping[str, Any],
    out: Any = None,
) -> Any:
    """The slow call path: precise errors, or a call after the careful check passes.

    The fast path bails out here for any irregularity: an error, but also what
    is fine after a conversion (an ndarray subclass, an equal but non-canonical
    dtype object, a Python number for a 0-d array parameter).
    """
    names = kernel.arg_names
    if extra:
        unexpected = next(iter(extra))
        raise TdslCallError(
            f"kernel `{kernel.name}` got an unexpected argument `{unexpected}`; "
            f"its arguments are {_name_list(names)}"
        )
    if more:
        raise TdslCallError(
            f"kernel `{kernel.name}` takes {len(names)} argument{'s' if len(names) != 1 else ''} "
            f"({_name_list(names)}), got {len(names) + len(more)}"
        )
    foreign = array_type_of(given)
    if foreign is not None:
        return foreign.call(kernel, given, out)
    arrays = [
        convert_argument(kernel, spec, value)
        for spec, value in zip(kernel.args, given, strict=True)
    ]
    try:
        if out is None:
            return kernel.function(*arrays)
        return call_with_out(kernel, arrays, out)
    except TdslError as err:  # (a gather's bad index: at its line of the source)
        at = in_source(err, kernel.filename, kernel.expression)
        if at is err:
            raise
        raise at from None


def call_generic(kernel: CompiledKernel, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """Bind positional and keyword arguments by hand, then take the checked path."""
    names = kernel.arg_names
    given: list[Any] = list(args[: len(names)]) + [MISSING] * max(0, len(names) - len(args))
    extra: dict[str, Any] = {}
    out = None
    for key, value in kwargs.items():
        if key == OUT:
            out = value
            continue
        try:
            index = names.index(key)
        except ValueError:
            extra[key] = value
            continue
        if index < len(args):
            raise TdslCallError(
                f"kernel `{kernel.name}` got two values for argument `{key}` "
                "(positional and keyword)"
            )
        given[index] = value
    return call_checked(kernel, given, args[len(names) :], extra, out)


def keyword_call(
    kernel: CompiledKernel,
    given: Sequence[Any],
    more: Sequence[Any],
    extra: Mapping[str, Any],
    out: Any,
    names: tuple[str, ...],
) -> Any:
    """A call of the generated ``__call__`` with keyword arguments (``extra``) beside the
    positional ones (``given``, ``MISSING`` past the last one given, and ``more``) of a
    kernel whose inputs are ``names``.

    (``__call__`` itself tries ``try_call`` when every input comes by name.)  Inputs
    given some by position, the others by name, once each, take the fast ``try_call``;
    anything else (an unknown name, a value given both ways, extra positional values,
    values that do not fit exactly) goes through :func:`call_generic`, which raises the
    precise error or converts."""
    positional = [value for value in given if value is not MISSING]
    if positional and not more:
        values = dict(zip(names, positional, strict=False))  # (given: the first inputs)
        values.update(extra)
        if len(values) == len(extra) + len(positional):  # no name given twice
            found = kernel.try_call(values, out)
            if found is not NotImplemented:
                return found
    return call_generic(kernel, [*positional, *more], extra if out is None else {**extra, OUT: out})


def _name_list(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


# --------------------------------------------------------------------------- out=


def _expected_out(kernel: CompiledKernel) -> str:
    types = [type_str(dtype, shape) for shape, dtype in kernel.results]
    if len(types) == 1:
        return f"an array of {types[0]}"
    return f"a tuple of {len(types)} arrays ({', '.join(types)})"


def _check_out(kernel: CompiledKernel, arrays: Sequence[Array], out: Any) -> tuple[Array, ...]:
    """The result arrays ``out`` gives, or TdslCallError saying what was expected."""
    results = kernel.results
    if len(results) == 1 and isinstance(out, np.ndarray):
        outs: tuple[Any, ...] = (out,)
        single = True
    elif isinstance(out, tuple):
        outs = cast(tuple[Any, ...], out)
        single = False
        if len(outs) != len(results):
            raise TdslCallError(
                f"`out` of kernel `{kernel.name}` must be {_expected_out(kernel)}, "
                f"got a tuple of {len(outs)}"
            )
    else:
        raise TdslCallError(
            f"`out` of kernel `{kernel.name}` must be {_expected_out(kernel)}, got {describe(out)}"
        )

    def label(i: int) -> str:
        return "`out`" if single else f"`out[{i}]`"

    for i, (value, (shape, dtype)) in enumerate(zip(outs, results, strict=True)):
        if isinstance(value, np.ndarray):
            array = cast(Array, value)
            fits = array.shape == shape and array.dtype == dtype and array.flags.writeable
            if fits and not _overlaps_itself(array):
                continue
        expected = type_str(dtype, shape)
        what = f"{label(i)} of kernel `{kernel.name}`"
        if not isinstance(value, np.ndarray):
            raise TdslCallError(
                f"{what} must be a NumPy array of {expected}, got {describe(value)}"
            )
        array = cast(Array, value)
        if array.shape != shape:
            raise TdslCallError(
                f"{what} has the wrong shape: expected {expected}, got {describe(array)}"
            )
        if array.dtype != dtype:
            raise TdslCallError(
                f"{what} has the wrong dtype: expected {expected}, got {describe(array)}"
            )
        problem = "may overlap itself (a broadcast or as_strided view): use an np.empty array"
        raise TdslCallError(f"{what} {'is read-only' if not array.flags.writeable else problem}")
    for i, value in enumerate(outs):
        for spec, array in zip(kernel.args, arrays, strict=True):
            if np.shares_memory(value, array):
                raise TdslCallError(
                    f"{label(i)} of kernel `{kernel.name}` shares memory with argument "
                    f"`{spec.name}`: the results must not overwrite the inputs"
                )
        for j in range(i):
            if np.shares_memory(value, outs[j]):
                raise TdslCallError(
                    f"{label(j)} and {label(i)} of kernel `{kernel.name}` share memory: "
                    "each result needs its own"
                )
    return outs


def _overlaps_itself(a: Array) -> bool:
    """Whether elements of ``a`` may share memory: each dim by stride must step past those
    before it (NumPy's quick test; exotic layouts fail it too; an empty array shares none)."""
    span = a.itemsize
    for stride, n in sorted((abs(s), n) for s, n in zip(a.strides, a.shape, strict=True) if n > 1):
        if stride < span and a.size:
            return True
        span += stride * (n - 1)
    return False


def call_with_out(kernel: CompiledKernel, arrays: Sequence[Array], out: Any) -> Any:
    """Run ``kernel`` on ``arrays`` (already checked), writing its results into ``out``.

    Returns the result array for one result (``out``, or ``out[0]`` of a
    one-element tuple, as a NumPy ufunc does), else the tuple ``out`` itself.
    """
    outs = _check_out(kernel, arrays, out)
    kernel.function(*arrays, out=outs)
    return outs[0] if len(outs) == 1 else out


# --------------------------------------------------------------------------- the fast path


def _fast_names_ok(names: Sequence[str]) -> bool:
    """Whether the input names can be the generated ``__call__``'s parameter names."""
    return all(
        n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("_tdsl") and n != OUT
        for n in names
    ) and len(set(names)) == len(names)


def make_calls(kernel: CompiledKernel) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Generate the kernel's ``__call__`` and ``try_call``: parameters named like the inputs.

    Per operand the check is ``x.__class__ is ndarray and x.shape == S and x.dtype is D``
    (three attribute reads and a tuple compare); a 0-d operand may also be a
    NumPy scalar of the dtype (``x.__class__ is np.float32``), and a weak one
    is ``x.__class__ is float`` or an ``int`` within float range.  Anything
    else (an error, or an ndarray subclass, or an equal but distinct dtype
    object) makes ``__call__`` take the slow path, which raises the precise
    error or calls after the careful check.  ``try_call`` (no ``self``; a dict
    of values by name, and ``out``) runs the kernel if the values fit exactly
    and returns ``NotImplemented`` otherwise: the one-shot ``jit(...)`` path,
    which has its values in a dict already.  With ``out`` given, both check it
    (:func:`call_with_out`) after the operands pass.  The inputs are positional-only
    parameters: keyword arguments arrive in a dict, which :func:`keyword_call` binds (a
    value passed both ways is then a :class:`~tdsl.errors.TdslCallError`, not Python's
    ``TypeError``).
    """
    names = kernel.arg_names
    if not _fast_names_ok(names):

        def call(self: CompiledKernel, *args: Any, **kwargs: Any) -> Any:
            return call_generic(self, args, kwargs)

        def attempt(values: Mapping[str, Any], out: Any = None) -> Any:
            given = [values.get(n, MISSING) for n in names]
            if len(values) != len(names) or not all(
                _fits(spec, value) for spec, value in zip(kernel.args, given, strict=True)
            ):
                return NotImplemented
            return call_checked(kernel, given, (), {}, out)

        return call, attempt
    namespace: dict[str, Any] = {
        "_tdsl_M": MISSING,
        "_tdsl_NO": NotImplemented,
        "_tdsl_nd": np.ndarray,
        # (a native function's `direct`: the same call without a method's indirection)
        "_tdsl_fn": getattr(kernel.function, "direct", kernel.function),
        "_tdsl_k": kernel,
        "_tdsl_slow": call_checked,
        "_tdsl_kw": keyword_call,
        "_tdsl_names": tuple(names),
        "_tdsl_out": call_with_out,
        # the inputs' names are locals of the generated code and may shadow builtins
        "_tdsl_len": len,
        "_tdsl_float": float,
        "_tdsl_int": int,
        "_tdsl_array": np.array,
        "_tdsl_asarray": np.asarray,
        "_tdsl_f8": _FLOAT64,
        "_tdsl_i8": _INT64,
        "_tdsl_TE": TdslError,
        "_tdsl_in_source": in_source,
    }
    checks = ["_tdsl_more", "_tdsl_extra"]
    exact: dict[int, str] = {}
    """The checks ``try_call`` makes stricter: a one-shot call compiles a weak float
    input for a ``float`` only (an ``int`` is a weak int input, another dtype)."""
    operands: list[str] = []
    for i, spec in enumerate(kernel.args):
        namespace[f"_tdsl_s{i}"] = spec.shape
        namespace[f"_tdsl_d{i}"] = spec.dtype
        n = spec.name
        if spec.weak and spec.dtype == _INT64:
            namespace[f"_tdsl_lo{i}"], namespace[f"_tdsl_hi{i}"] = weak_range(spec)
            checks.append(
                f"({n}.__class__ is not _tdsl_int or not _tdsl_lo{i} <= {n} <= _tdsl_hi{i})"
            )
            operands.append(f"_tdsl_array({n}, _tdsl_i8)")
        elif spec.weak:
            namespace[f"_tdsl_lo{i}"], namespace[f"_tdsl_hi{i}"] = weak_range(spec)
            checks.append(
                f"({n}.__class__ is not _tdsl_float and ({n}.__class__ is not _tdsl_int "
                f"or not _tdsl_lo{i} <= {n} <= _tdsl_hi{i}))"
            )
            exact[len(checks) - 1] = f"{n}.__class__ is not _tdsl_float"
            operands.append(f"_tdsl_array({n}, _tdsl_f8)")
        elif not spec.shape:
            namespace[f"_tdsl_t{i}"] = spec.dtype.type
            checks.append(
                f"({n}.__class__ is not _tdsl_t{i} and ({n}.__class__ is not _tdsl_nd "
                f"or {n}.shape != ())) or {n}.dtype is not _tdsl_d{i}"
            )
            operands.append(f"_tdsl_asarray({n})")
        else:
            checks.append(
                f"{n}.__class__ is not _tdsl_nd or {n}.shape != _tdsl_s{i} "
                f"or {n}.dtype is not _tdsl_d{i}"
            )
            operands.append(n)
    params = "".join(f"{n}=_tdsl_M, " for n in names)
    given = f"({', '.join(names)},)" if names else "()"
    args = ", ".join(operands)
    condition = "\n            or ".join(checks)
    strict = "\n            or ".join(exact.get(k, c) for k, c in enumerate(checks))
    lookups = "".join(f"    {n} = _tdsl_d.get({n!r}, _tdsl_M)\n" for n in names)
    run = (
        f"    if {OUT} is None:\n"
        f"        return _tdsl_fn({args})\n"
        f"    return _tdsl_out(_tdsl_k, ({args}{',' if len(operands) == 1 else ''}), {OUT})\n"
    )
    call = (
        "    if _tdsl_extra:\n"
        + (
            f"        if {names[0]} is _tdsl_M and not _tdsl_more:\n"  # every input by name
            f"            _tdsl_r = _try(_tdsl_extra, {OUT})\n"
            f"            if _tdsl_r is not _tdsl_NO:\n"
            f"                return _tdsl_r\n"
            if names
            else ""
        )
        + f"        return _tdsl_kw(_tdsl_self, {given}, _tdsl_more, _tdsl_extra, {OUT}, _tdsl_names)\n"
        f"    if ({condition}):\n"
        f"        return _tdsl_slow(_tdsl_self, {given}, _tdsl_more, _tdsl_extra, {OUT})\n"
        f"{run}"
    )
    attempt = (
        f"    _tdsl_more = _tdsl_len(_tdsl_d) != {len(names)}\n"
        f"    _tdsl_extra = False\n"
        f"{lookups}"
        f"    if ({strict}):\n"
        f"        return _tdsl_NO\n"
        f"{run}"
    )
    # (an error the kernel's run finds, a gather's bad index, gets its source line: a
    # try costs nothing in Python 3.11 until something is raised)
    located = (
        "    except _tdsl_TE as _tdsl_e:\n"
        "        _tdsl_at = _tdsl_in_source(_tdsl_e, _tdsl_k.filename, _tdsl_k.expression)\n"
        "        if _tdsl_at is _tdsl_e:\n"
        "            raise\n"
        "        raise _tdsl_at from None\n"
    )
    code = (
        f"def __call__(_tdsl_self, {params}/, *_tdsl_more, {OUT}=None, **_tdsl_extra):\n"
        f"    try:\n{textwrap.indent(call, '    ')}{located}"
        f"\n"
        f"def _try(_tdsl_d, {OUT}=None):\n"
        f"    try:\n{textwrap.indent(attempt, '    ')}{located}"
    )
    exec(builtins.compile(code, f"<tdsl call {kernel.name}>", "exec"), namespace)
    return (
        cast(Callable[..., Any], namespace["__call__"]),
        cast(Callable[..., Any], namespace["_try"]),
    )


def finish(kernel: CompiledKernel) -> CompiledKernel:
    """Give ``kernel`` a class of its own whose ``__call__`` is the generated fast path.

    Special methods are looked up on the type, and one Python frame per call
    matters at 64x64 (a call costs ~0.1 us, a kernel a few us).
    """
    call, attempt = make_calls(kernel)
    base = type(kernel)  # CompiledKernel (not imported here: it imports this module)
    while "_generated_call" in vars(base):  # finished before (a fallback): its base
        base = base.__mro__[1]
    cls = type(
        "CompiledKernel",
        (base,),
        {
            "__call__": call,
            "_generated_call": True,
            "__module__": base.__module__,
            "__doc__": base.__doc__,
        },
    )
    kernel.__class__ = cls
    kernel.try_call = attempt
    return kernel


def fall_back_on_variant_failure(
    kernel: CompiledKernel, numpy_function: Callable[[], Callable[..., Any]]
) -> None:
    """Make a native ``target="auto"`` kernel switch to the numpy target (``numpy_function``
    gives its function) when a strided variant fails to compile at call time, saying why
    in ``target_reason``; the call that found it, and every later one, run NumPy code."""
    variants = getattr(kernel.function, "variants", None)
    if variants is None or not hasattr(variants, "fallback"):
        return

    def fallback(reason: str) -> Callable[..., Any]:
        function = numpy_function()
        kernel.function = function
        kernel.target = "numpy"
        kernel.target_reason = f"{FELL_BACK_AT_CALL}: {reason}"
        kernel.pipeline = kernel.pipeline.split(",tdsl-lower-to-loops", 1)[0]
        kernel.llvm_ir = None
        finish(kernel)
        return function

    variants.fallback = fallback


__all__ = [
    "MISSING",
    "OUT",
    "call_checked",
    "call_generic",
    "call_with_out",
    "convert_argument",
    "describe",
    "finish",
    "make_calls",
    "unlike_an_array",
]
