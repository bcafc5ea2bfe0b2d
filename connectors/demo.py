"""`kafka-eos demo` (`make run`): the orders-json example end to end on an embedded broker.

1. start a local Kafka broker (KRaft, plain Java processes, no Docker);
2. create ``orders`` (3 partitions), ``orders-priced`` (3) and ``orders-dlq`` (1);
3. write N JSON orders in committed transactions, an aborted transaction after every 10,000,
   and a few poison records (not JSON) among them;
4. run ``config/pipelines/orders-json.yaml`` unchanged (its ``${KAFKA_BOOTSTRAP_SERVERS}`` and
   ``${KAFKA_EOS_CHECKPOINTS}`` point at the broker and a temporary checkpoint) with ``--once``;
5. read ``orders-priced`` and ``orders-dlq`` read_committed and count ids.

The driver neither writes nor maps a class-data archive (``KAFKA_EOS_JVM_ARCHIVES=off`` unless
the caller set it): ``kafka-eos run``'s first driver writes one at its exit, which made a fresh
machine's demo ~13 s longer (2 cores, 2026-11-28: 16-18 s from the query's end to the counts
with the write, 4-5 s without), and a later demo that mapped it was not measurably quicker.

Prints ``demo: <in> in, <out> out, <duplicates> duplicates, <missing> missing`` and a DLQ line.
Exit 0 only when every order is out exactly once with the right total, no aborted order is out,
and every poison record is in the DLQ exactly once.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kafka_eos.environment import environment

TOPICS = {"orders": 3, "orders-priced": 3, "orders-dlq": 1}


def example_path() -> Path:
    from kafka_eos import config
    return Path(config.__file__).resolve().parent / "pipelines" / "orders-json.yaml"


def _say(text: str) -> None:
    print(f"demo: {text}", flush=True)


def _run_example(bootstrap: str, checkpoints: str, verbose: bool = False) -> None:
    from kafka_eos.connectors.jvm_class_archive import ARCHIVES_ENV
    from kafka_eos.connectors.pipeline.validation import load_valid
    from kafka_eos.connectors.pipeline.runner import run_local
    archives = os.environ.get(ARCHIVES_ENV) or "off"  # see the module's docstring
    with environment(KAFKA_BOOTSTRAP_SERVERS=bootstrap, KAFKA_EOS_CHECKPOINTS=checkpoints, **{ARCHIVES_ENV: archives}):
        cfg = load_valid(example_path())
        _say(f"running {example_path().name} with --once (availableNow) ...")
        run_local(cfg, once=True, emit=lambda line: print(line, flush=True), verbose=verbose)


def _check_dlq(bootstrap: str, run: str, poison: int) -> tuple[dict[str, int], int]:
    """(id counts of orders-dlq by key, DLQ records without the error headers)."""
    from kafka_eos.connectors.demo_data import count_ids, read_committed
    from kafka_eos.serde.decode_errors import ERROR_HEADER, OFFSET_HEADER, PARTITION_HEADER, TOPIC_HEADER
    messages = read_committed(bootstrap, "orders-dlq")
    counts = count_ids([m.key().decode() for m in messages], [f"{run}-poison-{i}" for i in range(poison)])
    wanted = {ERROR_HEADER, TOPIC_HEADER, PARTITION_HEADER, OFFSET_HEADER}
    unlabelled = sum(1 for m in messages if not wanted <= {k for k, _ in (m.headers() or [])})
    return counts, unlabelled


def demo(records: int = 100_000, poison: int = 10, verbose: bool = False) -> int:
    from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders
    from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
    _say("starting a local Kafka broker ...")
    with LocalKafkaCluster() as cluster, tempfile.TemporaryDirectory(prefix="kafka-eos-demo-") as checkpoints:
        bootstrap = cluster.bootstrap
        create_topics(bootstrap, TOPICS)
        data = produce_orders(bootstrap, "orders", records, poison=poison)
        _say(f"wrote {records} orders to 'orders' at {bootstrap} in committed transactions, {data.aborted} "
             f"in aborted transactions, and {data.poison} poison records (not JSON)")
        _run_example(bootstrap, checkpoints, verbose)
        out = order_report(bootstrap, {data.run: records})
        dlq, unlabelled = _check_dlq(bootstrap, data.run, data.poison)
    print(f"demo: {records} in, {out['out']} out, {out['duplicates']} duplicates, {out['missing']} missing",
          flush=True)
    print(f"demo: dlq: {data.poison} poison in, {dlq['out']} in orders-dlq, {dlq['duplicates']} duplicates, "
          f"{dlq['missing']} missing", flush=True)
    problems = []
    if out["unexpected"]:
        problems.append(f"{out['unexpected']} outputs that are not committed orders (aborted input?)")
    if out["wrong_total"]:
        problems.append(f"{out['wrong_total']} outputs with a wrong total")
    if dlq["unexpected"] or unlabelled:
        problems.append(f"{dlq['unexpected']} unexpected and {unlabelled} header-less DLQ records")
    for problem in problems:
        print(f"demo: FAILED: {problem}", flush=True)
    exact = (out["duplicates"], out["missing"], dlq["duplicates"], dlq["missing"]) == (0, 0, 0, 0)
    return 0 if exact and not problems else 1
