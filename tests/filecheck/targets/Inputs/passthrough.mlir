builtin.module {
  llvm.func @f() attributes {passthrough = ["noinline"]} {
    llvm.return
  }
}
