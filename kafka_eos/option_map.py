"""The one case-insensitive view of a Spark option map (Spark's option names ignore case).

Spark hands a Python data source its options in a case-insensitive map (keys lower-cased);
callers of the parsers (the pipeline runner, the CLI tools, tests) hand plain dicts written as
users spell them (``checkpointLocation``). ``OptionMap`` reads both the same way.

Enforced here: a lookup ignores the key's case; of two keys equal but for case the later wins,
as in Spark's ``CaseInsensitiveDict``; values are kept as given. Iteration yields the lower-cased
keys, as Spark's own map does.
"""
from __future__ import annotations

from typing import Iterator, Mapping


class OptionMap(Mapping[str, str]):
    """A read-only, case-insensitive mapping of option name -> value."""

    def __init__(self, options: Mapping[str, str] | None = None) -> None:
        self._values: dict[str, str] = {str(k).lower(): v for k, v in (options or {}).items()}

    @classmethod
    def of(cls, options: Mapping[str, str]) -> "OptionMap":
        """``options`` as an ``OptionMap`` (itself when it already is one)."""
        return options if isinstance(options, OptionMap) else cls(options)

    def __getitem__(self, key: str) -> str:
        return self._values[key.lower()]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:  # names only: values may be secrets
        return f"OptionMap(keys={sorted(self._values)})"

    def with_prefix(self, prefix: str) -> dict[str, str]:
        """The options named ``<prefix><rest>`` as ``{rest: value}`` (``prefix`` in lower case)."""
        return {k[len(prefix):]: str(v) for k, v in self._values.items() if k.startswith(prefix)}
