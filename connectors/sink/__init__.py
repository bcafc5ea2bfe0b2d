"""The exactly-once streaming sink of the ``kafka-eos`` data source."""
