"""Targets: what tiled ``kernel`` IR becomes.

- :mod:`tdsl.backend.numpy`: generated Python on NumPy (the ``numpy`` target);
- :mod:`tdsl.backend.llvm`: loops (``tdsl-lower-to-loops``), then xDSL's ``llvm``
  dialect (``tdsl-convert-to-llvm``), then LLVM IR (the ``llvm`` target);
- :mod:`tdsl.backend.dot`: the fusion plan as a Graphviz graph (the ``dot`` target).

The backends do not import each other.  Running the code they make is
:mod:`tdsl.runtime`'s (native code) and :mod:`tdsl.backend.numpy.load`'s (Python).
"""
