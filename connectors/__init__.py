"""Spark side of kafka-eos: the ``kafka-eos`` data source (source and sink), pipelines and CLI."""
