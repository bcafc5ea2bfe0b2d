"""Pipelines: a validated ``PipelineConfig`` -> one exactly-once streaming query, and its runners.

``builder`` builds the query, ``runner`` runs it in this process (``kafka-eos run``),
``submit`` runs it through spark-submit with kafka-eos shipped as a zip (``--master``),
``entry`` is the spark-submit entry file, ``progress`` prints one line per batch.
``spark_options`` maps a config to Spark's option maps, ``validation`` adds the connectors' own
check to the config rules, ``checkpoint_log`` is the one reader of Spark's checkpoint
(``checkpoint_compat`` and ``describe`` call it), ``pipeline_shape`` records the pipeline's shape
beside the checkpoint and ``checkpoint_compat`` says which changes of it the checkpoint survives.
"""
