"""The pieces of the ``numpy`` target (see :mod:`tdsl.backend.numpy.target`).

- :mod:`.layout`: how each dimension of a value follows the tile loops;
- :mod:`.program`: the values of generated code, and the builder ops lower through;
- :mod:`.blocking`: the tile sizes, threads and whole-array ops actually run;
- :mod:`.source`: Python source writing, identifier and constant pools;
- :mod:`.group`: code for one group (straight-line, or loops running its schedule);
- :mod:`.module`: code for a whole module, one Python function per ``func.func``;
- :mod:`.load`: running generated code (no xDSL needed).
"""
