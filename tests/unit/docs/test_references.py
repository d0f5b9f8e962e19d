"""What the docs and the examples say about the repository holds: the files they
cite exist, and an example's comment matches what the compiler does with it."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

from tdsl.frontend import to_tensordsl
from tdsl.tools.gen_reference import checkout_docs, main
from tdsl.transforms.fuse import fusion_report

ROOT = Path(__file__).resolve().parents[3]

_CITED = re.compile(r"`([\w./-]+\.(?:md|py|tdsl|toml))`")


def _texts() -> list[tuple[Path, str]]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    sources = sorted((ROOT / "tdsl").rglob("*.py")) + sorted((ROOT / "benchmarks").rglob("*.py"))
    return [(path, path.read_text()) for path in [*pages, *sources]]


def test_cited_files_exist() -> None:
    names = {p.name for p in ROOT.rglob("*") if ".venv" not in p.parts and ".git" not in p.parts}
    missing: list[str] = []
    for path, text in _texts():
        for cited in _CITED.findall(text):
            exists = (ROOT / cited).exists() or Path(cited).name in names
            if not exists and not cited.startswith(("model.", "walk.", "norm.", "parts.")):
                missing.append(f"{path.relative_to(ROOT)} cites `{cited}`")
    # files the pages create for their own commands (<!-- file: ... -->) are not in the tree
    created = {
        m for _, text in _texts() for m in re.findall(r"<!--\s*file:\s*([\w.-]+)\s*-->", text)
    }
    missing = [m for m in missing if m.split("`")[1] not in created]
    assert not missing, missing


def test_mlp_example_comment_matches_its_fusion() -> None:
    path = ROOT / "examples" / "mlp.tdsl"
    text = path.read_text()
    report = fusion_report(to_tensordsl(text, filename=str(path)))
    assert len(report.groups) == 1
    assert "Both layers fuse into one group" in text


def test_gen_reference_finds_the_checkout_docs() -> None:
    assert checkout_docs() == ROOT / "docs"


def test_gen_reference_refuses_an_installed_package(tmp_path: Path) -> None:
    # an installed tdsl sits in site-packages, next to another project's docs/
    site = tmp_path / "site-packages"
    (site / "tdsl").mkdir(parents=True)
    (site / "docs").mkdir()
    assert checkout_docs(site / "tdsl") is None
    (site / "pyproject.toml").write_text('[project]\nname = "xdsl"\n')
    assert checkout_docs(site / "tdsl") is None


def test_gen_reference_writes_where_told(tmp_path: Path) -> None:
    assert main(["--docs", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dialects.md", "passes.md"]
    assert main(["--docs", str(tmp_path), "--check"]) == 0


def test_gen_reference_leaves_unchanged_files_untouched(tmp_path: Path) -> None:
    # the JIT's cache on disk keys kernels by the modification times of tdsl's sources:
    # regenerating an unchanged tdsl/lang.py must not change them under running tests
    from tdsl.tools.gen_reference import lang_path

    before = lang_path().stat().st_mtime_ns
    assert main(["--docs", str(tmp_path)]) == 0
    written = (tmp_path / "passes.md").stat().st_mtime_ns
    assert main(["--docs", str(tmp_path)]) == 0
    assert lang_path().stat().st_mtime_ns == before
    assert (tmp_path / "passes.md").stat().st_mtime_ns == written


def test_benchmark_tables_are_those_of_the_charted_run() -> None:
    """docs/benchmarks.md's tables are what ``benchmarks/report.py`` makes of the run
    whose JSON sits beside the chart (``docs/images/benchmarks.json``): a new run
    updates the tables, the chart and the JSON together."""
    spec = importlib.util.spec_from_file_location(
        "tdsl_benchmarks_report", ROOT / "benchmarks" / "report.py"
    )
    assert spec is not None and spec.loader is not None
    report = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = report
    spec.loader.exec_module(report)
    data = json.loads((ROOT / "docs" / "images" / "benchmarks.json").read_text())
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    large, small = report.split_workloads(data)
    tables = [
        report.table(data, large, report.large_columns(data["config"]["threads"])),
        report.triad_table(data),
        report.table(data, small, report.SMALL_COLUMNS),
    ]
    for t in tables:
        assert t and t in page, t.splitlines()[2]
    assert "](images/benchmarks.svg)" in page and (ROOT / "docs/images/benchmarks.svg").exists()
