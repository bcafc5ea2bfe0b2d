"""`kafka-eos savepoint`, `run --from-savepoint` and `validate --against-savepoint` (logic in
connectors/pipeline/savepoint.py, restore.py and savepoint_check.py; design: docs/savepoints.md)."""
from __future__ import annotations

import argparse
import sys
from typing import Callable


def _savepoint(args: argparse.Namespace) -> int:
    """Exit 0 saved (or already), 1 an invalid file or a refused savepoint, 4 the run did not stop in time."""
    import pyspark

    from kafka_eos import KafkaEosError
    from kafka_eos.config.redact import install
    from kafka_eos.config.violations import InvalidPipeline, exit_code
    from kafka_eos.connectors.exit_codes import of_error
    from kafka_eos.connectors.pipeline.savepoint import describe, take
    from kafka_eos.connectors.pipeline.validation import load_valid
    try:
        cfg = load_valid(args.pipeline, offline=True)
    except InvalidPipeline as exc:
        print(f"kafka-eos: {args.pipeline}: nothing was saved; {exc}", file=sys.stderr)
        return exit_code(exc.violations)
    redactor = install(cfg.secrets())

    def emit(line: str) -> None:
        print(redactor(line), flush=True)
    try:
        done = take(cfg, args.to, pyspark.__version__, emit, args.wait)
    except (KafkaEosError, OSError) as exc:
        print(redactor(f"kafka-eos savepoint {cfg.name}: {exc}"), file=sys.stderr)
        return of_error(exc) if isinstance(exc, KafkaEosError) else 2
    for line in describe(done):
        emit(f"kafka-eos savepoint {cfg.name}: {line}")
    return 0


def restore_before_run(cfg, location: str, timeout_s: float, redactor: Callable[[str], str]) -> int | None:
    """``run --from-savepoint``: write the new checkpoint's restore record (``restore.prepare``);
    the exit code of a refusal, None when the run may go on (its first query replays)."""
    from kafka_eos import KafkaEosError
    from kafka_eos.connectors.exit_codes import of_error
    from kafka_eos.connectors.pipeline.restore import prepare
    from kafka_eos.connectors.pipeline.savepoint import register_savepoint
    from kafka_eos.connectors.pipeline.savepoint_check import refusal_at
    register_savepoint(cfg, location)
    try:
        start = prepare(cfg, location, timeout_s)
    except KafkaEosError as exc:
        print(redactor(f"kafka-eos: {cfg.origin}: nothing was started; {refusal_at(cfg, location, exc)}"),
              file=sys.stderr)
        return of_error(exc)
    replay = "nothing to replay (stateless)" if start.w0_ms is None else (
        f"replaying from batch {start.rewind_batch} of the saved pipeline, windows from {start.w0_ms} ms on")
    print(redactor(f"kafka-eos {cfg.name}: starting checkpoint {cfg.checkpoint.location} from savepoint {location}: "
                   f"{replay}"), flush=True)
    return None


def against_savepoint(cfgs: list, location: str, timeout_s: float, offline: bool) -> tuple[int, str]:
    """``validate --against-savepoint``: (exit code, text) for each file."""
    from kafka_eos.connectors.pipeline.savepoint_check import against
    results = [against(cfg, location, timeout_s, offline) for cfg in cfgs]
    return max(code for code, _ in results), "\n".join(text for _, text in results)


def add_savepoint_command(sub) -> None:
    save = sub.add_parser("savepoint", help="stop a pipeline at a batch boundary (as `stop` does) and save where it "
                          "stopped, so that a changed pipeline goes on from it on a new checkpoint (`run "
                          "--from-savepoint`); the old checkpoint writes nothing more")
    save.add_argument("pipeline", metavar="pipeline.yaml")
    save.add_argument("--to", metavar="LOCATION", help="where to write the savepoint (a folder, local or remote; "
                      "default: _savepoint beside the pipeline's sink log)")
    save.add_argument("--wait", type=float, default=600.0, metavar="SECONDS", help="how long to wait for the "
                      "running batch to commit (default 600)")
    save.set_defaults(func=_savepoint)
