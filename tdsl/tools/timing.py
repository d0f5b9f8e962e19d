"""``--time-passes``: wall time of each phase of a ``tdsl-opt`` run, as MLIR reports it.

The phases are, in order: reading the input, the frontend (parsing MLIR,
lowering a ``.tdsl`` program or an ``--expr``), each pass of the pipeline (one
line per position, so a pass run twice has two lines), the verifier (every
verification between passes, added up), and the target.  With
``--split-input-file`` each line adds up the chunks.  The report goes to
stderr after the output, so it never mixes with IR piped to another tool::

    ===-------------------------------------------------------------------------===
                             ... Execution time report ...
    ===-------------------------------------------------------------------------===
      Total Execution Time: 0.0123 seconds

      ----Wall Time----  ----Name----
        0.0004 (  3.3%)  input
        ...
        0.0123 (100.0%)  Total
"""

from __future__ import annotations

import time
from collections.abc import Generator
from contextlib import contextmanager

_RULE = "===" + "-" * 73 + "==="


class PhaseTimes:
    """Wall time per phase, in the order the phases first ran."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self._seconds[name] = self._seconds.get(name, 0.0) + seconds

    @contextmanager
    def phase(self, name: str) -> Generator[None]:
        """Time the ``with`` body as ``name``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def report(self) -> str:
        """The MLIR-style report; the total is the sum of the phases."""
        total = sum(self._seconds.values())
        lines = [
            _RULE,
            "... Execution time report ...".center(len(_RULE)).rstrip(),
            _RULE,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for name, seconds in [*self._seconds.items(), ("Total", total)]:
            share = 100.0 * seconds / total if total > 0 else 0.0
            lines.append(f"  {seconds:8.4f} ({share:5.1f}%)  {name}")
        return "\n".join(lines) + "\n"


__all__ = ["PhaseTimes"]
