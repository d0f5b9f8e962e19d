// `--help` lists the pass flags (tdsl's passes with their short names, and
// canonicalize/cse/dce), the tdsl options, and every registered pass under -p.

// RUN: env COLUMNS=100000 tdsl-opt --help | filecheck %s

// CHECK: usage: tdsl-opt
// CHECK: -p PASSES, --passes PASSES
// CHECK: Available passes are:{{.*}}tdsl-fuse
// CHECK: --expr EXPRESSION
// CHECK: --shape NAME=DIMSxDTYPE
// CHECK: --explain-fusion
// CHECK: pass flags:
// CHECK: Each registered pass can be given as --<pass>[=<options>]
// CHECK: --fuse, --tdsl-fuse
// CHECK: --tile, --tdsl-tile
// CHECK: --canonicalize
// CHECK: --cse
// CHECK: --dce
