"""Stage timing of a kafka-eos pipeline, installed from the bench job only (no production hook).

``register(spark, directory)`` registers the data source ``kafka-eos-profiled``: kafka-eos's
own source and sink classes, subclassed here. The job pickles this module by value, so the
subclasses reach Spark's Python workers without ``bench`` being importable there. In a worker,
the first ``read``/``write`` wraps (monkeypatches) the production functions it calls and each
task appends one JSON line of seconds per stage to ``<directory>/<pid>.jsonl``:

source task  consumer open, ``consume`` (Kafka fetch), ``to_record_batches`` (messages -> Arrow),
             busy (time inside the reader generator) and downstream (time it was suspended);
sink task    wait for input (time inside the input iterator's ``next``: the source worker, the
             JVM and the Arrow hand-over), ``_columns`` (Arrow -> Python lists), the produce
             loop, producer open (constructor, ``init_transactions``, ``begin_transaction``),
             ``flush`` and the rest of pre-commit, the write evidence (``TaskEvidence.place`` and
             ``checked_digests``);
commit       the driver-side ``commit`` of the batch (EndTxn of every handle + sink log).
Every stage also has ``<stage>_cpu``: the CPU time of the thread that ran it (``_Span``), so a
stage's CPU can be told from its waiting; librdkafka's own threads count in no stage.
Each line also has the worker's resident memory now and at its peak and pyarrow's pool (``_memory``).
"""
from __future__ import annotations

import json
import os
import sys
import time
import types
from collections import defaultdict
from typing import Iterator

from pyspark import TaskContext

from kafka_eos.connectors.datasource import KafkaEosDataSource
from kafka_eos.connectors.sink.stream_writer import KafkaEosStreamWriter
from kafka_eos.connectors.source.stream_reader import KafkaStreamReader

NAME = "kafka-eos-profiled"
_HOLDER = "_kafka_eos_bench_profile"


def _state() -> types.ModuleType:
    """Per-process state kept in ``sys.modules``: each task unpickles this module's functions
    anew (by value), so module globals would not survive from one task to the next."""
    holder = sys.modules.get(_HOLDER)
    if holder is None:
        holder = types.ModuleType(_HOLDER)
        holder.clock, holder.patched = defaultdict(float), set()
        sys.modules[_HOLDER] = holder
    return holder


def _add(stage: str, seconds: float, cpu: float | None = None) -> None:
    """``seconds`` of wall time in ``stage``; with ``cpu``, also its thread's CPU as ``<stage>_cpu``."""
    clock = _state().clock
    clock[stage] += seconds
    if cpu is not None:
        clock[stage + "_cpu"] += cpu


class _Span:
    """Wall time and this thread's CPU time (``time.thread_time``: librdkafka's own threads are not
    in it) of a block, added to ``stage``."""

    def __init__(self, stage: str) -> None:
        self.stage = stage

    def __enter__(self) -> "_Span":
        self.wall, self.cpu = time.perf_counter(), time.thread_time()
        return self

    def __exit__(self, *exc) -> None:
        _add(self.stage, time.perf_counter() - self.wall, time.thread_time() - self.cpu)


def _timed(stage: str, fn):
    def wrapper(*args, **kwargs):
        with _Span(stage):
            return fn(*args, **kwargs)
    wrapper.__wrapped__ = fn
    return wrapper


def _patch_source() -> None:
    if "source" in _state().patched:
        return
    from kafka_eos import client_factory as cf
    from kafka_eos.connectors.source import partition_reader as pr
    base = cf.Consumer  # every client is built by client_factory

    class TimedConsumer(base):
        def __init__(self, *args, **kwargs):
            with _Span("source_open"):
                super().__init__(*args, **kwargs)

        def consume(self, *args, **kwargs):
            with _Span("source_consume"):
                return super().consume(*args, **kwargs)

        def close(self, *args, **kwargs):
            return _timed("source_close", super().close)(*args, **kwargs)

    cf.Consumer = TimedConsumer
    pr.to_record_batches = _timed("source_arrow", pr.to_record_batches)
    _state().patched.add("source")


def _patch_sink() -> None:
    if "sink" in _state().patched:
        return
    from kafka_eos import client_factory as cf
    from kafka_eos.txn.writer import kafka_writer as kw
    base = cf.Producer

    class TimedProducer(base):
        def init_transactions(self, *args, **kwargs):
            return _timed("sink_init_txn", super().init_transactions)(*args, **kwargs)

        def flush(self, *args, **kwargs):
            return _timed("sink_flush", super().flush)(*args, **kwargs)

    cf.Producer = TimedProducer
    writer = kw.KafkaWriter
    writer._open = _timed("sink_open", writer._open)
    writer._produce_batch = _timed("sink_produce", writer._produce_batch)
    writer._columns = _timed("sink_columns", writer._columns)
    writer._precommit = _timed("sink_precommit", writer._precommit)
    from kafka_eos.txn.writer import write_evidence as we
    evidence = we.TaskEvidence
    evidence.place = _timed("sink_evidence", evidence.place)
    evidence.checked_digests = _timed("sink_evidence", evidence.checked_digests)
    _state().patched.add("sink")


def _memory() -> dict:
    """The worker's resident memory now and at its peak (VmRSS, VmHWM), and what pyarrow's default
    pool holds now and held at most: which worker (source or sink) holds what."""
    out: dict = {}
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out["rss_mb" if line.startswith("VmRSS") else "rss_peak_mb"] = int(line.split()[1]) // 1024
    if "pyarrow" in sys.modules:
        pool = sys.modules["pyarrow"].default_memory_pool()
        out.update(arrow_mb=pool.bytes_allocated() // 2**20, arrow_peak_mb=pool.max_memory() // 2**20)
    return out


def _emit(directory: str, side: str, records: int, wall: float) -> None:
    context = TaskContext.get()
    line = {"side": side, "pid": os.getpid(), "records": records, "wall_s": round(wall, 6),
            "t1": round(time.time(), 4), "t0": round(time.time() - wall, 4),
            **{k: round(v, 6) for k, v in _state().clock.items()}, **_memory()}
    if context is not None:
        line.update(batch=int(context.getLocalProperty("streaming.sql.batchId") or -1),
                    partition=context.partitionId())
    with open(os.path.join(directory, f"{os.getpid()}.jsonl"), "a") as out:
        out.write(json.dumps(line) + "\n")
    _state().clock.clear()


class ProfiledStreamReader(KafkaStreamReader):
    directory = ""

    def read(self, partition):
        _patch_source()
        _state().clock.clear()
        return self._timed_batches(super().read(partition))

    def _timed_batches(self, batches: Iterator) -> Iterator:
        started = time.perf_counter()
        records = 0
        iterator = iter(batches)
        while True:
            try:
                with _Span("source_busy"):
                    batch = next(iterator)
            except StopIteration:
                break
            records += batch.num_rows
            with _Span("source_downstream"):  # pyspark's hand-over of the batch to the JVM
                yield batch
        _emit(self.directory, "source", records, time.perf_counter() - started)


class ProfiledStreamWriter(KafkaEosStreamWriter):
    directory = ""

    def write(self, iterator):
        _patch_sink()
        _state().clock.clear()
        started = time.perf_counter()
        counted = _Counted(iterator)
        message = super().write(counted)
        _emit(self.directory, "sink", counted.records, time.perf_counter() - started)
        return message

    def commit(self, messages: list, batchId: int) -> None:
        _time_protocol_steps(self._protocol)
        _state().clock.clear()
        started, t0, cpu = time.perf_counter(), time.time(), time.thread_time()
        super().commit(messages, batchId)
        line = {"side": "commit", "batch": batchId, "commit_s": round(time.perf_counter() - started, 6),
                "commit_cpu_s": round(time.thread_time() - cpu, 6),
                "t0": round(t0, 4), "t1": round(time.time(), 4), **{k: round(v, 6) for k, v in _state().clock.items()}}
        with open(os.path.join(self.directory, f"{os.getpid()}.jsonl"), "a") as out:
            out.write(json.dumps(line) + "\n")


def _time_protocol_steps(protocol) -> None:
    """Wrap the driver's protocol steps once per protocol object (one per query and process)."""
    if getattr(protocol, "_bench_timed", False):
        return
    for owner, names in ((protocol, ("_decide", "_check_topics", "_end")), (protocol.log, ("append", "prune")),
                         (protocol.aborter, ("abort_lingering",))):
        for name in names:
            setattr(owner, name, _timed(f"commit{name if name.startswith('_') else '_' + name}", getattr(owner, name)))
    protocol._bench_timed = True


class _Counted:
    """The sink's input iterator, timing each ``next`` (the wait for upstream) and counting rows."""

    def __init__(self, iterator) -> None:
        self.iterator, self.records = iter(iterator), 0

    def __iter__(self):
        return self

    def __next__(self):
        with _Span("sink_wait_input"):  # pyspark's read of the batch from the JVM, and the wait
            batch = next(self.iterator)
        self.records += batch.num_rows
        return batch


def register(spark, directory: str) -> None:
    """Register ``kafka-eos-profiled`` writing its stage timings under ``directory``."""
    ProfiledStreamReader.directory = ProfiledStreamWriter.directory = directory

    class ProfiledDataSource(KafkaEosDataSource):
        @classmethod
        def name(cls) -> str:
            return NAME

        def streamReader(self, schema):
            return ProfiledStreamReader(dict(self.options), schema)

        def streamWriter(self, schema, overwrite: bool):
            from kafka_eos.connectors.sink.query_start import QueryStart
            t0 = time.time()
            writer = QueryStart(make_writer=ProfiledStreamWriter).writer(dict(self.options), schema)
            with open(os.path.join(directory, f"{os.getpid()}.jsonl"), "a") as out:
                out.write(json.dumps({"side": "writer", "module": sys.argv[-1][-40:], "pid": os.getpid(),
                                      "t0": round(t0, 4), "t1": round(time.time(), 4)}) + "\n")
            return writer

    spark.dataSource.register(ProfiledDataSource)
