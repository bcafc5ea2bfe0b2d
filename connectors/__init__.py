"""Spark side of kafka-eos: the ``kafka-eos`` data source (source and sink), pipelines and CLI."""


def register(spark) -> None:
    """Register the ``kafka-eos`` data source in ``spark``."""
    from kafka_eos.connectors.datasource import register as _register
    _register(spark)


def check_deterministic(df, allow_nondeterministic: bool = False):
    """Refuse (``NonDeterministicPlanError``) a streaming DataFrame whose replay may give the sink
    other rows: call it on the frame given to ``writeStream.format("kafka-eos")`` before ``start()``
    (``kafka_eos.connectors.plan_check`` says what it covers)."""
    from kafka_eos.connectors.plan_check import check_deterministic as _check
    return _check(df, allow_nondeterministic)


def verify(spark, build, source_options, sink_options, checkpoint_location, batches=None, recompute=True,
           progress=lambda line: None):
    """``kafka-eos verify --recompute`` for a query built in code: each committed batch's output read
    back against what its tasks recorded and, with ``recompute``, against ``build`` re-run over the
    batch's recorded input. ``build`` is the function the query runs: it takes the stream of
    ``spark.readStream.format("kafka-eos").options(**source_options).load()`` and returns the frame
    given to ``writeStream.format("kafka-eos").options(**sink_options)``; ``checkpoint_location`` is
    the query's. Returns a report: ``exit_code`` (0: every batch in range verified) and
    ``document()`` (per batch: outcome, records, recomputed records, problems with topic,
    partition and offset)."""
    from kafka_eos.connectors.operate.query_verify import verify_query
    return verify_query(spark, build, source_options, sink_options, checkpoint_location, batches, recompute,
                        progress)


def available_now_options(spark, source_options):
    """Trigger.AvailableNow on every pyspark 4.x, step 1 of 3: the kafka-eos source options to read
    what is available now (on 4.0/4.1 they carry the end offsets taken now; on 4.2+ unchanged).
    Then ``.trigger(**available_now_trigger())`` and, after ``start()``, ``await_available_now(query)``."""
    from kafka_eos.connectors.pipeline.drain import prepare
    return prepare(spark, source_options)


def available_now_trigger():
    """Step 2: the ``DataStreamWriter.trigger`` keyword arguments (availableNow, or on 4.0/4.1
    back-to-back batches that stop at the end offsets of step 1)."""
    from kafka_eos.connectors.pipeline.drain import trigger
    return trigger()


def await_available_now(query, timeout_s=None):
    """Step 3: wait until ``query`` has read what was available at its start, then it has stopped
    (on 4.0/4.1 this stops it after the first trigger that planned no batch); False on timeout."""
    from kafka_eos.connectors.pipeline.drain import await_end
    return await_end(query, timeout_s)
