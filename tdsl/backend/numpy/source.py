"""Writing Python source: lines and indentation, identifiers, module constants."""

from __future__ import annotations

import keyword
import re
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from tdsl.dtypes import dtype_expr

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def shape_expr(shape: Sequence[int]) -> str:
    """A Python tuple literal: ``()``, ``(4,)``, ``(4, 8)``."""
    if len(shape) == 1:
        return f"({shape[0]},)"
    return "(" + ", ".join(str(n) for n in shape) + ")"


def index_text(index: Sequence[slice]) -> str:
    """A NumPy subscript of slices: ``[1:4, :]``, ``[::-2]``."""

    def part(s: slice) -> str:
        start = "" if s.start is None else str(s.start)
        stop = "" if s.stop is None else str(s.stop)
        step = "" if s.step in (None, 1) else f":{s.step}"
        return f"{start}:{stop}{step}"

    return "[" + ", ".join(part(s) for s in index) + "]"


def scalar_expr(value: np.floating | float, dtype: np.dtype[np.floating]) -> str:
    """The shortest literal that converts back to exactly ``value`` in ``dtype`` (an
    integer literal for an integer dtype, exact beyond 2**53)."""
    if dtype.kind in "iu":
        return str(int(value))
    if dtype.kind == "b":
        return str(bool(value))
    v = dtype.type(value)
    if np.isnan(v):
        return 'float("nan")'
    if np.isinf(v):
        return 'float("inf")' if v > 0 else '-float("inf")'
    text = str(v)
    return text if any(c in text for c in ".en") else text + ".0"


def array_expr(arr: np.ndarray) -> str:
    """An expression rebuilding ``arr`` exactly (a literal for small arrays)."""
    dt = dtype_expr(arr.dtype)
    if arr.ndim == 0:
        return f"np.array({scalar_expr(arr.reshape(-1)[0], arr.dtype)}, {dt})"
    if arr.size == 0:
        return f"np.empty({shape_expr(arr.shape)}, {dt})"
    flat = arr.reshape(-1)
    bits = flat.view(f"u{arr.dtype.itemsize}")
    if flat.size and bool(np.all(bits == bits[0])):
        return f"np.full({shape_expr(arr.shape)}, {scalar_expr(flat[0], arr.dtype)}, {dt})"
    if arr.size <= 64:
        return f"np.array({_nested(arr)}, {dt})"
    data = np.ascontiguousarray(arr).tobytes().hex()
    return f'np.frombuffer(bytes.fromhex("{data}"), {dt}).reshape({shape_expr(arr.shape)})'


def _nested(arr: np.ndarray) -> str:
    if arr.ndim == 1:
        return "[" + ", ".join(scalar_expr(x, arr.dtype) for x in arr) + "]"
    return "[" + ", ".join(_nested(sub) for sub in arr) + "]"


_PLAIN = re.compile(r"[A-Za-z0-9_.$-]*\Z")


def display(name: str) -> str:
    """An IR name safe inside a generated comment or docstring (quoted if unusual)."""
    return name if _PLAIN.match(name) else repr(name).replace('"', "\\x22")


def identifier(hint: str | None, fallback: str) -> str:
    """``hint`` as a Python identifier that does not start with ``_`` (kept for generated names)."""
    if hint is None or not hint:
        return fallback
    text = re.sub(r"[^A-Za-z0-9_]", "_", hint)
    if not _IDENT.match(text) or text.startswith("_"):
        text = "v" + text
    if keyword.iskeyword(text) or keyword.issoftkeyword(text):
        text += "_"
    return text


@dataclass
class Writer:
    """Lines of Python source with an indentation level."""

    lines: list[str] = field(default_factory=list[str])
    level: int = 0

    def line(self, text: str = "") -> None:
        self.lines.append("    " * self.level + text if text else "")

    def comment(self, text: str) -> None:
        for part in text.splitlines():
            self.line(f"# {part}")

    @contextmanager
    def indent(self) -> Generator[None]:
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1

    def extend(self, other: Writer) -> None:
        self.lines.extend("    " * self.level + ln if ln else "" for ln in other.lines)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass
class FillPool:
    """Module-level constant blocks (``np.zeros``/``np.full``) for the fast ``np.maximum(x, block)``."""

    blocks: dict[tuple[tuple[int, ...], str, str], str] = field(
        default_factory=dict[tuple[tuple[int, ...], str, str], str]
    )

    values: dict[str, float] = field(default_factory=dict[str, float])
    """Each block's value (a Python int, float or bool: an integer exact beyond 2**53)."""

    def add(self, shape: tuple[int, ...], dtype: np.dtype[np.floating], value: float) -> str:
        key = (shape, dtype.str, repr(value))
        name = self.blocks.get(key)
        if name is None:
            prefix = "_Z" if key[2] == "0.0" else "_F"
            name = f"{prefix}{len(self.blocks)}"
            self.blocks[key] = name
            self.values[name] = value
        return name

    def definitions(self) -> Iterator[str]:
        for (shape, dt, text), name in self.blocks.items():
            dtype, value = np.dtype(dt), self.values[name]
            if text == "0.0":
                yield f"{name} = np.zeros({shape_expr(shape)}, {dtype_expr(dtype)})"
            else:
                v = scalar_expr(value, dtype)
                yield f"{name} = np.full({shape_expr(shape)}, {v}, {dtype_expr(dtype)})"
