"""Defaults shared by the passes and the JIT (kept light: the JIT imports it eagerly)."""

DEFAULT_MEMORY_BUDGET = 1_000_000
"""Elements of scratch one fused kernel may allocate at a time, unless told otherwise."""
