"""A GPT-2 transformer block as picoGPT writes it (``examples/gpt2_block.tdsl``), and a
whole tiny GPT-2 forward pass (``examples/gpt2_tiny.tdsl``: embeddings by a gather): the
language of real models (``var``, ``split`` into q, k, v and heads, ``tri`` for the
causal mask, ``hstack`` of the heads, ``.T``) compiled on every target and held to
picoGPT's own NumPy code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from all_targets import COMPILED_TARGETS

from tdsl.errors import TdslIndexError
from tdsl.jit import JITTensorKernel

Array = np.ndarray[Any, Any]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "gpt2_block.tdsl"


# picoGPT (github.com/jaymody/picoGPT, gpt2.py), its scale and mask constants kept float32
def gelu(x: Array) -> Array:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x: Array) -> Array:
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def layer_norm(x: Array, g: Array, b: Array, eps: float = 1e-5) -> Array:
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    return g * (x - mean) / np.sqrt(variance + eps) + b


def linear(x: Array, w: Array, b: Array) -> Array:
    return x @ w + b


def attention(q: Array, k: Array, v: Array, mask: Array) -> Array:
    return softmax(q @ k.T / np.float32(np.sqrt(q.shape[-1])) + mask) @ v


def mha(x: Array, wa: Array, ba: Array, wp: Array, bp: Array, n_head: int) -> Array:
    x = linear(x, wa, ba)
    qkv = np.split(x, 3, axis=-1)
    qkv_heads = [np.split(part, n_head, axis=-1) for part in qkv]
    causal_mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * np.float32(-1e10)
    out_heads = [attention(q, k, v, causal_mask) for q, k, v in zip(*qkv_heads, strict=True)]
    return linear(np.hstack(out_heads), wp, bp)


def block(x: Array, *w: Array) -> Array:
    g1, b1, wa, ba, wp, bp, g2, b2, wf, bf, wo, bo = w
    x = x + mha(layer_norm(x, g1, b1), wa, ba, wp, bp, n_head=2)
    return x + linear(gelu(linear(layer_norm(x, g2, b2), wf, bf)), wo, bo)


def weights(rng: np.random.Generator) -> list[Array]:
    shapes = [(32,), (32,), (32, 96), (96,), (32, 32), (32,)]
    shapes += [(32,), (32,), (32, 128), (128,), (128, 32), (32,)]
    return [(rng.standard_normal(s) * 0.3).astype(np.float32) for s in shapes]


@pytest.mark.parametrize(
    "target",
    COMPILED_TARGETS,
)
@pytest.mark.parametrize("budget", [256, 10**6])
def test_the_gpt2_block_computes_what_picogpt_computes(target: str, budget: int) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    w = weights(rng)
    with np.errstate(over="ignore"):
        want = block(x, *w)
    fn = JITTensorKernel(target=target, memory_budget=budget).compile(
        EXAMPLE.read_text(), filename=str(EXAMPLE)
    )
    got = fn(x, *w)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_the_gpt2_block_runs_on_dask_arrays() -> None:
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    w = weights(rng)
    fn = JITTensorKernel(target="numpy").compile(EXAMPLE.read_text())
    got = fn(da.from_array(x, chunks=(16, 32)), *w)
    np.testing.assert_allclose(got.compute(), fn(x, *w), rtol=1e-6, atol=1e-6)


TINY = EXAMPLE.with_name("gpt2_tiny.tdsl")


def gpt2(tokens: Array, wte: Array, wpe: Array, *w: Array) -> Array:
    """picoGPT's ``gpt2``: embeddings, the blocks, the final layer norm, the logits."""
    x = wte[tokens] + wpe[range(len(tokens))]
    for layer in range(2):
        x = block(x, *w[12 * layer : 12 * layer + 12])
    return layer_norm(x, w[24], w[25]) @ wte.T


@pytest.mark.parametrize(
    "target",
    COMPILED_TARGETS,
)
def test_a_whole_gpt2_forward_pass_computes_what_picogpt_computes(target: str) -> None:
    rng = np.random.default_rng(4)
    tokens = rng.integers(0, 64, 16)
    wte = (rng.standard_normal((64, 32)) * 0.3).astype(np.float32)
    wpe = (rng.standard_normal((32, 32)) * 0.3).astype(np.float32)
    w = [*weights(rng), *weights(rng), *(rng.standard_normal((2, 32)).astype(np.float32))]
    with np.errstate(over="ignore"):
        want = gpt2(tokens, wte, wpe, *w)
    fn = JITTensorKernel(target=target).compile(TINY.read_text(), filename=str(TINY))
    got = fn(tokens, wte, wpe, *w)
    assert got.shape == (16, 64) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=5e-4, atol=5e-4)
    assert int(np.argmax(got[-1])) == int(np.argmax(want[-1]))  # the next token
    with pytest.raises(TdslIndexError, match="index 64 is out of bounds for axis 0"):
        fn(np.where(np.arange(16) == 3, 64, tokens), wte, wpe, *w)
