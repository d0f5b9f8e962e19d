"""Tables and charts of one run of ``benchmarks/run.py``, from its JSON results.

    python benchmarks/run.py --json results.json --markdown tables.md --plot chart.svg
    python benchmarks/report.py results.json --markdown tables.md --plot chart.svg

The first form writes the tables and the chart from the run it just made; the second
redraws them from a saved run. Both read the same JSON data (``run.to_json``), so a
table and the chart beside it always show the same samples. The tables are the
"Large arrays" and "64x64" tables of ``docs/benchmarks.md``: medians, and in
parentheses eager NumPy's median over that median. The chart shows the same ratios
on a log scale. Drawing needs matplotlib (``pip install -e '.[plot]'``); the tables
do not.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

Row = dict[str, Any]
Pick = Callable[[list[Row]], "Row | None"]


def _one(kind: str, target: str | None = None, threads: int | None = None) -> Pick:
    def pick(rows: list[Row]) -> Row | None:
        for r in rows:
            if (
                r["kind"] == kind
                and (target is None or r["target"] == target)
                and (threads is None or r["threads"] == threads)
            ):
                return r
        return None

    return pick


def _best(kind: str) -> Pick:
    """The fastest (by median) of a peer's thread counts."""

    def pick(rows: list[Row]) -> Row | None:
        found = [r for r in rows if r["kind"] == kind]
        return min(found, key=lambda r: r["median_s"]) if found else None

    return pick


def _default_threads(rows: list[Row]) -> int:
    counts = [r["threads"] for r in rows if r["kind"] == "compiled" and r["threads"]]
    return max(counts, default=1)


def large_columns(threads: Sequence[int]) -> list[tuple[str, Pick]]:
    """The large-array table's columns after eager NumPy."""
    top = max(threads)
    cols: list[tuple[str, Pick]] = [
        (f"tdsl native, {t} thread{'s' if t > 1 else ''}", _one("compiled", "native", t))
        for t in threads
    ]
    cols.append((f"tdsl numpy target, {top} threads", _one("compiled", "numpy", top)))
    cols += [("jax.jit", _one("jax")), ("numba", _best("numba")), ("numexpr", _best("numexpr"))]
    return cols


SMALL_COLUMNS: list[tuple[str, Pick]] = [
    ("tdsl native", _one("compiled", "native")),
    ("tdsl numpy target", _one("compiled", "numpy")),
    ("tdsl `auto`", _one("compiled", "auto")),
    ("jax.jit", _one("jax")),
    ("numba", _best("numba")),
    ("numexpr", _best("numexpr")),
]


def fmt_time(seconds: float, digits: int = 2) -> str:
    """``1.23 s``, ``4.56 ms`` or ``7.8 us`` (``digits`` after the point in seconds)."""
    if seconds >= 1:
        return f"{seconds:.{digits}f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def _label(key: str, data: dict[str, Any]) -> str:
    exprs = data.get("exprs", {})
    return f"`{exprs[key]}`" if key in exprs else key


def split_workloads(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The run's workload keys, large ones first, in the run's order."""
    keys, small = list(data["workloads"]), set(data.get("small_keys", ()))
    return [k for k in keys if k not in small], [k for k in keys if k in small]


def table(data: dict[str, Any], keys: Sequence[str], columns: Sequence[tuple[str, Pick]]) -> str:
    """A markdown table: one row per workload, eager NumPy's median, then each column's
    median with eager's median over it in parentheses (``n/a`` where it did not run)."""
    head = ["workload", "eager NumPy", *(name for name, _ in columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        rows = data["workloads"][key]
        eager = next(r for r in rows if r["kind"] == "eager")
        cells = [f"{_label(key, data)} {_shape_tag(key)}", fmt_time(eager["median_s"])]
        for _, pick in columns:
            r = pick(rows)
            if r is None:
                cells.append("n/a")
                continue
            cell = f"{fmt_time(r['median_s'])} ({eager['median_s'] / r['median_s']:.2f}x)"
            if r["kind"] == "compiled" and r["target"] == "auto":
                cell += f", {data.get('auto_targets', {}).get(key, '?')}"
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _shape_tag(key: str) -> str:
    """``2048² f32`` from ``ew_f32_2048x2048``; the matmul's dims as they are."""
    parts = key.split("_")
    dims = parts[-1].split("x")
    shape = f"{dims[0]}²" if len(dims) == 2 and dims[0] == dims[1] else parts[-1]
    return f"{shape} {parts[1]}"


_ITEMSIZE = {"f16": 2, "f32": 4, "f64": 8, "i64": 8, "i32": 4, "u8": 1}


def triad_table(data: dict[str, Any]) -> str:
    """The element-wise chain written into ``out=`` against the streaming triad: the
    chain moves five arrays' bytes (four reads, one write), the triad three; the last
    column is the chain's bytes per second over the triad's (the faster triad)."""
    lines = [
        "| workload, `out=` | time (eager / time) | triad | bandwidth / triad's |",
        "|---|---|---|---|",
    ]
    for key, rows in data["workloads"].items():
        out = next((r for r in rows if r["kind"] == "compiled_out"), None)
        triads = [r for r in rows if r["kind"] == "triad"]
        if out is None or not triads:
            continue
        eager = next(r for r in rows if r["kind"] == "eager")
        triad = min(triads, key=lambda r: r["median_s"])
        ratio = (5 / out["median_s"]) / (3 / triad["median_s"])
        lines.append(
            f"| {_label(key, data)} {_shape_tag(key)}, {out['threads']} threads | "
            f"{fmt_time(out['median_s'])} ({eager['median_s'] / out['median_s']:.2f}x) | "
            f"{fmt_time(triad['median_s'])} | {ratio:.2f} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""


def markdown(data: dict[str, Any]) -> str:
    """The tables of ``docs/benchmarks.md`` (large arrays, the chain against the triad,
    64x64), with the run's environment above them."""
    large, small = split_workloads(data)
    env = data["environment"]
    threads = data["config"]["threads"]
    peers = ", ".join(f"{p} {env[p]}" for p in ("numexpr", "jax", "numba") if env.get(p))
    load = env.get("load_average") or []
    out = [
        f"<!-- benchmarks/report.py from one {data['mode']} run: Python {env['python']}, "
        f"NumPy {env['numpy']}{', ' + peers if peers else ''}; {env['cpu']}, "
        f"{env['cpu_count']} CPUs; load average "
        f"{' '.join(f'{x:.1f}' for x in load)} at the start -->",
    ]
    if large:
        out += ["", "Large arrays, medians:", "", table(data, large, large_columns(threads))]
    triads = triad_table(data)
    if triads:
        out += ["", "The element-wise chain against a streaming triad:", "", triads]
    if small:
        out += ["", "Small arrays, medians of batches:", "", table(data, small, SMALL_COLUMNS)]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- the chart


def _default(target: str) -> Pick:
    """A compiled kernel of ``target`` at the run's largest (the default) thread count."""

    def pick(rows: list[Row]) -> Row | None:
        return _one("compiled", target, _default_threads(rows))(rows)

    return pick


SERIES: list[tuple[str, Pick, str]] = [
    ("tdsl native", _default("native"), "#1f5fa8"),
    ("tdsl numpy target", _default("numpy"), "#6fa8dc"),
    ("jax.jit", _one("jax"), "#e69138"),
    ("numba", _best("numba"), "#6aa84f"),
    ("numexpr", _best("numexpr"), "#999999"),
]
"""The chart's bars per workload: tdsl's targets at the default thread count, the
peers at their best."""


def require_matplotlib() -> None:
    """Exit with one line if matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit(
            "--plot needs matplotlib: pip install -e '.[plot]' (the tables need nothing)"
        ) from None


def _short_label(key: str, data: dict[str, Any]) -> str:
    text = _label(key, data).strip("`")
    if len(text) > 36:
        text = text[:33] + "..."
    return f"{text} {_shape_tag(key)}"


def plot(data: dict[str, Any], path: str) -> None:
    """Speedups over eager NumPy (eager median / median, log scale), one group of bars
    per workload, large arrays and 64x64 side by side; written to ``path`` (its suffix
    picks the format: ``.svg``, ``.png``, ...)."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: small, diffable files
    matplotlib.rcParams["svg.hashsalt"] = "tdsl"  # the same run draws the same file
    import matplotlib.pyplot as plt

    groups = [
        (keys, title)
        for keys, title in zip(split_workloads(data), ("large arrays", "small arrays"), strict=True)
        if keys
    ]
    per_row = 0.09 * len(SERIES) + 0.12  # inches per workload
    fig, axes = plt.subplots(
        len(groups),
        1,
        figsize=(9, sum(per_row * len(keys) + 0.9 for keys, _ in groups) + 0.4),
        gridspec_kw={"height_ratios": [len(keys) + 2 for keys, _ in groups]},
        squeeze=False,
    )
    width = 0.8 / len(SERIES)
    for ax, (keys, title) in zip(axes[:, 0], groups, strict=True):
        for i, (name, pick, color) in enumerate(SERIES):
            ys, xs = [], []
            for j, key in enumerate(keys):
                rows = data["workloads"][key]
                eager = next(r for r in rows if r["kind"] == "eager")
                r = pick(rows)
                if r is not None:
                    ys.append(j + (i - (len(SERIES) - 1) / 2) * width)
                    xs.append(eager["median_s"] / r["median_s"])
            if xs:
                # bars grow from 1 (as fast as eager NumPy): right is faster, left slower
                ax.barh(ys, [x - 1 for x in xs], left=1, height=width, color=color, label=name)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels([_short_label(k, data) for k in keys], fontsize=8)
        ax.set_ylim(len(keys) - 0.5, -0.5)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", which="both", alpha=0.3)
    axes[-1][0].set_xlabel("speedup over eager NumPy: eager's median / median (log scale)")
    axes[0][0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    env = data["environment"]
    fig.suptitle(
        f"tdsl vs eager NumPy and peers, one {data['mode']} run of benchmarks/run.py "
        f"({env['cpu']}, {env['cpu_count']} CPUs, NumPy {env['numpy']})",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None} if path.endswith(".svg") else None)
    plt.close(fig)


def write(data: dict[str, Any], markdown_path: str | None, plot_path: str | None) -> None:
    """Write the tables and/or the chart of one run's JSON data."""
    if markdown_path:
        with open(markdown_path, "w", encoding="utf-8") as f:
            f.write(markdown(data))
        print(f"wrote {markdown_path}")
    if plot_path:
        plot(data, plot_path)
        print(f"wrote {plot_path}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="JSON written by benchmarks/run.py --json")
    parser.add_argument("--markdown", metavar="PATH", help="write the tables to PATH ('-': stdout)")
    parser.add_argument("--plot", metavar="PATH", help="draw the chart to PATH (.svg, .png)")
    args = parser.parse_args(argv)
    with open(args.results, encoding="utf-8") as f:
        data = json.load(f)
    if args.markdown == "-":
        sys.stdout.write(markdown(data))
        args.markdown = None
    write(data, args.markdown, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
