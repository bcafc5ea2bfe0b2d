"""Operating a pipeline: status, metrics, the probes (output, lag) and the monitor, verify, recompute,
retire, accept-loss.

What an operator asks of a pipeline, read from its checkpoint, its sink log and the brokers; none of
it needs a Spark session except ``recompute``, which re-runs the pipeline's transform."""
