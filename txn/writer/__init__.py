"""txn/writer: a write task's side: the Kafka writer, flush, partitioner, records, write evidence,
digests, producer statistics."""
