"""Savepoints (issue 65) across pyspark versions, on the real broker and Spark, through the
``kafka-eos`` CLI as users run it (the flow and its checks: ``savepoint_cli.save_and_restore``).

- A savepoint taken on pyspark 4.1 and restored on 4.3: the old pipeline (savepoint_cells' 1-minute
  tumbling count per page, watermark 30 s, a late topic and a DLQ) run and saved by the CLI of the
  matrix venv ``build/matrix/venv-4.1.4`` (its own Spark home, JVM and Python workers; the driver's
  JVM is checked to load Spark 4.1.4's jars), a start of the saved checkpoint on 4.3 refused (exit 5),
  the changed pipeline (an added output column) validated and restored with ``run --from-savepoint
  --once`` by this venv's CLI (pyspark 4.3; its JVM checked too).
- Back: a savepoint taken by this venv's CLI (pyspark 4.3) and restored by the CLI of the matrix venv
  of pyspark 4.1.4 (also 4.0.5 and 4.2.1), the same way.

Each checks every window the final watermark closed equals a batch count over the whole input, once
(read_committed), the closed ones emitted by the old query and the open ones by the new; late
records once; the DLQ once. It prints (and records, ``record_property``) its figures: windows,
records, seconds to savepoint and to restore. The matrix venvs are built by ``make matrix``
(``integration_tests.matrix.venv``); without one the test fails, saying so.
"""
from __future__ import annotations

import pyspark
import pytest

from integration_tests.savepoint_cli import line, matrix_cli, own_cli, save_and_restore

OLD_PYSPARK = "4.1.4"


def _record(figures: dict, record_property) -> None:
    for name, value in figures.items():
        record_property(name, value)


@pytest.mark.slow  # about 3 minutes: the old pipeline on pyspark 4.1.4 until the savepoint, the restore on 4.3
@pytest.mark.chaos  # make chaos KIND=pipeline
def test_a_savepoint_taken_on_pyspark_4_1_restored_on_4_3_emits_every_window_once(bootstrap, tmp_path,
                                                                                   record_property):
    assert pyspark.__version__.startswith("4.3."), f"the restore runs on this venv's pyspark: {pyspark.__version__}"
    figures = save_and_restore(matrix_cli(OLD_PYSPARK, bootstrap, tmp_path), own_cli(bootstrap, tmp_path), tmp_path,
                               bootstrap)
    _record(figures, record_property)
    print(line(figures, f"pyspark {OLD_PYSPARK} -> {pyspark.__version__}"))


@pytest.mark.slow  # about 3 minutes each: the old pipeline on pyspark 4.3 until the savepoint, the restore on the other
@pytest.mark.chaos  # make chaos KIND=pipeline
@pytest.mark.parametrize("version", ["4.1.4", "4.0.5", "4.2.1"])
def test_a_savepoint_taken_on_pyspark_4_3_restored_on_an_older_4_x_emits_every_window_once(bootstrap, tmp_path,
                                                                                           record_property, version):
    assert pyspark.__version__.startswith("4.3."), f"the savepoint runs on this venv's pyspark: {pyspark.__version__}"
    figures = save_and_restore(own_cli(bootstrap, tmp_path), matrix_cli(version, bootstrap, tmp_path), tmp_path,
                               bootstrap)
    _record(figures, record_property)
    print(line(figures, f"pyspark {pyspark.__version__} -> {version}"))
