"""The Spark option tables of ``config/README.md``, generated from ``spark_option_table``.

The README holds one table per side between ``<!-- spark-options:<side> -->`` and
``<!-- /spark-options -->``; ``render_readme`` rewrites what lies between them, and a unit test
fails when the README differs from it. Regenerate with
``python -m kafka_eos.config.option_docs config/README.md``. Test hooks are left out of the tables.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from kafka_eos.config.spark_option import Kind, SparkOption
from kafka_eos.config.spark_option_table import SINK_OPTIONS, SOURCE_OPTIONS

TABLES = {"source": SOURCE_OPTIONS, "sink": SINK_OPTIONS}
_BLOCK = re.compile(r"(<!-- spark-options:(\w+) -->\n)(.*?)(<!-- /spark-options -->)", re.S)


def _kind(o: SparkOption) -> str:
    return " / ".join(f"`{c}`" for c in o.choices) if o.kind is Kind.CHOICE else o.kind.value


def _default(o: SparkOption) -> str:
    return "—" if o.default is None else f"`{o.text(o.default)}`"


def table(side: str) -> str:
    """The markdown table of ``side``'s options (test hooks left out)."""
    rows = ["| option | kind | default | YAML key | meaning |", "|--------|------|---------|----------|---------|"]
    rows += [f"| `{o.name}` | {_kind(o)} | {_default(o)} | {f'`{o.yaml}`' if o.yaml else '—'} | {o.doc} |"
             for o in TABLES[side] if not o.test_only]
    return "\n".join(rows) + "\n"


def render_readme(text: str) -> str:
    """``text`` with every option block replaced by the table of its side."""
    return _BLOCK.sub(lambda m: m.group(1) + table(m.group(2)) + m.group(4), text)


def blocks(text: str) -> list[str]:
    """The sides whose option block ``text`` holds, in order."""
    return [m.group(2) for m in _BLOCK.finditer(text)]


if __name__ == "__main__":
    path = Path(sys.argv[1])
    path.write_text(render_readme(path.read_text()))
