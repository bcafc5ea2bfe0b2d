"""One Spark option of the kafka-eos source or sink: its declaration, and how its value is read and written.

A ``SparkOption`` names the option as users write it, its kind, its default, the YAML key that
sets it (if any) and one doc line; ``kafka_eos.config.spark_option_table`` declares them all.
Pure data and pure functions (no pyspark): the config rules, the option maps the runner builds,
the source's and sink's parsers and the docs' option tables all read the same declaration.

Enforced here:
- ``read`` looks the option up ignoring case (``kafka_eos.option_map``) and turns its text into the
  declared kind, or raises the caller's error class naming the option, the value and what is allowed.
- ``text`` renders a typed value as the string Spark is given, so ``read(text(v)) == v``.
- ``refuse_test_hooks``: an option declared ``test_only`` (fault injection) is refused unless the
  environment variable ``KAFKA_EOS_TEST_HOOKS`` is ``1`` (the test suites and the chaos runner set it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Mapping

from kafka_eos.option_map import OptionMap

TEST_HOOKS_ENV = "KAFKA_EOS_TEST_HOOKS"


class Kind(Enum):
    TEXT = "text"
    BOOL = "true/false"
    INT = "whole number"
    POSITIVE = "whole number >= 1"
    NON_NEGATIVE = "whole number >= 0"
    CHOICE = "one of"


Value = str | int | bool | None


@dataclass(frozen=True)
class SparkOption:
    name: str                    # as users write it; Spark ignores its case
    side: str                    # "source" or "sink"
    kind: Kind
    default: Value               # None: unset (required options say so in ``doc``)
    doc: str
    yaml: str | None = None      # the YAML key that sets it (then it is not for ``<side>.options``)
    choices: tuple[str, ...] = ()
    test_only: bool = False      # a test hook: refused unless KAFKA_EOS_TEST_HOOKS=1

    @property
    def key(self) -> str:
        """The name as Spark hands it to a data source (lower-cased)."""
        return self.name.lower()

    @property
    def label(self) -> str:
        return f"{self.side} option {self.name}"

    def given(self, options: Mapping[str, str]) -> bool:
        return OptionMap.of(options).get(self.name) is not None

    def read(self, options: Mapping[str, str], error: type[Exception] = ValueError) -> Value:
        """The value of this option in ``options`` (its default when unset), as its kind."""
        raw = OptionMap.of(options).get(self.name)
        if raw is None:
            return self.default
        text = str(raw).strip()
        if self.kind is Kind.TEXT:
            return str(raw)
        if self.kind is Kind.BOOL:
            if text.lower() not in ("true", "false"):
                raise error(f"{self.label}={raw!r} must be true or false")
            return text.lower() == "true"
        if self.kind is Kind.CHOICE:  # any case; the choice as declared
            choice = next((c for c in self.choices if c.lower() == text.lower()), None)
            if choice is None:
                raise error(f"{self.label}={raw!r} must be " + " or ".join(repr(c) for c in self.choices))
            return choice
        return self._number(raw, text, error)

    def _number(self, raw: str, text: str, error: type[Exception]) -> int:
        unit = " of milliseconds" if self.name.lower().endswith("ms") else ""
        try:
            number = int(text)
        except ValueError:
            what = "a positive whole number" if self.kind is Kind.POSITIVE else f"a whole number{unit}"
            raise error(f"{self.label}={raw!r} must be {what}") from None
        if self.kind is Kind.POSITIVE and number < 1:
            raise error(f"{self.label}={number} must be at least 1")
        if self.kind is Kind.NON_NEGATIVE and number < 0:
            raise error(f"{self.label}={number} must not be negative")
        return number

    def text(self, value: Value) -> str:
        """``value`` as the string Spark is given for this option."""
        if self.kind is Kind.BOOL:
            return "true" if value else "false"
        return "" if value is None else str(value)


def hooks_allowed(env: Mapping[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get(TEST_HOOKS_ENV) == "1"


def refuse_test_hooks(declared: Iterable[SparkOption], options: Mapping[str, str],
                      error: type[Exception] = ValueError, env: Mapping[str, str] | None = None) -> None:
    """Raise ``error`` naming every ``test_only`` option set in ``options``, unless test hooks are allowed."""
    hooks = [o for o in declared if o.test_only and o.given(options)]
    if hooks and not hooks_allowed(env):
        names = ", ".join(o.name for o in hooks)
        what = "option {} is a test hook" if len(hooks) == 1 else "options {} are test hooks"
        raise error(f"{hooks[0].side} {what.format(names)} (pausing the sink at a step of its commit protocol so "
                    f"a test can kill it there), refused outside the test suites: remove "
                    f"{'it' if len(hooks) == 1 else 'them'} (the suites set {TEST_HOOKS_ENV}=1)")
