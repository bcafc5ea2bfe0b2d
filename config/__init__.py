"""Pipeline files: the YAML model, its loading and its rules (pure Python).

Nothing here imports pyspark or ``kafka_eos.connectors`` (``tests/test_layers.py`` checks it):
the Spark option mapping, the connectors' own acceptance check and checkpoint inspection live
in ``kafka_eos.connectors.pipeline``.
"""
