"""The compiled Spark home: links, a zip whose modules import from bytecode, one overlay per key."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from kafka_eos.connectors import spark_home


def fake_home(root: Path, body: str = "VALUE = 41 + 1\n") -> Path:
    home = root / "pyspark"
    (home / "python" / "lib").mkdir(parents=True)
    for name in ("bin", "jars", "sbin"):
        (home / name).mkdir()
    (home / "jars" / "spark-core.jar").write_bytes(b"jar")
    (home / "python" / "lib" / "py4j-0.10.9.9-src.zip").write_bytes(b"py4j")
    with zipfile.ZipFile(home / "python" / "lib" / "pyspark.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("fakespark/__init__.py", "")
        z.writestr("fakespark/mod.py", body)
        z.writestr("fakespark/broken.py", "def (:\n")
        z.writestr("fakespark/data.txt", "not python")
    return home


def import_from(zip_path: Path, module: str) -> str:
    """Import ``module`` from ``zip_path`` in a fresh interpreter; its ``__file__`` and VALUE."""
    code = f"import {module} as m; print(m.__file__, m.VALUE)"
    env = {**os.environ, "PYTHONPATH": str(zip_path), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_overlay_links_spark_and_its_zip_imports_from_bytecode(tmp_path):
    home = fake_home(tmp_path)
    overlay = spark_home.compiled_home(tmp_path / "cache", home)
    assert overlay is not None and overlay.parent == tmp_path / "cache"
    assert [(overlay / n).resolve() for n in ("bin", "jars", "sbin")] == [home / n for n in ("bin", "jars", "sbin")]
    assert not (overlay / "conf").exists()
    lib = overlay / "python" / "lib"
    assert (lib / "py4j-0.10.9.9-src.zip").resolve() == home / "python" / "lib" / "py4j-0.10.9.9-src.zip"
    names = zipfile.ZipFile(lib / "pyspark.zip").namelist()
    assert {"fakespark/mod.py", "fakespark/mod.pyc", "fakespark/__init__.pyc", "fakespark/data.txt",
            "fakespark/broken.py"} <= set(names)
    assert "fakespark/broken.pyc" not in names, "a module that does not compile stays source only"
    assert import_from(lib / "pyspark.zip", "fakespark.mod").endswith("mod.pyc 42")
    assert import_from(home / "python" / "lib" / "pyspark.zip", "fakespark.mod").endswith("mod.py 42")


def test_one_overlay_per_source_zip_and_none_for_another_layout(tmp_path):
    home = fake_home(tmp_path)
    first = spark_home.compiled_home(tmp_path / "cache", home)
    assert spark_home.compiled_home(tmp_path / "cache", home) == first
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [first.name], "no partial folder is left"
    source = home / "python" / "lib" / "pyspark.zip"
    with zipfile.ZipFile(source, "a") as z:  # an upgraded pyspark: another zip, another overlay
        z.writestr("fakespark/extra.py", "VALUE = 7\n")
    second = spark_home.compiled_home(tmp_path / "cache", home)
    assert second != first and import_from(second / "python" / "lib" / "pyspark.zip", "fakespark.extra").endswith(" 7")
    source.unlink()
    assert spark_home.overlay_path(tmp_path / "cache", home) is None
    assert spark_home.compiled_home(tmp_path / "cache", home) is None


def test_a_renamed_overlay_of_a_concurrent_build_is_kept(tmp_path, monkeypatch):
    home = fake_home(tmp_path)
    target = spark_home.overlay_path(tmp_path / "cache", home)
    real_populate = spark_home._populate

    def other_build_finishes_first(source: Path, work: Path) -> None:
        real_populate(source, work)
        target.mkdir(parents=True)  # another process's rename landed in between
        (target / "theirs").write_text("x")

    monkeypatch.setattr(spark_home, "_populate", other_build_finishes_first)
    assert spark_home.compiled_home(tmp_path / "cache", home) == target
    assert [p.name for p in target.iterdir()] == ["theirs"]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [target.name]


def test_the_suite_runs_spark_from_the_overlay_only_where_one_was_built(tmp_path, monkeypatch):
    from integration_tests.fast_jvms import fast_test_jvms
    home = fake_home(tmp_path)
    monkeypatch.setattr(spark_home, "pip_home", lambda: home)
    env: dict[str, str] = {}
    fast_test_jvms(env, tmp_path / "archives")
    assert "SPARK_HOME" not in env, "no overlay built: Spark starts as before"
    assert env["KAFKA_EOS_SPARK_HOME_CACHE"] == str(tmp_path / "archives"), "a run builds one there, not in ~/.cache"
    overlay = spark_home.compiled_home(tmp_path / "archives")
    env = {}
    fast_test_jvms(env, tmp_path / "archives")
    assert env["SPARK_HOME"] == str(overlay)
    env = {"SPARK_HOME": "/opt/spark"}
    fast_test_jvms(env, tmp_path / "archives")
    assert env["SPARK_HOME"] == "/opt/spark", "a Spark home the caller set is kept"
