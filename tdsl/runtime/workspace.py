"""A native function's workspace: every buffer a call uses besides its inputs, its
outputs and its constants, laid out in one allocation that the function keeps for its
next call.

What a call needs there (:class:`WorkspaceLayout`):

- the values passed between groups (``tmp`` arguments), each in a slot of its own;
- the groups' scratch, in one arena that they share, as they run one after the other:
  a group's scratch lives only while its call runs (the memory promise counts one
  group's scratch at a time; each in a buffer of its own, a GPT-2 block's scratch came
  to 10 MiB past its budget).  A scratch argument no group call or more than one names
  keeps a slot of its own;
- the scratch of the threads past the first of a group that shares its tiles among
  threads: the copies of that group's scratch only, after the arena, one group's at a
  time as well.

So a call's buffers are the same bytes as when each was allocated on its own, no more
(and the threads' copies are of their group's scratch alone).

Allocating them on every call cost more than the work in a fresh process: a buffer
above glibc's ``mmap`` threshold (128 KiB until a larger block has been freed) is
mapped for the call and unmapped after it, so each call faulted its pages in again. A
GPT-2 block on inputs created in f32 took 5,596 page faults per call and 63.5 ms; with
its workspace kept, 2 and 47.6 ms (``python benchmarks/workspace.py``, one run at each
commit).  So a
function keeps its workspace between calls (:class:`Workspace`), as many as calls have
been in flight at once, if it is at most :data:`RETAIN_MAX` bytes: memory a kernel holds while it
exists, as it holds its code.  :func:`release_workspaces` frees the kept ones (a call
then allocates its workspace again).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tdsl.runtime.plan import _Arg, _Call  # pyright: ignore[reportPrivateUsage]

ALIGN = 64
"""Byte alignment of each slot (a cache line, and what AVX-512 loads prefer)."""

RETAIN_MAX = 64 << 20
"""The largest workspace (bytes) a function keeps for its next call; a larger one is
allocated for each call and freed after it."""


def _aligned(size: int) -> int:
    return -(-size // ALIGN) * ALIGN


class WorkspaceLayout:
    """Where each buffer of a call lies in its workspace (byte offsets)."""

    def __init__(
        self, args: Sequence[_Arg], calls: Sequence[_Call], threads: Sequence[int]
    ) -> None:
        """The layout for a function of ``args`` whose main function makes ``calls``,
        call ``n`` splitting its tiles over ``threads[n]`` threads."""

        def nbytes(i: int) -> int:
            return math.prod(args[i].shape) * args[i].dtype.itemsize

        owners: dict[int, set[int]] = {}
        for n, call in enumerate(calls):
            for x in call.operands:
                if isinstance(x, int) and args[x].role == "scratch":
                    owners.setdefault(x, set()).add(n)
        by_call: dict[int, list[int]] = {}
        for i, names in sorted(owners.items()):
            if len(names) == 1:
                by_call.setdefault(next(iter(names)), []).append(i)
        shared = {i for members in by_call.values() for i in members}
        self.slots: list[tuple[int, int]] = []
        """(argument, offset) of every buffer of the first thread."""
        at = 0
        for i, a in enumerate(args):
            if a.role == "tmp" or (a.role == "scratch" and i not in shared):
                self.slots.append((i, at))
                at += _aligned(nbytes(i))
        arena_start, arena = at, 0
        strides: dict[int, tuple[int, dict[int, int]]] = {}
        for n, members in by_call.items():
            offsets: dict[int, int] = {}
            size = 0
            for i in members:
                offsets[i] = size
                size += _aligned(nbytes(i))
            self.slots.extend((i, arena_start + off) for i, off in offsets.items())
            arena = max(arena, size)
            strides[n] = (size, offsets)
        self.arena = arena
        """The bytes of the groups' shared scratch."""
        extra_start = arena_start + arena
        self.extra: dict[int, list[dict[int, int]]] = {}
        """Per call that splits its tiles, per thread past the first: the offset of each
        of the call's scratch arguments' copies (a scratch argument of its own slot
        gets a copy of the same size after those of the shared ones)."""
        extra = 0
        for n, call in enumerate(calls):
            if threads[n] <= 1:
                continue
            size, shared_offsets = strides.get(n, (0, {}))
            offsets = dict(shared_offsets)
            for i in dict.fromkeys(x for x in call.operands[2:] if isinstance(x, int)):
                if args[i].role == "scratch" and i not in offsets:
                    offsets[i] = size
                    size += _aligned(nbytes(i))
            self.extra[n] = [
                {i: extra_start + t * size + off for i, off in offsets.items()}
                for t in range(threads[n] - 1)
            ]
            extra = max(extra, size * (threads[n] - 1))
        self.nbytes = extra_start + extra
        """The workspace's bytes."""


_KEPT: weakref.WeakSet[Workspace] = weakref.WeakSet()


class Workspace:
    """A function's workspace of :class:`WorkspaceLayout`, kept between calls: a call
    takes a kept one or allocates one (:meth:`take`) and gives it back when it returns
    (:meth:`give`); calls in flight at once each have their own."""

    def __init__(self, layout: WorkspaceLayout) -> None:
        self.layout = layout
        self._spare: list[tuple[np.ndarray[Any, Any], int]] = []
        self._lock = threading.Lock()
        self._busy = 0
        self._most = 0
        """The most calls in flight at once so far: as many workspaces are kept (Dask's
        threads call one kernel on their chunks at once)."""
        _KEPT.add(self)

    def take(self) -> tuple[np.ndarray[Any, Any], int]:
        """A workspace (the array that owns its memory) and its first byte's address,
        aligned to :data:`ALIGN`."""
        with self._lock:
            self._busy += 1
            self._most = max(self._most, self._busy)
            if self._spare:
                return self._spare.pop()
        memory = np.empty(self.layout.nbytes + ALIGN, np.uint8)
        address = memory.ctypes.data
        return memory, address + (-address) % ALIGN

    def give(self, workspace: tuple[np.ndarray[Any, Any], int]) -> None:
        """Keep ``workspace`` for a next call, if it is small enough and fewer are kept
        than calls have been in flight at once."""
        with self._lock:
            self._busy -= 1
            if self.layout.nbytes <= RETAIN_MAX and len(self._spare) < self._most:
                self._spare.append(workspace)

    def kept(self) -> list[np.ndarray[Any, Any]]:
        """The workspaces kept for next calls, as bytes."""
        with self._lock:
            return [memory for memory, _ in self._spare]

    def release(self) -> None:
        """Free the kept workspace."""
        with self._lock:
            self._spare.clear()


def release_workspaces() -> None:
    """Free the workspaces every native function keeps for its next call (each call
    after this allocates its own again, as the first did)."""
    for workspace in list(_KEPT):
        workspace.release()


__all__ = ["ALIGN", "RETAIN_MAX", "Workspace", "WorkspaceLayout", "release_workspaces"]
