"""Offsets as operator state for the kafka-eos source (pure logic, no Spark import).

The source's state is the JSON offset map Spark writes to its offset log before a micro-batch
runs (``kafka_eos.offsets.model``). Everything else here turns Kafka metadata into such maps: start/end
resolution (``kafka_eos.offsets.spec``), admission control (``kafka_eos.offsets.admission``), input ranges
(``kafka_eos.offsets.ranges``), data-loss findings (``kafka_eos.offsets.data_loss``), event-time
alignment (``kafka_eos.offsets.alignment``). Only ``kafka_eos.offsets.kafka_offsets`` and
``kafka_eos.offsets.record_times`` talk to Kafka; every other module is pure and unit-tested with fakes.
"""
