"""Running native code: compiling LLVM IR with llvmlite and loading it
(:mod:`.compile`), calling it on NumPy arrays over threads (:mod:`.native`), and
binding matrix products to the BLAS NumPy links (:mod:`.blas`).

:class:`tdsl.runtime.native.NativeProgram` lowers a tiled module with the LLVM
backend's passes, and :class:`~tdsl.runtime.native.StridedVariants` lowers again
at call time for an input's strides; loading cached object code needs neither
xDSL nor the backend.
"""
