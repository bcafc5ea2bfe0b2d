"""ARCHITECTURE.md names only paths that exist: each answer is a path, each path true."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_path_architecture_md_names_exists():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    paths = set(re.findall(r"`([\w./-]+\.(?:py|md|toml))`", text)) - {"../shared/design-2pc.md"}
    assert len(paths) > 20
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert missing == [], f"ARCHITECTURE.md names missing paths: {missing}"
