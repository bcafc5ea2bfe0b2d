"""Where ``kafka-eos run`` keeps what it builds once per user (class archives, the compiled Spark home)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping


def cache_folder(env: Mapping[str, str], variable: str, name: str) -> Path | None:
    """``$<variable>`` if set (``off``, any case: None, nothing kept), else
    ``$XDG_CACHE_HOME/kafka-eos/<name>``, else ``~/.cache/kafka-eos/<name>``."""
    chosen = env.get(variable, "").strip()
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen)
    cache = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(cache) / "kafka-eos" / name
