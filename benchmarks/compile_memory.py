"""How much memory a process keeps per native compile, after the kernel is gone.

    python benchmarks/compile_memory.py [--kernels 200]

Measures the growth of the resident set (``/proc/self/statm``) per compile, over
``--kernels`` compiles after a warm-up of :data:`WARM_UP` and a garbage collection, in
three settings, each in a fresh process:

- ``jit``: a JIT keeping at most 8 kernels (``JITTensorKernel(cache_size=8)``, the
  machine-code cache cut to 8 modules as well) compiles ``--kernels`` kernels of new
  shapes natively, so that every kernel compiled is evicted again;
- ``llvmlite O3``: llvmlite alone runs LLVM's O3 pipeline (a new ``PassBuilder`` and
  module pass manager each time, as ``compile_llvm`` does) on the LLVM IR of one such
  kernel, renamed each time;
- ``llvmlite codegen``: llvmlite alone parses that IR and makes machine code of it in
  an MCJIT engine, without the O3 pipeline, and closes the engine.

The growth of Python's allocated blocks (``sys.getallocatedblocks``) is shown beside
it: what grows without them is memory outside Python's objects.  Linux only.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys

MODES = ("jit", "llvmlite O3", "llvmlite codegen")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _one_mode(mode: str, kernels: int) -> dict[str, float]:
    import numpy as np

    import tdsl.runtime.compile as rc
    from tdsl.jit import JITTensorKernel

    rc.COMPILED_CACHE_SIZE = 8
    jit = JITTensorKernel(target="native", threads=1, cache_size=8)
    source = "tanh(x) + sum(x, axis=0)"
    text = jit.compile(source, {"x": (4, 7)}).llvm_ir
    assert text is not None
    llvm = rc._llvm()  # pyright: ignore[reportPrivateUsage]

    def compile_one(i: int) -> None:
        if mode == "jit":
            jit(source, x=np.ones((4, 8 + i), np.float32))
            return
        renamed = text.replace("@main", f"@main_{i}")
        module = llvm.parse_assembly(renamed)
        tm = rc._target_machine()  # pyright: ignore[reportPrivateUsage]
        module.triple = tm.triple
        module.data_layout = str(tm.target_data)
        if mode == "llvmlite O3":
            options = llvm.create_pipeline_tuning_options(speed_level=3)
            builder = llvm.create_pass_builder(tm, options)
            builder.getModulePassManager().run(module, builder)
        else:
            engine = llvm.create_mcjit_compiler(module, tm)
            engine.finalize_object()
            engine.close()

    # the caches fill during the warm-up (the JIT's kernels, machine code, lowerings), and
    # the allocator's arenas grow: the slope is taken over the compiles after it
    for i in range(WARM_UP):
        compile_one(i)
    gc.collect()
    rss0, blocks0 = _rss_bytes(), sys.getallocatedblocks()
    for i in range(WARM_UP, WARM_UP + kernels):
        compile_one(i)
    gc.collect()
    rss, blocks = _rss_bytes() - rss0, sys.getallocatedblocks() - blocks0
    return {
        "rss_kb_per_compile": rss / kernels / 1024,
        "python_blocks_per_compile": blocks / kernels,
    }


WARM_UP = 200
"""Compiles before the measured ones."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, default=200, help="compiles measured per mode")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # (the child)
    args = parser.parse_args(argv)
    if args.mode:
        print(json.dumps(_one_mode(args.mode, args.kernels)))
        return 0
    print(f"memory kept per compile, {args.kernels} compiles after a warm-up, fresh process each")
    for mode in MODES:
        done = subprocess.run(
            [sys.executable, __file__, "--mode", mode, "--kernels", str(args.kernels)],
            capture_output=True,
            text=True,
            check=True,
        )
        got = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{mode:18s} resident set +{got['rss_kb_per_compile']:7.1f} KB, "
            f"Python's allocated blocks +{got['python_blocks_per_compile']:6.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
