"""Offsets as operator state for the kafka-eos source (pure logic, no Spark import).

The source's state is the JSON offset map Spark writes to its offset log before a micro-batch
runs (``offsets.model``). Everything else here turns Kafka metadata into such maps: start/end
resolution (``offsets.spec``), admission control (``offsets.admission``), input ranges
(``offsets.ranges``), data-loss findings (``offsets.data_loss``). Only ``offsets.kafka_offsets``
talks to Kafka; every other module is pure and unit-tested with fakes.
"""
