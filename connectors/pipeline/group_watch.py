"""`kafka-eos run --watch DIR`: a group that follows the pipeline files of a directory.

Invariants:
- Every ``WATCH_S`` the directory's pipeline files are read (a digest of each). A new file is
  validated (its own rules with the live checks, and the group's rule against the pipelines
  running) and started; an invalid one is reported once and not started until it changes.
- A removed file's pipeline stops after its running batch commits (nothing left open, no standing
  stop request: the file put back starts it again); the others go on.
- A changed file is validated, and against its checkpoint (``checkpoint_compat.against_checkpoint``),
  before it replaces the running query: the old query stops after its running batch, then the new
  one starts on the same checkpoint. A refused change leaves the old query running and says why.
- The watch goes on until SIGTERM or SIGINT, which stop every pipeline as in a group.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.redact import Redactor
from kafka_eos.connectors.pipeline.group import Group

WATCH_S = 2.0
Validate = Callable[[str, list[PipelineConfig]], tuple[PipelineConfig | None, str]]


def digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:  # removed between the listing and the read: the next scan sees it gone
        return None


class Watch:
    """``scan()`` brings the group in line with the files of ``folder``."""

    def __init__(self, group: Group, folder: str, files: Callable[[], list[str]], validate: Validate,
                 against: Callable[[PipelineConfig], tuple[int, list[str]]]) -> None:
        self.group, self.folder, self.files, self.validate, self.against = group, folder, files, validate, against
        self.seen: dict[str, str] = {}  # file -> the digest last acted on

    def scan(self) -> None:
        found = {path: d for path in self.files() if (d := digest(path)) is not None}
        for path in sorted(self.seen.keys() - found.keys()):
            self._removed(path)
        for path, now in sorted(found.items()):
            if self.seen.get(path) != now:
                self.seen[path] = now
                self._arrived(path)

    def _removed(self, path: str) -> None:
        del self.seen[path]
        member = self.group.running().get(path)
        if member is not None:
            member.stop(f"{path} was removed from {self.folder}")

    def _arrived(self, path: str) -> None:
        running = self.group.running()
        old = running.get(path)
        others = [m.cfg for origin, m in running.items() if origin != path]
        cfg, refusal = self.validate(path, others)
        if cfg is None:
            self._say(f"kafka-eos: {path}: not {'replaced' if old else 'started'}; {refusal}")
            return
        if old is not None:
            code, lines = self.against(cfg)
            if code:
                self._say(Redactor(cfg.secrets())(f"kafka-eos: {path}: changed, not replaced: the running query goes on; "
                                                  + "\n".join(lines)))
                return
            old.stop(f"{path} changed")
            self.group.wait(old)
            self._say(f"kafka-eos: {path}: the changed pipeline replaces the stopped one on its checkpoint")
        self.group.start(cfg)

    def _say(self, line: str) -> None:
        self.group.emit(line)


def run_watch(group: Group, watch: Watch, interval_s: float = WATCH_S) -> int:
    """Scan every ``interval_s`` until the group is signalled; then wait for every pipeline."""
    group.relay.install()
    group.emit(f"kafka-eos: watching {watch.folder} for pipeline files (every {interval_s:.0f} s); "
               "SIGTERM or Ctrl-C stops every pipeline after its running batch")
    try:
        watch.scan()
        while not group.relay.stopping.wait(interval_s):
            watch.scan()
        group.wait()
    finally:
        group.relay.uninstall()
    return group.summary()
