"""Passes from ``tensordsl`` IR to ``kernel`` IR, and the analyses they share.

- :mod:`.fuse` (``tdsl-fuse``) over :mod:`.fusion_analysis`: ops into fusion groups
  under a memory budget, and the fusion report;
- :mod:`.tile` (``tdsl-tile``): a group's tiles and passes;
- :mod:`.iteration_space`: the dims of a group and how its ops read them;
- :mod:`.locations`: source locations of ops, for remarks.

Nothing here knows a target: the backends (:mod:`tdsl.backend`) read the tiled IR.
"""
