"""``Section``: typed reads from one YAML mapping, collecting problems instead of raising.

Invariants:
- The keys a section knows are exactly the keys its builder asked for; ``done()`` reports every
  other key as unknown, with a "did you mean" (difflib) when one is close.
- A value of the wrong type is reported (YAML path, what was expected, an example) and the
  default is used instead, so building goes on and later problems are reported too.
"""
from __future__ import annotations

import builtins
import difflib
from enum import Enum
from typing import Any, TypeVar, overload

from kafka_eos.config.durations import parse_duration_ms
from kafka_eos.config.interpolate import child_path
from kafka_eos.config.violations import Violation

E = TypeVar("E", bound=Enum)
_MISSING = object()


def did_you_mean(word: str, choices: list[str]) -> str | None:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return close[0] if close else None


def scalar_text(value: Any) -> str:
    """YAML scalars as client settings want them: booleans lower-case, numbers as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _whole_number(value: Any) -> int:
    """An int from a YAML int, an integral float, or text such as "10_000" (from ``${VAR}``)."""
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(value)
    return int(value) if isinstance(value, float) else int(str(value).strip().replace("_", ""))


class Section:
    def __init__(self, data: Any, path: str, problems: list[Violation]) -> None:
        self.path, self.problems = path, problems
        self.known: list[str] = []
        if data is None:
            data = {}
        if not isinstance(data, dict):
            self.problem(path, f"must be a mapping (key: value lines), got {type(data).__name__}",
                         f"write {path or 'the file'} as indented 'key: value' lines")
            data = {}
        self.data: dict = data

    def problem(self, path: str, message: str, fix: str) -> None:
        self.problems.append(Violation(path, message, fix))

    def at(self, key: str) -> str:
        return child_path(self.path, key)

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any = None) -> Any:
        if key not in self.known:  # a key read twice (text and parsed) is one known key
            self.known.append(key)
        return self.data.get(key, default)

    def str(self, key: str, default: str | None = None) -> str | None:
        value = self.raw(key, _MISSING)
        if value is _MISSING:
            return default
        if value is None:
            return None
        if isinstance(value, (dict, list)):
            self.problem(self.at(key), f"must be a single value, got a {type(value).__name__}",
                         f"write {key}: <text>")
            return default
        return scalar_text(value)

    # in this class ``str`` and ``int`` name the methods, so annotations spell the builtins out
    @overload
    def int(self, key: builtins.str, default: builtins.int, minimum: builtins.int = 0) -> builtins.int: ...
    @overload
    def int(self, key: builtins.str, default: None, minimum: builtins.int = 0) -> builtins.int | None: ...

    def int(self, key: builtins.str, default: builtins.int | None, minimum: builtins.int = 0) -> builtins.int | None:
        value = self.raw(key, _MISSING)
        if value is _MISSING or value is None:
            return default
        try:
            number = _whole_number(value)
        except ValueError:
            self.problem(self.at(key), f"must be a whole number, got {value!r}", f"write e.g. {key}: 10000")
            return default
        if number < minimum:
            self.problem(self.at(key), f"must be at least {minimum}, got {number}", f"set {key} to {minimum} or more")
            return default
        return number

    def duration_ms(self, key: builtins.str, default: builtins.int) -> builtins.int:
        value = self.raw(key, _MISSING)
        if value is _MISSING or value is None:
            return default
        try:
            return parse_duration_ms(value)
        except ValueError as exc:
            self.problem(self.at(key), str(exc), f"write e.g. {key}: 10 seconds")
            return default

    def bool(self, key: builtins.str, default: bool) -> bool:
        value = self.raw(key, _MISSING)
        if value is _MISSING or value is None:
            return default
        text = scalar_text(value).strip().lower()
        if text not in ("true", "false"):
            self.problem(self.at(key), f"must be true or false, got {value!r}", f"write {key}: true")
            return default
        return text == "true"

    def choice(self, key: builtins.str, enum: type[E], default: E, allowed: tuple[E, ...] | None = None) -> E:
        value = self.raw(key, _MISSING)
        if value is _MISSING or value is None:
            return default
        options = [e.value for e in (allowed or tuple(enum))]
        text = scalar_text(value).strip().lower()
        if text not in options:
            close = did_you_mean(text, options)
            self.problem(self.at(key), f"{value!r} is not one of {', '.join(options)}",
                         f"did you mean '{close}'?" if close else f"use one of: {', '.join(options)}")
            return default
        return enum(text)

    def str_list(self, key: builtins.str) -> tuple[builtins.str, ...]:
        value = self.raw(key)
        if value is None:
            return ()
        if isinstance(value, str):
            return tuple(v.strip() for v in value.split(",") if v.strip())
        if not isinstance(value, list) or any(isinstance(v, (dict, list)) or v is None for v in value):
            self.problem(self.at(key), f"must be a list of names, got {value!r}", f"write {key}: [a, b]")
            return ()
        return tuple(scalar_text(v) for v in value)

    def mapping(self, key: builtins.str) -> dict[builtins.str, builtins.str]:
        """A free-form ``name: value`` mapping (client settings, Spark options): keys not checked."""
        value = self.raw(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(self.at(key), f"must be a mapping of settings, got {type(value).__name__}",
                         f"write {key}: followed by indented 'name: value' lines")
            return {}
        result = {}
        for name, item in value.items():
            if item is None or isinstance(item, (dict, list)):
                self.problem(child_path(self.at(key), name), f"must be a single value, got {item!r}",
                             "quote the value, or remove the setting")
                continue
            result[scalar_text(name)] = scalar_text(item)
        return result

    def section(self, key: builtins.str) -> "Section":
        return Section(self.raw(key), self.at(key), self.problems)

    def optional_section(self, key: builtins.str) -> "Section | None":
        value = self.raw(key)
        return None if value is None else Section(value, self.at(key), self.problems)

    def done(self) -> None:
        for key in self.data:
            if key in self.known:
                continue
            close = did_you_mean(str(key), self.known)
            self.problem(self.at(str(key)), f"unknown key '{key}'",
                         f"did you mean '{close}'?" if close else
                         f"remove it; known keys here: {', '.join(sorted(self.known))}")
