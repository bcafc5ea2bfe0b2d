"""``kafka-eos accept-loss``: the way on after ``ReplayMismatchError`` (``txn.loss_acceptance``).

Finds the sink log (a pipeline file's checkpoint, or ``--sink-log`` for code users), accepts the
named batch's loss once and says what that dropped: the record count and where the batch's
source offsets are. It refuses what ``accept_loss`` refuses, and a path with no sink log.
"""
from __future__ import annotations

from kafka_eos.txn.protocol.loss_acceptance import ACCEPTED_PARTITIONS, ACCEPTED_RECORDS, NothingToAcceptError, accept_loss
from kafka_eos.txn.log.sink_log import LOG_DIR, SinkLog, SinkLogReader, location_from_options


def sink_log_of_pipeline(path: str) -> str:
    """The sink log location of a pipeline file (its checkpoint's, or ``sink.options.sinkLogLocation``)."""
    from kafka_eos.connectors.pipeline.spark_options import sink_options
    from kafka_eos.connectors.pipeline.validation import load_valid
    location = location_from_options(sink_options(load_valid(path, offline=True)))
    if location is None:
        raise NothingToAcceptError(f"{path}: no checkpoint.location, so no sink log")
    return location


def accept(location: str, batch_id: int) -> str:
    """Accept batch ``batch_id``'s loss in the sink log at ``location``; the line to print."""
    meta = SinkLogReader(location).meta()
    if meta is None:
        raise NothingToAcceptError(f"{location}: no sink log here (it is <checkpointLocation>/{LOG_DIR} unless the "
                                   "sink option sinkLogLocation moved it)")
    record = accept_loss(SinkLog(location, meta["prefix"], meta.get("query_id")), batch_id)
    checkpoint = location[:-len(LOG_DIR)].rstrip("/") if location.endswith(LOG_DIR) else "<checkpointLocation>"
    return (f"kafka-eos: batch {batch_id} accepted without {int(record.metrics[ACCEPTED_RECORDS])} records of "
            f"{int(record.metrics[ACCEPTED_PARTITIONS])} lost sink partition(s) (recorded in {location}); "
            f"restart the query: it commits nothing more of batch {batch_id} and goes on. The batch's source "
            f"offsets are in {checkpoint}/offsets/{batch_id}.")
