"""The kafka-eos source: ``format("kafka-eos")`` reads Kafka exactly once from Spark's offset log.

Driver: ``stream_reader`` / ``batch_reader`` plan offset ranges (``offsets`` package);
executors: ``partition_reader`` reads a task's ranges through one consumer (``range_reader``: one
range's rules) as Arrow batches (``arrow_rows``).
"""
