"""The stop marker opens its store's client once, and a pickled copy opens its own."""
from __future__ import annotations

import pickle

from kafka_eos.connectors.source import stop_marker
from kafka_eos.connectors.source.stop_marker import StopMarker


def test_the_store_is_opened_once_per_marker_and_never_pickled(tmp_path, monkeypatch):
    opened: list[str] = []
    real_open = stop_marker.open_reader

    def counting_open(location: str):
        opened.append(location)
        return real_open(location)

    monkeypatch.setattr(stop_marker, "open_reader", counting_open)
    marker = StopMarker.of_checkpoint(str(tmp_path))
    assert [marker.present() for _ in range(5)] == [False] * 5
    marker.place()
    assert marker.present()
    assert opened == [str(tmp_path)], "one reader for every check"
    copy = pickle.loads(pickle.dumps(marker))
    assert copy._reader is None and copy._store is None and copy.present()
