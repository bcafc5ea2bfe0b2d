"""Environment variables set for the span of a block, then restored (unset ones unset again)."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def environment(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
