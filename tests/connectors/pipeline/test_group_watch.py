"""``run --watch DIR``: files added, removed, changed, and invalid ones (a fake group; the real one in integration)."""
from __future__ import annotations

from types import SimpleNamespace

from kafka_eos.connectors.cli_group import group_files
from kafka_eos.connectors.pipeline.group_watch import Watch


class FakeGroup:
    def __init__(self):
        self.members: dict[str, SimpleNamespace] = {}
        self.lines: list[str] = []
        self.events: list[tuple[str, str]] = []

    def running(self):
        return {path: m for path, m in self.members.items() if not m.stopped}

    def start(self, cfg):
        self.events.append(("start", cfg.origin))
        self.members[cfg.origin] = SimpleNamespace(cfg=cfg, stopped=None, stop=lambda reason, o=cfg.origin: self._stop(o, reason))

    def _stop(self, origin, reason):
        self.members[origin].stopped = reason
        self.events.append(("stop", origin))

    def wait(self, member):
        self.events.append(("wait", member.cfg.origin))

    def emit(self, line):
        self.lines.append(line)


def _watch(tmp_path, against=lambda cfg: (0, [])):
    group = FakeGroup()
    validated = []

    def validate(path, others):
        validated.append((path, [c.origin for c in others]))
        text = open(path).read()
        if "bad" in text:
            return None, "sink.topic: missing"
        return SimpleNamespace(origin=path, text=text, secrets=lambda: []), ""
    return Watch(group, str(tmp_path), lambda: group_files([str(tmp_path)]), validate, against), group, validated


def test_a_file_added_starts_and_a_file_removed_stops_only_its_pipeline(tmp_path):
    watch, group, _ = _watch(tmp_path)
    (tmp_path / "a.yaml").write_text("a")
    watch.scan()
    (tmp_path / "b.yaml").write_text("b")
    watch.scan()
    watch.scan()  # nothing changed: nothing done
    (tmp_path / "a.yaml").unlink()
    watch.scan()
    a, b = str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")
    assert group.events == [("start", a), ("start", b), ("stop", a)]
    assert "was removed from" in group.members[a].stopped and group.members[b].stopped is None


def test_an_invalid_file_is_reported_once_and_started_once_fixed(tmp_path):
    watch, group, validated = _watch(tmp_path)
    (tmp_path / "a.yaml").write_text("bad")
    watch.scan()
    watch.scan()
    assert group.events == [] and len(group.lines) == 1 and "not started; sink.topic: missing" in group.lines[0]
    (tmp_path / "a.yaml").write_text("good")
    watch.scan()
    assert group.events == [("start", str(tmp_path / "a.yaml"))] and len(validated) == 2


def test_a_changed_file_checked_against_its_checkpoint_replaces_the_running_query(tmp_path):
    watch, group, validated = _watch(tmp_path)
    (tmp_path / "a.yaml").write_text("v1")
    (tmp_path / "b.yaml").write_text("b")
    watch.scan()
    (tmp_path / "a.yaml").write_text("v2")
    watch.scan()
    a = str(tmp_path / "a.yaml")
    assert group.events[2:] == [("stop", a), ("wait", a), ("start", a)]
    assert validated[-1] == (a, [str(tmp_path / "b.yaml")])  # the group's rule: against the others only


def test_a_change_the_checkpoint_refuses_leaves_the_running_query(tmp_path):
    watch, group, _ = _watch(tmp_path, against=lambda cfg: (1, ["  sink.format: needs a new checkpoint"]))
    (tmp_path / "a.yaml").write_text("v1")
    watch.scan()
    (tmp_path / "a.yaml").write_text("v2")
    watch.scan()
    assert group.events == [("start", str(tmp_path / "a.yaml"))]
    assert "changed, not replaced: the running query goes on" in group.lines[-1] and "sink.format" in group.lines[-1]
