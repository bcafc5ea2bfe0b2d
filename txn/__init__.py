"""The two-phase-commit protocol on Kafka transactions, engine-agnostic (no pyspark here).

Roles, named as in Flink's KafkaSink:
- ``transactional_ids``  TransactionalIdFactory: the bounded pool of transactional ids.
- ``kafka_writer``       KafkaWriter: executor side; writes one task's rows in one transaction
                         and pre-commits it (flush), returning a ``TxnHandle``.
- ``kafka_committer``    KafkaCommitter: driver side; EndTxn(commit/abort) for handles.
- ``transaction_aborter`` TransactionAborter: aborts lingering transactions under a prefix.
- ``sink_log``           the durable decision log beside the engine's checkpoint.
- ``protocol``           the numbered commit steps and crash recovery; takes the roles above as
                         collaborators, ``from_config`` builds them.
- ``states``             BatchState, PartitionState, EndTxnOutcome and the allowed transitions.
- ``steps``              the protocol's reported steps (``StepHooks``; silent by default).
- ``faults`` / ``fault_injection``  test-only fault points and the wrappers that pause there.
"""
