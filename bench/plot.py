"""The benchmark figure: throughput with its spread, the stage profile, and the latency CDF.

``plot(result, path)`` draws from a ``bench.run`` result dict: per record size and system a bar
at the median of the rounds, a min-max bar and one dot per round (hatched: noisy, spread over
15%); the profile's stages per million records, exactly-once vs at-least-once, per record size
(``stage_profile.by_size``: results before issue 27 hold one profile); the latency CDF
from the full samples when present, else from the JSON's ``cdf_ms`` points; when the result has
``scaling``, a panel with its cells (median, min-max bar, one dot per round); when it has
``goals_27``, a last panel with every measured goal cell (``_goals``). A committed JSON
can be re-plotted: ``python -m bench.plot bench/results/<date>.json``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SYSTEMS = [("eos", "kafka-eos exactly-once", "#1f77b4"), ("eos_alo", "kafka-eos at-least-once", "#aec7e8"),
           ("spark_default", "Spark kafka, defaults", "#ff7f0e"), ("spark_tuned", "Spark kafka, tuned", "#ffbb78"),
           ("python_ceiling", "Python EOS loop (confluent-kafka)", "#2ca02c")]


def _bars(ax, rates: dict, ratios: dict, rounds: int) -> None:
    sizes = list(rates)
    width = 0.8 / len(SYSTEMS)
    for i, (key, label, color) in enumerate(SYSTEMS):
        xs = [s + (i - (len(SYSTEMS) - 1) / 2) * width for s in range(len(sizes))]
        runs = [rates[size][key] for size in sizes]
        medians = [r["median"] / 1000 for r in runs]
        bars = ax.bar(xs, medians, width * 0.9, label=label, color=color,
                      hatch=["//" if r["noisy"] else "" for r in runs], edgecolor="white")
        low = [m - r["min"] / 1000 for m, r in zip(medians, runs, strict=True)]
        high = [r["max"] / 1000 - m for m, r in zip(medians, runs, strict=True)]
        ax.errorbar(xs, medians, yerr=[low, high], fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
        for x, r in zip(xs, runs, strict=True):
            ax.plot([x] * len(r["samples"]), [v / 1000 for v in r["samples"]], "k.", ms=3)
        ax.bar_label(bars, labels=[f"{m:.0f}k" for m in medians], fontsize=6, padding=8)
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([f"{int(size):,} B records\neos/Spark default {ratios[size]['eos_vs_spark_default']['median']:.2f}, "
                        f"tuned {ratios[size]['eos_vs_spark_tuned']['median']:.2f}, "
                        f"ALO {ratios[size]['eos_vs_eos_alo']['median']:.2f}" for size in sizes], fontsize=7)
    ax.set_ylabel("thousand records / s (steady state)")
    ax.set_title(f"Kafka -> Spark -> Kafka throughput, trigger 5 s: median of {rounds} rounds,\n"
                 "min-max bar, one dot per round; hatched = noisy (spread > 15%)", fontsize=9)
    ax.legend(fontsize=6, loc="upper left")
    ax.margins(y=0.2)


def _profile(ax, profiles: dict[str, dict]) -> None:
    if not profiles:
        ax.set_axis_off()
        return
    from bench.stage_profile import STAGES
    colors = plt.get_cmap("tab10").colors
    runs = [(f"{size} B {label}", profile[key]) for size, profile in profiles.items()
            for label, key in (("exactly-once", "exactly_once"), ("at-least-once", "at_least_once"))]
    for y, (_, run) in enumerate(runs):
        left = 0.0
        for i, stage in enumerate(STAGES):
            value = run["s_per_million"][stage] or 0.0
            ax.barh(y, value, left=left, color=colors[i % len(colors)], label=stage if y == 0 else None)
            left += value
        ax.text(left, y, f" {left:.1f} s", va="center", fontsize=7)
    ax.set_yticks(range(len(runs)))
    ax.set_yticklabels([f"{label}\nbatch {run['batch']}, {run['records']:,} rec" for label, run in runs], fontsize=7)
    ax.set_xlabel("seconds per million records (task stages summed over tasks)")
    ax.set_title("Where the time of one steady-state batch goes", fontsize=9)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    ax.margins(x=0.15)


def _cdf(ax, latencies: list[dict]) -> None:
    if not latencies:
        ax.set_axis_off()
        return
    for run in [r for r in latencies if r.get("round", 0) == 0]:
        samples = run.get("_samples_ms")
        if samples:
            xs, ys = samples, [(i + 1) / len(samples) for i in range(len(samples))]
        else:
            xs, ys = [p[0] for p in run["cdf_ms"]], [p[1] for p in run["cdf_ms"]]
        ax.plot([x / 1000 for x in xs], ys,
                label=f"{run.get('format', 'kafka-eos')}, trigger {run['trigger_s']:g} s: "
                      f"p50 {run['p50'] / 1000:.2f} s, p99 {run['p99'] / 1000:.2f} s")
    ax.axhline(0.5, color="grey", lw=0.5, ls=":")
    ax.axhline(0.99, color="grey", lw=0.5, ls=":")
    rate = latencies[0]["rate_per_s"] if latencies else 0
    ax.set_title(f"End-to-end latency at {rate:,} rec/s, first round\n"
                 "(produce -> visible to a read_committed consumer)", fontsize=10)
    ax.set_xlabel("latency (s)")
    ax.set_ylabel("fraction of records")
    ax.set_ylim(0, 1.01)
    ax.set_xlim(left=0)
    ax.legend(fontsize=7, loc="lower right")


def _scaling(ax, scaling: dict) -> None:
    cells = scaling["cells"]
    rates = [scaling["records_per_s"][c["key"]] for c in cells]
    colors = ["#1f77b4" if c["workers"] == 1 else "#2ca02c" for c in cells]
    medians = [r["median"] / 1000 for r in rates]
    bars = ax.bar(range(len(cells)), medians, 0.7, color=colors, hatch=["//" if r["noisy"] else "" for r in rates],
                  edgecolor="white")
    ax.errorbar(range(len(cells)), medians, yerr=[[m - r["min"] / 1000 for m, r in zip(medians, rates, strict=True)],
                                                   [r["max"] / 1000 - m for m, r in zip(medians, rates, strict=True)]],
                fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    for x, r in enumerate(rates):
        ax.plot([x] * len(r["samples"]), [v / 1000 for v in r["samples"]], "k.", ms=3)
    ax.bar_label(bars, labels=[f"{m:.0f}k" for m in medians], fontsize=7, padding=8)
    ax.set_xticks(range(len(cells)))
    ax.set_xticklabels([f"{c['workers']} Worker{'s' if c['workers'] > 1 else ''}\n{c['partitions']} partitions"
                        for c in cells], fontsize=7)
    ax.set_ylabel("thousand records / s (steady state)")
    ax.set_title(f"kafka-eos exactly-once on a standalone cluster (1 core per Worker),\n"
                 f"{scaling['input']['records']:,} x {scaling['input']['record_bytes']} B", fontsize=9)
    ax.margins(y=0.2)


def _goals(ax, goals: dict) -> None:
    """Every measured cell of the goals of issue 27 as its distance to the goal: ratio / bound (for
    an upper bound, bound / ratio), so right of the line at 1 is met; labelled with the ratio."""
    rows = [(g, c) for g in goals.values() for c in g["cells"] if c["measured"]]
    if not rows:
        ax.set_axis_off()
        return

    def score(g: dict, value: float) -> float:
        return value / g["bound"] if g["at_least"] else g["bound"] / value

    medians = [score(g, c["median"]) for g, c in rows]
    low = [m - min(score(g, c["min"]), score(g, c["max"])) for m, (g, c) in zip(medians, rows, strict=True)]
    high = [max(score(g, c["min"]), score(g, c["max"])) - m for m, (g, c) in zip(medians, rows, strict=True)]
    ys = range(len(rows))
    ax.barh(ys, medians, color=["#2ca02c" if c["met"] else "#d62728" for _, c in rows])
    ax.errorbar(medians, ys, xerr=[low, high], fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    for y, (m, (g, c)) in enumerate(zip(medians, rows, strict=True)):
        ax.text(m, y, f" {c['median']} ({'>=' if g['at_least'] else '<='} {g['bound']})", va="center", fontsize=6)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([f"{g['goal']}\n{c['cell']}" for g, c in rows], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("ratio / goal (median of per-round ratios; > 1: met)")
    ax.set_title("Goals of issue 27 (green: met)", fontsize=9)
    ax.margins(x=0.25)


def plot(result: dict, path: Path) -> Path:
    from bench.stage_profile import by_size
    m = result["machine"]
    scaling, goals = result.get("scaling"), result.get("goals_27")
    panels = 3 + bool(scaling) + bool(goals)
    fig, axes = plt.subplots(1, panels, figsize=(6.3 * panels + 0.1, 6.2))
    _bars(axes[0], result["records_per_s"], result["ratios"], result["rounds"])
    _profile(axes[1], by_size(result.get("profile")))
    _cdf(axes[2], result.get("latency_runs", []))
    if scaling:
        _scaling(axes[3], scaling)
    if goals:
        _goals(axes[-1], goals)
    loads = result["load_avg_1m"]
    fig.suptitle(f"kafka-eos benchmark {result['date']}{' (QUICK smoke run, not a result)' if result['quick'] else ''}"
                 f" - {m['cores']} cores {m['cpu']}, load avg {loads['start']}->{loads['end']}\n"
                 f"pyspark {m['pyspark']}, Spark kafka connector {m['spark_sql_kafka']}, Kafka broker {m['kafka']}, "
                 f"librdkafka {m['librdkafka']}, Python {m['python']}, {m['java']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


if __name__ == "__main__":
    source = Path(sys.argv[1])
    print(plot(json.loads(source.read_text()), source.with_suffix(".png")))
