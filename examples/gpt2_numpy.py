"""A GPT-2 forward pass in plain NumPy, in picoGPT's style, compiled unchanged by
``tdsl.trace``: embeddings by integer indexing, heads by ``np.split`` in a list
comprehension, an ``np.tri`` causal mask, ``np.hstack``, ``np.var`` and the tied
``@ wte.T``.  Random weights (no download).

    python examples/gpt2_numpy.py            # E=768, 12 heads, 2 layers, 4096 words, 64 tokens
    python examples/gpt2_numpy.py --small    # E=64, 4 heads, 2 layers, 128 words, 16 tokens
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tdsl


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def layer_norm(x, g, b, eps: float = 1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    x = (x - mean) / np.sqrt(variance + eps)
    return g * x + b


def linear(x, w, b):
    return x @ w + b


def ffn(x, c_fc, c_proj):
    a = gelu(linear(x, **c_fc))
    return linear(a, **c_proj)


def attention(q, k, v, mask):
    return softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v


def mha(x, c_attn, c_proj, n_head):
    x = linear(x, **c_attn)
    qkv = np.split(x, 3, axis=-1)
    qkv_heads = list(map(lambda x: np.split(x, n_head, axis=-1), qkv))
    causal_mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10
    out_heads = [attention(q, k, v, causal_mask) for q, k, v in zip(*qkv_heads)]  # noqa: B905
    x = np.hstack(out_heads)
    return linear(x, **c_proj)


def transformer_block(x, mlp, attn, ln_1, ln_2, n_head):
    x = x + mha(layer_norm(x, **ln_1), **attn, n_head=n_head)
    return x + ffn(layer_norm(x, **ln_2), **mlp)


def gpt2(inputs, wte, wpe, blocks, ln_f, n_head):
    x = wte[inputs] + wpe[range(len(inputs))]
    for block in blocks:
        x = transformer_block(x, **block, n_head=n_head)
    x = layer_norm(x, **ln_f)
    return x @ wte.T


def random_params(vocab: int, context: int, embed: int, layers: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    def ln() -> dict:
        return {"g": np.ones(embed, np.float32), "b": np.zeros(embed, np.float32)}

    blocks = [
        {
            "mlp": {
                "c_fc": {"w": w(embed, 4 * embed), "b": w(4 * embed)},
                "c_proj": {"w": w(4 * embed, embed), "b": w(embed)},
            },
            "attn": {
                "c_attn": {"w": w(embed, 3 * embed), "b": w(3 * embed)},
                "c_proj": {"w": w(embed, embed), "b": w(embed)},
            },
            "ln_1": ln(),
            "ln_2": ln(),
        }
        for _ in range(layers)
    ]
    return {"wte": w(vocab, embed), "wpe": w(context, embed), "blocks": blocks, "ln_f": ln()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="a small model, for a quick run")
    parser.add_argument("--target", default=None, help="numpy, native or auto (the default)")
    args = parser.parse_args()
    vocab, embed, heads, tokens = (128, 64, 4, 16) if args.small else (4096, 768, 12, 64)
    params = random_params(vocab, 1024, embed, 2)
    inputs = np.random.default_rng(1).integers(0, vocab, tokens)
    # np.sqrt(2 / np.pi) in gelu is a float64 scalar: from the first gelu on, NumPy 2
    # computes in float64, converting each later f32 weight it multiplies (16 M
    # elements in all); the budget is set to hold them, as NumPy does
    forward = tdsl.trace(gpt2, static_argnames="n_head", memory_budget=1 << 25, target=args.target)
    start = time.perf_counter()
    kernel = forward.compile(inputs, **params, n_head=heads)
    took = time.perf_counter() - start
    print(
        f"traced and compiled in {took:.1f} s: {len(kernel.groups)} groups, target {kernel.target}"
    )
    logits = forward(inputs, **params, n_head=heads)
    expected = gpt2(inputs, **params, n_head=heads)
    print(f"logits {logits.shape} {logits.dtype}; NumPy's {expected.shape} {expected.dtype}")
    scale = np.max(np.abs(expected))
    print(f"max |difference| {np.max(np.abs(logits - expected)):.2e} (logits' scale {scale:.2e})")
    agree = np.mean(np.argmax(logits, -1) == np.argmax(expected, -1))
    print(f"greedy next tokens agree with NumPy's at {agree:.0%} of positions")
    times = {}
    for name, run in (("numpy", gpt2), ("tdsl", forward)):
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            run(inputs, **params, n_head=heads)
            samples.append(time.perf_counter() - start)
        times[name] = sorted(samples)[2]
    print(
        f"median of 5 calls: NumPy {times['numpy'] * 1e3:.1f} ms, tdsl {times['tdsl'] * 1e3:.1f} "
        f"ms ({times['numpy'] / times['tdsl']:.2f}x)"
    )


if __name__ == "__main__":
    main()
