"""The benchmark figure: throughput bars per record size and the end-to-end latency CDF.

``plot(result, path)`` draws from a ``bench.run`` result dict (the latency CDF from the full
samples when present, else from the JSON's ``cdf_ms`` points), so a committed JSON can be
re-plotted: ``python -m bench.plot bench/results/<date>.json``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SYSTEMS = [("eos", "kafka-eos\nexactly-once", "#1f77b4"), ("eos_alo", "kafka-eos\nat-least-once", "#aec7e8"),
           ("spark_native", "Spark kafka\n(at-least-once)", "#ff7f0e"),
           ("python_ceiling", "Python EOS loop\n(confluent-kafka)", "#2ca02c")]


def _bars(ax, throughput: dict) -> None:
    sizes = list(throughput)
    width = 0.8 / len(SYSTEMS)
    for i, (key, label, color) in enumerate(SYSTEMS):
        xs = [s + (i - (len(SYSTEMS) - 1) / 2) * width for s in range(len(sizes))]
        values = [throughput[size][key]["records_per_s"] / 1000 for size in sizes]
        bars = ax.bar(xs, values, width * 0.95, label=label.replace("\n", " "), color=color)
        ax.bar_label(bars, labels=[f"{v:.0f}k" for v in values], fontsize=7, padding=2)
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([f"{int(size):,} B records\neos/native {throughput[size]['ratios']['eos_vs_spark_native']:.2f}"
                        for size in sizes])
    ax.set_ylabel("thousand records / s")
    ax.set_title("Kafka -> Spark -> Kafka throughput (trigger 5 s)", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax.margins(y=0.15)


def _cdf(ax, latencies: list[dict]) -> None:
    for run in latencies:
        samples = run.get("_samples_ms")
        if samples:
            xs, ys = samples, [(i + 1) / len(samples) for i in range(len(samples))]
        else:
            xs, ys = [p[0] for p in run["cdf_ms"]], [p[1] for p in run["cdf_ms"]]
        ax.plot([x / 1000 for x in xs], ys,
                label=f"trigger {run['trigger_s']:g} s: p50 {run['p50'] / 1000:.2f} s, p99 {run['p99'] / 1000:.2f} s")
    ax.axhline(0.5, color="grey", lw=0.5, ls=":")
    ax.axhline(0.99, color="grey", lw=0.5, ls=":")
    rate = latencies[0]["rate_per_s"] if latencies else 0
    ax.set_title(f"End-to-end latency, kafka-eos exactly-once at {rate:,} rec/s\n"
                 "(produce -> visible to a read_committed consumer)", fontsize=10)
    ax.set_xlabel("latency (s)")
    ax.set_ylabel("fraction of records")
    ax.set_ylim(0, 1.01)
    ax.set_xlim(left=0)
    ax.legend(fontsize=7, loc="lower right")


def plot(result: dict, path: Path) -> Path:
    m = result["machine"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.2))
    _bars(left, result["throughput"])
    _cdf(right, result["latency_runs"])
    fig.suptitle(f"kafka-eos benchmark {result['date']} - {m['cores']} cores {m['cpu']}, load avg "
                 f"{result['load_avg_1m']['start']}->{result['load_avg_1m']['end']}\n"
                 f"pyspark {m['pyspark']}, Spark kafka connector {m['spark_sql_kafka']}, Kafka broker {m['kafka']}, "
                 f"librdkafka {m['librdkafka']}, Python {m['python']}, {m['java']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


if __name__ == "__main__":
    source = Path(sys.argv[1])
    print(plot(json.loads(source.read_text()), source.with_suffix(".png")))
