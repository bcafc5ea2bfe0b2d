"""A savepoint of a checkpoint that was itself started from a savepoint bounds what was read before
its batch 0 by that restore's W0 - 1, reading the restore record where the pipeline keeps its
records (``config.records.records_home``: a Kafka store's folder under ``checkpoint.records:
kafka``), where ``restore.prepare`` writes it. Read at the checkpoint, it was not found there and
the bound became "nothing read before", so a later restore with a larger window (an earlier W0)
was planned from batch 0 without the records of [its W0, the first restore's W0)."""
from __future__ import annotations

from kafka_eos.config import records
from kafka_eos.connectors.pipeline.savepoint_plan import gather
from kafka_eos.offsets.rewind import NOTHING_BEFORE
from kafka_eos.txn.log.savepoints import RestoreStart, write_restore
from tests.connectors.pipeline.test_savepoint_plan import MINUTE, stopped_pipeline


def test_the_prefix_bound_reads_the_restore_record_where_the_records_are(tmp_path, monkeypatch):
    cfg = stopped_pipeline(tmp_path)  # batches 0-3, the offset log keeps all: the table starts at batch 0
    assert gather(cfg, "4.3.0").prefix_bound_ms == NOTHING_BEFORE
    home = tmp_path / "records-home"  # stands for the Kafka store's folder of the pipeline
    write_restore(str(home), RestoreStart("elsewhere", 2 * MINUTE, 2 * MINUTE + 30_000, {("in", 0): 5},
                                          {("in", 0): 0}, 0))
    monkeypatch.setattr(records, "kafka_records", lambda _cfg: str(home))
    assert gather(cfg, "4.3.0").prefix_bound_ms == 2 * MINUTE - 1
