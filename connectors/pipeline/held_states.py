"""The states a person must decide, checked before a run of a pipeline starts Spark.

``kafka-eos run`` (and the spark-submit entry) call ``check_held`` once the file is valid, so
that a start refused anyway costs no Spark session and a supervisor restarting in a loop finds the
same answer within a second each time. Enforced here, reading only the checkpoint (no broker):
- a savepoint taken of the checkpoint (``kafka-eos savepoint``) refuses the start with
  ``SavepointTaken`` (exit 5), before the stop request it left, which `resume` would lift;
- a standing stop request (``kafka-eos stop``; withdrawn by ``kafka-eos resume``) refuses the start
  with ``StopRequested`` (exit 0: the pipeline is stopped by request);
- a recorded output-topic refusal not accepted since (``kafka-eos accept-topic``) refuses it with
  ``OutputTopicChangedError`` (exit 5), the same error the sink's query start raises for it
  (``txn.output_topics``: a refusal holds until the operator accepts it).
Other held states refuse the query itself, with the same codes: a retired checkpoint, a claimed
prefix, a replay that does not match (``exit_codes``).
"""
from __future__ import annotations

from typing import cast

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.records import records_home
from kafka_eos.connectors.pipeline.spark_options import sink_options
from kafka_eos.connectors.pipeline.stop_request import check_no_stop_request
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.txn.log.savepoints import check_not_taken
from kafka_eos.txn.protocol.errors import OutputTopicChangedError
from kafka_eos.txn.log.stores import open_reader
from kafka_eos.txn.log.topic_log import TopicLog


def check_held(cfg: PipelineConfig) -> None:
    """Raise ``StopRequested`` or ``OutputTopicChangedError`` for a start that must not run (see module)."""
    config = sink_config(sink_options(cfg))
    # a savepoint leaves a stop request too; its refusal comes first, since `resume` does not lift it
    check_not_taken(config.log_location, cast(str, cfg.checkpoint.location))
    check_no_stop_request(records_home(cfg))
    held = TopicLog(open_reader(config.log_location)).latest().held()
    if held:
        raise OutputTopicChangedError.of_changes(held, config.fixed_partitions)
