"""What is a secret and how it is held: the one owner of that rule for every layer.

Invariants:
- A ``Secret``'s repr/str/format is ``***``; only ``reveal()`` returns the value (pickling keeps it,
  so Spark closures carry it to executors).
- ``is_secret_key`` decides, for every layer, whether a client setting holds a secret.
"""
from __future__ import annotations

import re
from typing import Union

SECRET_KEY = re.compile(r"password|secret|jaas|token|credential|ssl\.key|private|basic\.auth", re.I)


class Secret:
    """A secret string: ``***`` in repr/str/format; ``reveal()`` gives the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        object.__setattr__(self, "_value", str(value))

    def reveal(self) -> str:
        return self._value

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Secret is immutable")

    def __repr__(self) -> str:
        return "***"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return "***"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self):  # pickles (Spark closures) keep the value; only text forms hide it
        return (Secret, (self._value,))


Value = Union[str, Secret]


def reveal(value: Value | None) -> str | None:
    return value.reveal() if isinstance(value, Secret) else value


def is_secret_key(key: str) -> bool:
    """Whether a client setting holds a secret (e.g. ``sasl.password``, ``ssl.key.pem``)."""
    return SECRET_KEY.search(key) is not None


