"""What the write evidence costs a whole pipeline (issue 46: goal < 2% throughput).

The same kafka-eos exactly-once Kafka -> Kafka query (``bench.throughput``: spark-submit,
local[2], trigger 5 s, keyed 100 B records) with the evidence (the default) and without it (sink
option ``writeEvidence=false``), in interleaved rounds, the order flipping each round, on one
input topic. The figure is the per-round ratio of the steady-state rates, with its spread.

    python -m bench.evidence_pipeline [--rounds 5] [--records 1000000] [--partitions 8]

Writes ``bench/results/<date>-evidence-pipeline.json``.
"""
from __future__ import annotations

import argparse
from typing import Callable

from bench import method, throughput
from bench.common import load_avg, write_result
from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster

ARMS = ("eos", "eos_no_evidence")
PARTITIONS = 8


def measure(bootstrap: str, rounds: int, records: int, settle: Callable[[], dict],
            log: Callable[[str], None] = print, partitions: int = PARTITIONS) -> dict:
    """``rounds`` rounds of both arms (order flipped each round) over one input topic."""
    inp = throughput.prepare_input(bootstrap, records, 100, records // 4, partitions=partitions)
    runs: dict[str, list[dict]] = {name: [] for name in ARMS}
    for r in range(rounds):
        for name in ARMS if r % 2 == 0 else ARMS[::-1]:
            settled, before = settle(), load_avg()
            result = throughput.run_config(inp, name)
            result.update(round=r, settle=settled, load_avg_1m={"before": before, "after": load_avg()})
            runs[name].append(result)
            log(f"evidence pipeline round {r + 1}/{rounds} {name}: {result['records_per_s']:,} rec/s "
                f"(load {before} -> {result['load_avg_1m']['after']})")
    rates = {name: [run["records_per_s"] for run in runs[name]] for name in ARMS}
    return {"records_per_s": {name: method.summary(v) for name, v in rates.items()},
            "ratio_with_vs_without": method.round_ratios(rates["eos"], rates["eos_no_evidence"]),
            "input": {"records": records, "record_bytes": 100, "partitions": partitions,
                      "max_offsets_per_trigger": records // 4, "trigger_s": 5},
            "runs": runs}


def lines(result: dict) -> list[str]:
    rate, ratio = result["records_per_s"], result["ratio_with_vs_without"]
    return [f"evidence, whole pipeline ({result['input']['partitions']} partitions, {result['input']['records']:,} "
            f"x 100 B): with {rate['eos']['median']:,} [{rate['eos']['min']:,}-{rate['eos']['max']:,}] rec/s, "
            f"without {rate['eos_no_evidence']['median']:,} [{rate['eos_no_evidence']['min']:,}-"
            f"{rate['eos_no_evidence']['max']:,}]; with/without per round {ratio['median']} "
            f"[{ratio['min']}-{ratio['max']}]"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--partitions", type=int, default=PARTITIONS)
    a = p.parse_args()
    with LocalKafkaCluster() as cluster:
        result = measure(cluster.bootstrap, a.rounds, a.records, lambda: method.settle(20, 60),
                         partitions=a.partitions)
    path = write_result("evidence-pipeline", result)
    print("\n".join(lines(result)))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
