"""Source locations of ops, for the messages passes give.

Passes report where an op came from as ``file:line:col`` from its ``loc(...)``;
they never read files.  The drivers know the input text and add the source
line and the caret (``tdsl-opt`` places an error by its ``op`` first).
"""

from __future__ import annotations

from typing import cast

from xdsl.dialects.builtin import ArrayAttr, CallSiteLoc, FileLineColLoc, FusedLoc
from xdsl.ir import Attribute, Operation

from tdsl.errors import SourceLocation


def _file_loc(loc: Attribute) -> FileLineColLoc | None:
    while isinstance(loc, CallSiteLoc | FusedLoc):
        if isinstance(loc, CallSiteLoc):
            loc = loc.callee
            continue
        inner = cast(ArrayAttr[Attribute], loc.locations).data
        found = next(
            (candidate for candidate in inner if isinstance(candidate, FileLineColLoc)), None
        )
        if found is None:
            return None
        loc = found
    return loc if isinstance(loc, FileLineColLoc) else None


def op_location(*ops: Operation) -> SourceLocation | None:
    """The ``loc(...)`` of the first of ``ops`` that has a file location."""
    for op in ops:
        loc = _file_loc(op.location)
        if loc is not None:
            return SourceLocation(loc.filename.data, loc.line.data, max(1, loc.column.data))
    return None


__all__ = ["op_location"]
