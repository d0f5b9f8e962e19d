"""No source file of tdsl is longer than 600 lines (issue 17): a longer one is split by
what it holds."""

from __future__ import annotations

from pathlib import Path

MAX_LINES = 600
PACKAGE = Path(__file__).resolve().parents[2] / "tdsl"


def _too_long() -> list[str]:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        with path.open(encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines > MAX_LINES:
            found.append(f"{path.relative_to(PACKAGE.parent)}: {lines} lines")
    return found


def test_no_file_is_longer_than_600_lines() -> None:
    too_long = _too_long()
    assert not too_long, f"files over {MAX_LINES} lines:\n" + "\n".join(too_long)
