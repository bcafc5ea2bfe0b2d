"""Every error an operator can meet has a runbook: each ``KafkaEosError`` subclass of the
production packages resolves (its own name, else a base class's, in ``kafka_eos/runbooks.py``) to
an anchor that is a heading of docs/runbooks.md. The only exceptions are ``NEVER_RAISED_TO_AN_OPERATOR``,
each with the reason; a new error class fails here until it is mapped or listed."""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pytest

import kafka_eos
from kafka_eos import KafkaEosError, runbooks
from tests.test_runbooks import PAGE, headings

PACKAGES = ("kafka_eos.txn", "kafka_eos.offsets", "kafka_eos.serde", "kafka_eos.config", "kafka_eos.connectors")
DEV_TOOLING = "kafka_eos.connectors.dev"  # not imported here; a class of it production code imports is in scope
# error class -> why no operator meets it as an error (keep this short: every other class gets a runbook)
NEVER_RAISED_TO_AN_OPERATOR: dict[str, str] = {
    "ClusterProblem": "config/live.py raises it only to its own callers: validate and status catch it and print "
                      "its violation (YAML path, message, fix; exit 1-3)",
    "RowDecodeError": "one record's decode error: decode_rows catches it and its text becomes the row's error (the "
                      "DLQ header kafka-eos.error, the skip warning, RecordDecodeError's message, which links the "
                      "runbook); a link in it would be written into every DLQ record",
    "UnknownSchemaId": "one record's decode error (AvroDecoder turns it into the row's RowDecodeError): see "
                       "RowDecodeError",
    "WireFormatError": "one record's decode error (unframe of a value that is not Confluent-framed becomes the "
                       "row's RowDecodeError; frame gets registry ids only): see RowDecodeError",
}
# exempt errors whose text still reaches an operator inside another message: the page names them
NAMED_ON_THE_PAGE = ("RowDecodeError", "UnknownSchemaId", "WireFormatError")


def _modules(package: ModuleType) -> list[str]:
    """Every module of ``package`` and its subpackages, without the dev tooling."""
    found = []
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if info.name == DEV_TOOLING or info.name.startswith(DEV_TOOLING + "."):
            continue
        found.append(info.name)
        if info.ispkg:
            found += _modules(importlib.import_module(info.name))
    return found


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


@pytest.fixture(scope="module")
def errors() -> dict[str, type]:
    """Name -> class of every KafkaEosError subclass defined in kafka_eos's packages, once each
    production module is imported (test-defined subclasses are left out)."""
    names = [m.name for m in pkgutil.iter_modules(kafka_eos.__path__, "kafka_eos.") if not m.ispkg]
    for package in PACKAGES:
        names += [package, *_modules(importlib.import_module(package))]
    for name in names:
        importlib.import_module(name)
    found: dict[str, type] = {}
    for cls in _subclasses(KafkaEosError):
        if cls.__module__.startswith("kafka_eos."):
            assert found.setdefault(cls.__name__, cls) is cls, f"two error classes named {cls.__name__}"
    return found


def test_every_error_an_operator_can_meet_has_a_runbook(errors):
    sections = headings()
    missing = sorted(f"{cls.__module__}.{name}" for name, cls in errors.items()
                     if name not in NEVER_RAISED_TO_AN_OPERATOR and runbooks.anchor_of(cls) not in sections)
    assert missing == [], (f"{len(missing)} error classes have no section of {runbooks.PAGE}: map each in "
                           f"kafka_eos/runbooks.py ANCHORS (or, if no operator can meet it, list it with the reason "
                           f"in NEVER_RAISED_TO_AN_OPERATOR): {missing}")


def test_the_exempt_classes_exist_and_have_no_runbook(errors):
    """The list stays true: a class that is gone, or that got a runbook, leaves it."""
    assert sorted(set(NEVER_RAISED_TO_AN_OPERATOR) - set(errors)) == []
    assert [n for n in NEVER_RAISED_TO_AN_OPERATOR if runbooks.anchor_of(errors[n]) is not None] == []


def test_every_mapped_name_is_an_error_class(errors):
    assert sorted(set(runbooks.ANCHORS) - set(errors)) == []


def test_the_decode_errors_a_message_quotes_are_named_on_the_page():
    text = PAGE.read_text()
    assert [n for n in NAMED_ON_THE_PAGE if f"`{n}`" not in text] == []
