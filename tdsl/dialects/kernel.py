"""The ``kernel`` dialect: fusion groups and their tiled schedules.

``kernel`` only holds structure; the compute inside stays ``tensordsl`` (or any
op implementing the structured-op interface, see
:mod:`tdsl.dialects.structured`).

* ``kernel.fused`` is a group of ops that run as one kernel.  Its operands are
  the group's inputs, its results the only values it materializes; its body
  computes on whole tensors and ends in ``kernel.yield``.
* ``kernel.tile`` is a fused group scheduled as loops over tiles of its
  *iteration space*.  For every operand and result an affine map says which
  slice of it a tile touches; the iterator kind of each space dim and the
  scratch buffers one tile allocates are recorded, so a target reads them
  instead of deriving them (see :class:`TileOp` and
  :mod:`tdsl.dialects.kernel_plan`).

Both are isolated from above: everything the body reads is an operand.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from tdsl.dialects.kernel_fused import FusedOp, GroupOp, YieldOp, buffer_type, dim_map
from tdsl.dialects.kernel_tile import TileOp
from tdsl.dialects.structured import map_dims

Kernel = Dialect("kernel", [FusedOp, TileOp, YieldOp], [])

__all__ = [
    "FusedOp",
    "GroupOp",
    "Kernel",
    "TileOp",
    "YieldOp",
    "buffer_type",
    "dim_map",
    "map_dims",
]
