"""Layers point one way: kafka_eos < txn, offsets, serde < config < connectors.

Every import in every module of the package folders (top-level or inside a function) names a
package of the same rank or below; below connectors nothing imports pyspark.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"kafka_eos": "kafka_eos", "txn": "kafka_eos.txn", "offsets": "kafka_eos.offsets",
           "serde": "kafka_eos.serde", "config": "kafka_eos.config", "connectors": "kafka_eos.connectors"}
RANKS = {"kafka_eos": 0, "kafka_eos.txn": 1, "kafka_eos.offsets": 1, "kafka_eos.serde": 1,
         "kafka_eos.config": 2, "kafka_eos.connectors": 3}
SPARK = ("pyspark", "py4j")
CONNECTORS = RANKS["kafka_eos.connectors"]


def rank(module: str) -> int | None:
    """The layer of ``module`` (None for a module outside kafka_eos)."""
    parts = module.split(".")
    if parts[0] != "kafka_eos":
        return None
    return RANKS.get(".".join(parts[:2]), RANKS["kafka_eos"])


def module_name(folder: str, path: Path) -> str:
    parts = [FOLDERS[folder], *path.relative_to(ROOT / folder).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The modules an import statement names (``from kafka_eos import x`` names kafka_eos.x)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        package = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
        base = ".".join(package + ([base] if base else []))
    return [f"{base}.{alias.name}" for alias in node.names] if base == "kafka_eos" else [base]


def violations(folder: str) -> list[str]:
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        module = module_name(folder, path)
        own = rank(module)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for name in imported(node, module, path.name == "__init__.py"):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                if own < CONNECTORS and name.split(".")[0] in SPARK:
                    found.append(f"{where}: imports {name} (pyspark only in connectors)")
                elif (rank(name) or 0) > own:
                    found.append(f"{where}: imports {name}, a higher layer than {module}")
    return found


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_imports_point_down(folder):
    assert (ROOT / folder).is_dir()
    assert violations(folder) == []


def test_the_check_sees_function_level_and_relative_imports(tmp_path, monkeypatch):
    (tmp_path / "serde").mkdir()
    (tmp_path / "serde" / "__init__.py").write_text("from . import codecs\n")
    (tmp_path / "serde" / "x.py").write_text(
        "import json\n\ndef f():\n    from kafka_eos import config\n    import pyspark.sql\n"
        "    from ..connectors import cli\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert violations("serde") == [
        "serde/x.py:4: imports kafka_eos.config, a higher layer than kafka_eos.serde.x",
        "serde/x.py:5: imports pyspark.sql (pyspark only in connectors)",
        "serde/x.py:6: imports kafka_eos.connectors, a higher layer than kafka_eos.serde.x"]


def test_everything_installs_under_the_kafka_eos_namespace():
    """No generic top-level names (config, txn, ...) in site-packages: every package is kafka_eos.*
    and every package folder of the repository is mapped into it."""
    import tomllib
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert all(p == "kafka_eos" or p.startswith("kafka_eos.") for p in setuptools["packages"])
    mapped = set(setuptools["package-dir"].values())
    folders = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "integration_tests", "bench"}
    assert folders <= mapped, f"package folders not mapped into kafka_eos: {folders - mapped}"
