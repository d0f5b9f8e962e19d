"""The pieces of the ``numpy`` target (see :mod:`tdsl.lowering.numpy_target`).

- :mod:`.layout`: how each dimension of a value follows the tile loop;
- :mod:`.program`: tensordsl ops lowered to NumPy calls with ``out=`` operands;
- :mod:`.alloc`: liveness and buffer assignment (scratch reuse, in-place ops);
- :mod:`.schedule`: the tile sizes, threads and matmul hoisting actually run;
- :mod:`.source`: Python source writing, identifier and constant pools;
- :mod:`.group`: code for one group (straight-line or a loop over tiles);
- :mod:`.module`: code for a whole module, one Python function per ``func.func``.
"""
