"""The purgatory benchmark's picture: throughput and peak memory against outstanding operations.

matplotlib is the `bench` extra; the Agg backend draws without a display (CI, ssh).
"""

from __future__ import annotations

from pathlib import Path

from kgc.tools.bench.result import BenchResult


def plot_purgatory(result: BenchResult, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ops_ax, mem_ax) = plt.subplots(1, 2, figsize=(11, 4.2))

    def series(row: dict) -> str:
        # timed passes with the collector off (--gc off/both) are a series of their own
        return row["purgatory"] if row.get("gc", "on") == "on" else f"{row['purgatory']} (gc off)"

    names = list(dict.fromkeys(series(row) for row in result.rows))
    for name in names:
        rows = sorted((r for r in result.rows if series(r) == name), key=lambda r: r["target_outstanding"])
        color = None
        for ax, key in ((ops_ax, "ops_per_s"), (mem_ax, "peak_mb")):
            done = [r for r in rows if not r["partial"] and r[key] is not None]
            line = ax.plot(
                [r["target_outstanding"] for r in done], [r[key] for r in done], marker="o", color=color, label=name
            )[0]
            color = line.get_color()
            # A run stopped by its time budget is drawn hollow, at the outstanding count it
            # reached rather than at the target it never got to.
            partial = [r for r in rows if r["partial"] and r[key] is not None]
            if partial:
                ax.plot(
                    [r["max_outstanding"] for r in partial],
                    [r[key] for r in partial],
                    linestyle="none",
                    marker="o",
                    markersize=8,
                    markerfacecolor="none",
                    color=color,
                    label=f"{name} (partial)",
                )
    ops_ax.set(
        xscale="log",
        yscale="log",
        xlabel="outstanding operations",
        ylabel="operations / s (add + complete + expire)",
        title="Throughput",
    )
    mem_ax.set(
        xscale="log",
        yscale="log",
        xlabel="outstanding operations",
        ylabel="peak traced memory (MiB)",
        title="Peak memory (tracemalloc)",
    )
    for ax in (ops_ax, mem_ax):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    suffix = " (--quick: no timing claims)" if not result.summary.get("timing_claims", True) else ""
    fig.suptitle(
        "Purgatories on Kafka's purgatory workload"
        + suffix
        + "; hollow = stopped by its time budget, at the outstanding count reached"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
