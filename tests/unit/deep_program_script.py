"""``benchmarks/deep_programs.py`` as a module: the long programs the tests compile (the
benchmark times the 10,000-op and 2,000-op ones)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "deep_programs.py"


def deep_programs() -> ModuleType:
    """The benchmark script, loaded once."""
    found = sys.modules.get("tdsl_deep_programs")
    if found is not None:
        return found
    spec = importlib.util.spec_from_file_location("tdsl_deep_programs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
