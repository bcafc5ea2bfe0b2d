"""QueryStart: the sink's start, as numbered steps, run from one place for every writer Spark builds.

Spark's model (pyspark 4.x Python data sources): ``streamWriter()`` is called on the driver for
every micro-batch by pyspark's write planner worker (``pyspark.sql.worker.write_into_data_source``),
which pickles the writer into the batch's tasks, and again for every commit or abort by another
worker module (``pyspark.sql.worker.python_streaming_sink_runner``) whose fresh writer is never
pickled. pyspark keeps its Python workers per module, so a process builds writers of one role
only (``writer_role``). ``KafkaEosDataSource.streamWriter`` calls ``QueryStart.writer``, which runs:
  1. logging to stderr; the schema check (or, for offset-range input, the source's options given
     to the sink: ``range_input.read_options``) and the client settings' one rule
     (``txn.client_settings.check_client_settings``, what ``validate`` runs too; local);
  2. the cluster checks: every broker Kafka 3.7+, transaction.timeout.ms against the broker's maximum, the ACLs
     (``startup_checks``; asked once per process and connection settings), in a thread beside
     steps 3-5 (``beside``): step 6 starts only once they passed, and their failure is the one raised;
  3. the sink log's binding to the checkpoint's query id, creating nothing: a sink log of
     another checkpoint is refused as that, before any claim;
  4. the prefix's ownership (``prefix_owner.owned_config``: retired checkpoint, id scheme,
     claim), once per query and process (``SinkQueries``);
  5. the query's protocol, one per query and process (``SinkQueries``);
  6. recovery: a decided batch is finished (idempotent); its ``ReplayPlan`` goes to the tasks;
  writers of a batch's tasks only (no task of the batch has started):
  7. once per query and process: abort the Ongoing transactions under the query's ids, by
     transactional id (a dead run's would hold back read_committed readers), except the keep
     list ``keep_at_start``: the pending decision's ids (none once step 6 ended them; kept so the
     sweep never aborts what a decision commits); the running batch has none open yet; the
     count is recorded beside the sink log (``start_sweeps``) for the driver's metrics;
  8. the output topics are the ones earlier batches wrote to (``before_writes``): a deleted or
     re-created topic stops the query before any task writes.
A commit/abort writer runs neither 2, the cluster part of 4 (``owned_scheme``: the task writers of
the same query claimed the prefix), 7 nor 8: its batch's pre-committed transactions are open and a
failure while it is built (a broker that does not answer a start-up check) would leave them
neither committed nor aborted; the commit needs only what the commit needs. Its commit checks the
topics again before the decision (protocol step 2b) and aborts what it refuses. Constructors and
pickle hooks call no cluster. ``release_sink`` is the query's end, for the caller that ran it.
"""
from __future__ import annotations

import enum
import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Mapping, Sequence

from pyspark.sql.types import StructType

from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.sink.options import batch_log, fault_plan, sink_config
from kafka_eos.connectors.sink.prefix_owner import owned_config, owned_scheme
from kafka_eos.connectors.sink.range_input import read_options
from kafka_eos.connectors.sink.sink_queries import SINK_QUERIES, SinkQueries
from kafka_eos.connectors.sink.startup_checks import check_acls, check_brokers, check_schema, check_timeouts
from kafka_eos.connectors.sink.stream_writer import KafkaEosStreamWriter
from kafka_eos.option_map import OptionMap
from kafka_eos.txn.log import sink_markers
from kafka_eos.txn.cluster.client_settings import check_client_settings
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.log.sink_log import DECIDED, PENDING, BatchRecord, SinkLogReader, check_binding
from kafka_eos.txn.log.start_sweeps import record_sweep
from kafka_eos.txn.log.kafka_store import StoreRole
from kafka_eos.txn.log.stores import use_role
from kafka_eos.txn.topics.topic_guard import OutputTopicGuard

log = logging.getLogger(__name__)
TASK_WRITER_PLANNER = "pyspark.sql.worker.write_into_data_source"


class WriterRole(enum.Enum):
    TASKS = "tasks"    # pickled into a batch's tasks
    COMMIT = "commit"  # the fresh writer of commit/abort, never pickled


def writer_role(argv: Sequence[str] | None = None) -> WriterRole:
    """TASKS in pyspark's write planner, started as ``python -m pyspark.daemon <module>`` (a forked
    worker keeps the daemon's argv) or ``python -m <module>`` without the daemon; else COMMIT, the
    role that runs neither step 7 nor 8 (the safe side if pyspark ever names its worker otherwise)."""
    tail = "/" + TASK_WRITER_PLANNER.replace(".", "/") + ".py"
    found = any(a == TASK_WRITER_PLANNER or a.endswith(tail) for a in (sys.argv if argv is None else argv))
    return WriterRole.TASKS if found else WriterRole.COMMIT


def checkpoint_query_id(options: Mapping[str, str]) -> str | None:
    """The query id Spark keeps in ``<checkpointLocation>/metadata`` ({"id": ...}), if any: option
    ``queryId`` where the run read it in the driver (``worker_handoff``), else read here."""
    given, location = (OptionMap.of(options).get(name) for name in ("queryId", "checkpointLocation"))
    if given:
        return str(given)
    return CheckpointReader(str(location)).query_id() if location else None


def keep_at_start(latest: BatchRecord | None) -> set[str]:
    """The transactional ids the start's cleanup keeps: the pending handles of a decided batch."""
    if latest is None or latest.state != DECIDED:
        return set()
    return {h.transactional_id for h in latest.handles_with(PENDING) if h.transactional_id}


def log_to_stderr(batches: bool) -> None:
    """kafka-eos logs to stderr; the per-batch INFO line only with option batchLog (default true)."""
    logger = logging.getLogger("kafka_eos")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    logging.getLogger("kafka_eos.txn.protocol.protocol").setLevel(logging.INFO if batches else logging.WARNING)


@contextmanager
def beside(check: Callable[[SinkConfig], None] | None, config: SinkConfig) -> Iterator[None]:
    """Run ``check`` in a thread while the block runs; leave only once it ended. Its failure is
    raised in place of the block's (a missing ACL also fails the claim, less clearly)."""
    if check is None:
        yield
        return
    with ThreadPoolExecutor(1, thread_name_prefix="kafka-eos-start-checks") as pool:
        checked = pool.submit(check, config)
        try:
            yield
        except BaseException:
            if checked.exception() is not None:
                raise checked.exception() from None  # type: ignore[misc]
            raise
        checked.result()


def check_cluster(config: SinkConfig) -> None:
    check_brokers(config)
    check_timeouts(config)
    check_acls(config)


def check_sink_log_binding(config: SinkConfig, query_id: str | None) -> None:
    location = config.log_location
    check_binding(SinkLogReader(location).meta(), location, config.transactional_id_prefix, query_id)


@dataclass(frozen=True)
class QueryStart:
    """The steps of the module docstring; the collaborators are passed in (tests give fakes)."""
    role: WriterRole = field(default_factory=writer_role)
    queries: SinkQueries = SINK_QUERIES
    cluster_checks: Callable[[SinkConfig], None] = check_cluster
    binding_check: Callable[[SinkConfig, str | None], None] = check_sink_log_binding
    claim: Callable[[SinkConfig, Mapping[str, str], str | None], SinkConfig] = owned_config
    scheme: Callable[[SinkConfig, Mapping[str, str], str | None], SinkConfig] = owned_scheme  # a commit writer's step 4
    topic_guard: Callable[[SinkConfig], OutputTopicGuard] = OutputTopicGuard.from_config
    make_writer: type[KafkaEosStreamWriter] = KafkaEosStreamWriter  # a subclass: the bench's profiled one

    def writer(self, options: Mapping[str, str], schema: StructType) -> KafkaEosStreamWriter:
        config, faults = sink_config(options), fault_plan(options)
        log_to_stderr(batch_log(options))                                             # step 1
        source = read_options(options, schema, config)
        if source is None:
            check_schema(schema, config)
        check_client_settings(config.client_conf(), config.exactly_once)
        tasks = self.role is WriterRole.TASKS
        use_role(StoreRole.PLANNER if tasks else StoreRole.DRIVER)  # a Kafka record store's writer role
        query_id = checkpoint_query_id(options)
        with beside(self.cluster_checks if tasks else None, config):                 # step 2, beside 3-5
            self.binding_check(config, query_id)                                      # step 3
            claim = self.claim if tasks else self.scheme
            config = self.queries.owned(config, query_id, lambda c: claim(c, options, query_id))  # step 4
            protocol = self.queries.protocol(config, faults, query_id)               # step 5
        plan = protocol.recover()                                                     # step 6
        if tasks:
            if self.queries.first_start(config, query_id):                            # step 7
                aborted = protocol.aborter.abort_lingering(keep_at_start(protocol.log.latest()))
                record_sweep(config.log_location, len(aborted))
            self.topic_guard(config).before_writes()                                  # step 8
        return self.make_writer(config, faults, query_id, plan, protocol, source, schema)


def release_sink(options: Mapping[str, str], queries: SinkQueries = SINK_QUERIES) -> None:
    """After the query of these sink options ended (failed or stopped): commit its decided batch if
    the brokers allow (else it stays for the next start), abort every other Ongoing transaction under
    its ids (the id scheme its sink log recorded). Best effort: a failure is logged (the next start
    cleans up), never raised. It runs in the run's own process: a Kafka record store is written as
    its ``runner`` role (the commit worker's ``driver`` writer, idle in its worker, is not fenced)."""
    use_role(StoreRole.RUNNER)
    config = sink_config(options)
    try:
        scheme = sink_markers.read_id_scheme(config.log_location)
        config = replace(config, id_owner=scheme.id_owner if scheme else None)
        queries.protocol(config, fault_plan(options), checkpoint_query_id(options)).release()
    except Exception as exc:  # noqa: BLE001 - the query already ended; the next start cleans up
        log.warning("kafka-eos: the sink's open transactions under prefix %s were not released (%r); the next "
                    "start ends them, or the broker at transaction.timeout.ms", config.transactional_id_prefix, exc)

