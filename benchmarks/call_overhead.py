"""What a call of a small kernel costs on each target, and where a native call's goes.

    python benchmarks/call_overhead.py [--rounds 7]

For a few small f32 kernels (64x64 inputs), the median time per call, in one process,
of:

- ``numpy``: the numpy target's kernel, ``kernel(A=..., ...)``;
- ``native``: the native kernel, ``kernel(A=..., ...)``;
- ``native, general call``: the native function's general call
  (``NativeFunction._general``: the arguments handled in loops), which every native
  call took before :mod:`tdsl.runtime.fast_call`;
- ``native, straight-line call``: the function's generated call (``direct``);
- ``machine code``: the compiled main function called through ctypes with the
  arguments' addresses computed beforehand (the floor; only for kernels without a
  workspace).

The variants run interleaved, ``--rounds`` times, each round a batch of at least
20 ms; the figure is the median of the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tdsl.jit import JITTensorKernel
from tdsl.runtime.native import NativeFunction, _address

KERNELS = {
    "A * B": "A * B",
    "relu chain": "relu(A) + B * C - D",
    "column mean": "mean(A * B, axis=0)",
    "softmax": "softmax(A) * B",
}


def per_call(fn: Callable[[], Any], seconds: float = 0.02) -> float:
    fn()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            fn()
        n += 100
    return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for label, expr in KERNELS.items():
        names = [n for n in "ABCD" if n in expr]
        ins = {n: rng.standard_normal((64, 64), dtype=np.float32) for n in names}
        shapes = {n: a.shape for n, a in ins.items()}
        numpy_k = JITTensorKernel(target="numpy").compile(expr, shapes, "f32")
        native_k = JITTensorKernel(target="native").compile(expr, shapes, "f32")
        function = native_k.function
        assert isinstance(function, NativeFunction)
        arrays = [ins[n] for n in native_k.arg_names]
        variants: dict[str, Callable[[], Any]] = {
            "numpy": lambda k=numpy_k, i=ins: k(**i),
            "native": lambda k=native_k, i=ins: k(**i),
            "native, general call": lambda f=function, a=arrays: f._general(*a),
            "native, straight-line call": lambda f=function, a=arrays: f.direct(*a),
        }
        if not (function._slots or function._errors or function._views or function._split):
            out = function.direct(*arrays)
            outs = out if isinstance(out, tuple) else (out,)
            pointers = list(function._pointers)  # the constants' addresses
            for (i, _), a in zip(function._inputs, arrays, strict=True):
                pointers[i] = _address(a)
            for (i, *_), o in zip(function._outputs, outs, strict=True):
                pointers[i] = _address(o)
            variants["machine code"] = lambda f=function.main, p=pointers: f(*p)
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, fn in variants.items():
                times[name].append(per_call(fn))
        cells = "  ".join(f"{n} {statistics.median(t) * 1e6:6.2f} us" for n, t in times.items())
        print(f"{label:12s}  {cells}", flush=True)


if __name__ == "__main__":
    main()
