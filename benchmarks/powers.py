"""Integer powers: NumPy's ``x ** n`` (its generic ``pow``) against tdsl's, which the
standard pipeline's ``canonicalize`` multiplies out (``PowerByConstant``), on both
targets, and ``x * x * x`` in NumPy for scale::

    python benchmarks/powers.py                  # 512x768 f32, n = 3, 4, -2, 0.5
    python benchmarks/powers.py --shape 1024 1024 --dtype float64

Each row is the best of ``--repeat`` calls, in ns per element, measured in one run.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tdsl import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason


def best(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    np.seterr(all="ignore")  # (x ** 0.5 of negative values: nan, as NumPy gives)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs="+", default=[512, 768])
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--powers", nargs="+", default=["3", "4", "-2", "0.5"])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    # standard normal values, as activations are: NumPy's pow takes a slow path for a
    # negative base (positive ones alone run it about 40 times faster here)
    x = rng.standard_normal(tuple(args.shape)).astype(args.dtype)
    targets = ["numpy"] + ([] if native_unavailable_reason() else ["native"])
    print(f"x: {args.dtype}{list(x.shape)} standard normal, ns per element (best of {args.repeat})")
    print(f"{'power':>6} {'numpy x**n':>11} " + " ".join(f"{'tdsl ' + t:>12}" for t in targets))
    for text in args.powers:
        n = float(text) if "." in text else int(text)
        row = [best(lambda n=n: x**n, args.repeat)]
        for target in targets:
            kernel = JITTensorKernel(target=target, threads=1).compile(
                f"x ** {text}", {"x": x.shape}, {"x": args.dtype}
            )
            row.append(best(lambda k=kernel: k(x=x), args.repeat))
        cells = " ".join(f"{t / x.size * 1e9:12.2f}" for t in row[1:])
        print(f"{text:>6} {row[0] / x.size * 1e9:11.2f} {cells}")
    print(f"x*x*x  {best(lambda: x * x * x, args.repeat) / x.size * 1e9:11.2f}  (NumPy, for scale)")


if __name__ == "__main__":
    main()
