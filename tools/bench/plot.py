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
    names = list(dict.fromkeys(row["purgatory"] for row in result.rows))
    for name in names:
        rows = sorted((r for r in result.rows if r["purgatory"] == name),
                      key=lambda r: r["target_outstanding"])
        xs = [r["target_outstanding"] for r in rows]
        line = ops_ax.plot(xs, [r["ops_per_s"] for r in rows], marker="o", label=name)[0]
        mem_rows = [r for r in rows if r["peak_mb"] is not None]
        mem_ax.plot([r["target_outstanding"] for r in mem_rows], [r["peak_mb"] for r in mem_rows],
                    marker="o", color=line.get_color(), label=name)
        for ax, key in ((ops_ax, "ops_per_s"), (mem_ax, "peak_mb")):
            partial = [r for r in rows if r["partial"] and r[key] is not None]
            if partial:  # hollow markers: stopped by the time budget, not at the target size
                ax.plot([r["target_outstanding"] for r in partial], [r[key] for r in partial],
                        linestyle="none", marker="o", markersize=11, markerfacecolor="none",
                        color=line.get_color())
    ops_ax.set(xscale="log", yscale="log", xlabel="outstanding operations",
               ylabel="operations / s (add + complete + expire)", title="Throughput")
    mem_ax.set(xscale="log", yscale="log", xlabel="outstanding operations",
               ylabel="peak traced memory (MiB)", title="Peak memory (tracemalloc)")
    for ax in (ops_ax, mem_ax):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    suffix = " (--quick: no timing claims)" if not result.summary.get("timing_claims", True) else ""
    fig.suptitle("Purgatories on Kafka's purgatory workload" + suffix + "; hollow = partial run")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
