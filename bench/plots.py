"""The benchmark's figures: one PNG per `Point.figure` in bench/plots/, drawn with
matplotlib's Agg backend (no display). A figure whose x values vary (partitions) gets a
line per series; a figure with one x per series (a scan's throughput beside the
reference's) gets bars side by side."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bench.common import REPO, Point, Row

PLOTS = REPO / "bench" / "plots"

TITLES = {
    "planning": "Planning time against partitions (2 groups)",
    "purge": "RecordPurge time against partitions",
    "scan": "Scan throughput beside the reference",
    "erasure_scan": "Erasure scan time against records (10,000 digests)",
    "synthetic": "Spark transforms on synthetic partitions (no Kafka)",
    "footprint": "Operator footprint against policies",
    "memory": "Operator peak memory against partitions planned in process",
}


def by_figure(rows: Iterable[Row]) -> dict[str, dict[str, list[Point]]]:
    """figure -> series -> its points sorted by x (series in the order they first appear;
    rows that repeat a series' point at the same x, such as a reference measured once and
    carried by several rows, count once: the last)."""
    found: dict[str, dict[str, dict[float, Point]]] = {}
    for row in rows:
        for p in row.points:
            found.setdefault(p.figure, {}).setdefault(p.series, {})[p.x] = p
    return {
        figure: {name: sorted(at.values(), key=lambda p: p.x) for name, at in series.items()}
        for figure, series in found.items()
    }


def _label(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def is_line(series: dict[str, list[Point]]) -> bool:
    """A line plot when some series has points at two or more x values."""
    return any(len({p.x for p in pts}) > 1 for pts in series.values())


def draw(rows: Iterable[Row], into: Path = PLOTS) -> list[Path]:
    """Write bench/plots/<figure>.png for every figure the rows carry; their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    into.mkdir(parents=True, exist_ok=True)
    written = []
    for figure, series in sorted(by_figure(rows).items()):
        first = next(iter(series.values()))[0]
        fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
        if is_line(series):
            for name, pts in series.items():
                ax.plot([p.x for p in pts], [p.y for p in pts], marker="o", label=name)
            ax.set_xlabel(first.x_label)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
            ax.set_ylim(bottom=0)
        else:
            names = list(series)
            values = [series[n][-1].y for n in names]
            bars = ax.bar(range(len(names)), values, color=[f"C{i}" for i in range(len(names))])
            ax.bar_label(bars, labels=[_label(v) for v in values])
            ax.set_xticks(range(len(names)), names, fontsize=8)
            ax.set_xlabel(f"{first.x_label}: {first.x:,.0f}")
        ax.set_ylabel(first.y_label)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: _label(y)))
        ax.set_title(TITLES.get(figure, figure))
        ax.grid(alpha=0.3)
        if is_line(series):
            ax.legend(fontsize=8)
        fig.tight_layout()
        path = into / f"{figure}.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written
