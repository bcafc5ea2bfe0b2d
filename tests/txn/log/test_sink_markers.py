"""The id-scheme and retirement markers beside the sink log."""
from __future__ import annotations

import json

from kafka_eos.txn.log import sink_markers
from kafka_eos.txn.log.sink_log import SinkLog


def test_a_new_sink_log_takes_owner_ids_and_keeps_them(tmp_path):
    location = str(tmp_path / "log")
    scheme = sink_markers.id_scheme(location, "0000aaaa")
    assert (scheme.scheme, scheme.id_owner) == ("owner", "0000aaaa")
    SinkLog(location, "p", "q1")
    assert sink_markers.id_scheme(location, "ffffffff").id_owner == "0000aaaa"  # recorded once


def test_a_sink_log_of_an_older_build_keeps_the_legacy_ids(tmp_path):
    location = str(tmp_path / "log")
    SinkLog(location, "p", "q1")  # the older build wrote _meta.json and no scheme
    scheme = sink_markers.id_scheme(location, "0000aaaa")
    assert scheme.scheme == "legacy" and scheme.id_owner is None
    assert json.loads((tmp_path / "log" / "_ids.json").read_text())["v"] == sink_markers.MARKER_FORMAT


def test_reading_creates_nothing_and_retirement_is_create_only(tmp_path):
    location = str(tmp_path / "log")
    assert sink_markers.read_id_scheme(location) is None and sink_markers.retired(location) is None
    assert not (tmp_path / "log").exists()
    assert sink_markers.mark_retired(location, "t1", "h") is True
    assert sink_markers.mark_retired(location, "t2", "h") is False
    assert sink_markers.retired(location)["retired_at"] == "t1"
