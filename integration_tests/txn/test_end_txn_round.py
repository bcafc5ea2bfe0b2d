"""One EndTxn round ends every pre-committed transaction of a batch, however many sink tasks it
had (issue 27). The control-plane connection pauses at 5 requests in flight and fails what is sent
past that; before the fix a round of 64 handles ended 5 and retried the rest with growing waits
(13 rounds, 12.7 s per batch at 64 partitions)."""
from __future__ import annotations

import pyarrow as pa

from integration_tests.kafka_tools import create_topic, read_all, unique
from kafka_eos.txn.cluster.control_plane import control_plane
from kafka_eos.txn.writer.kafka_writer import KafkaWriter
from kafka_eos.txn.protocol.sink_config import SinkConfig

TASKS = 12


def test_one_round_commits_every_transaction_of_a_batch(bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique("out"), partitions=2)
    cfg = SinkConfig(producer_conf={"bootstrap.servers": bootstrap}, transactional_id_prefix=unique("p"),
                     log_location=str(tmp_path / "sinklog"), topic=topic)
    handles = []
    for task in range(TASKS):
        value = str(task).encode()
        handles.append(KafkaWriter(cfg, batch_id=0, sink_partition=task).write(
            [pa.RecordBatch.from_pydict({"key": [value], "value": [value]})]))
    codes = control_plane(cfg.client_conf()).end_txn_round(
        [(h.transactional_id, h.producer_id, h.producer_epoch) for h in handles], commit=True)
    assert codes == {h.transactional_id: 0 for h in handles}, "a round left transactions open"
    ids = sorted(int(m.value()) for m in read_all(bootstrap, topic, "read_committed", idle_s=1.0))
    assert ids == list(range(TASKS))
