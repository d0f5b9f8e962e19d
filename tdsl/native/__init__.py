"""The native target: tiled IR to loops, to LLVM, to machine code (see docs/native.md)."""
