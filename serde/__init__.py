"""Value serde for pipelines: bytes, string, JSON and Avro (plain or Confluent wire format).

Decoders turn one Arrow binary column into a typed column plus one error (or None) per row;
encoders do the reverse. ``kafka_eos.serde.batch`` applies them to whole RecordBatches (what
Spark's ``mapInArrow`` hands a Python worker) and routes failed rows by ``on_decode_error``.
"""
