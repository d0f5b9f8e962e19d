"""Fingerprints of what tdsl makes of a few float32 programs: an md5 of each stage's IR
(tensordsl, fused, tiled), of the numpy target's source and of the native target's
LLVM IR.  Run it in two checkouts to see whether a change altered generated code:

    python benchmarks/ir_fingerprint.py > after.txt
    git worktree add /tmp/before <commit>
    (cd /tmp/before && PYTHONPATH=. python benchmarks/ir_fingerprint.py) > before.txt
    diff before.txt after.txt

Identical fingerprints mean the same code runs, so timing differences between the two
are the machine's noise.
"""

from __future__ import annotations

import hashlib

from tdsl.jit import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

PROGRAMS: list[tuple[str, str, dict[str, tuple[int, ...]]]] = [
    ("mlp", "relu(x @ w + b)", {"x": (512, 256), "w": (256, 128), "b": (128,)}),
    ("attention_scores", "softmax(q @ k.T * 0.125, axis=-1)", {"q": (256, 64), "k": (256, 64)}),
    ("relu_chain", "relu(relu(a * 2 + 1) - 3) * 0.5", {"a": (1024, 1024)}),
    ("softmax", "softmax(a, axis=-1)", {"a": (1024, 1024)}),
    ("sum_exp", "sum(exp(a) * b, axis=1)", {"a": (1024, 1024), "b": (1024, 1024)}),
    ("gelu", "0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x ** 3)))", {"x": (512, 768)}),
    (
        "layernorm",
        "(x - mean(x, axis=-1, keepdims=True)) / sqrt(var(x, axis=-1, keepdims=True) + 1e-5) * 2",
        {"x": (512, 768)},
    ),
]


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()[:12]


def main() -> None:
    targets = ["numpy"] if native_unavailable_reason() is not None else ["numpy", "native"]
    print(f"{'program':<18} {'target':<7} {'code':<12} {'ir (tensordsl+fused+tiled)':<12}")
    for name, text, shapes in PROGRAMS:
        for target in targets:
            kernel = JITTensorKernel(target=target).compile(
                text, shapes, dict.fromkeys(shapes, "f32")
            )
            code = (kernel.llvm_ir or "") if target == "native" else kernel.source
            ir = "".join(kernel.ir[stage] for stage in ("tensordsl", "fused", "tiled"))
            print(f"{name:<18} {target:<7} {_md5(code):<12} {_md5(ir)}")


if __name__ == "__main__":
    main()
