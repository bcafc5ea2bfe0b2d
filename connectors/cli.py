"""`kafka-eos` command line: run / validate / describe / demo pipelines and dev tooling."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from kafka_eos.connectors.cli_dev import add_dev_commands
from kafka_eos.connectors.cli_operator import add_operator_commands
from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError


def _demo(args: argparse.Namespace) -> int:
    from kafka_eos.connectors.demo import demo
    return demo(args.records, poison=args.poison, verbose=args.verbose)


def _conf(pairs: list[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"kafka-eos run: --conf {pair!r} is not KEY=VALUE (e.g. spark.sql.shuffle.partitions=8)")
        conf[key] = value
    return conf


def _run(args: argparse.Namespace) -> int:
    """Validate (exit 1/2/3 with every violation), refuse a held state (``held_states``), then run
    in-process or through spark-submit; the exit code is ``exit_codes``'s. Several files or a
    directory: a group (``cli_group``)."""
    from kafka_eos.connectors.cli_group import group_files, run_group_command
    files = group_files(args.pipelines)
    if args.watch or len(files) != 1 or files[0] != args.pipelines[0]:
        return run_group_command(args, files)
    args.pipeline = files[0]
    from kafka_eos.config.redact import install
    from kafka_eos.config.violations import EXIT_INVALID, InvalidPipeline, exit_code
    from kafka_eos.connectors.pipeline.spark_security import bind_local
    from kafka_eos.connectors.pipeline.validation import load_valid
    # a Spark Connect server (--remote) runs the driver elsewhere: nothing of this process to bind
    binding = {} if args.remote else bind_local(args.master or "local[*]", args.spark_ui)
    conf = {**binding, **_conf(args.conf)}
    try:
        cfg = load_valid(args.pipeline, timeout_s=args.timeout)
    except InvalidPipeline as exc:
        print(f"kafka-eos: {args.pipeline}: nothing was started; {exc}", file=sys.stderr)
        return exit_code(exc.violations)
    redactor = install(cfg.secrets())
    from kafka_eos.connectors.operate.metrics import endpoint_problems
    for problem in endpoint_problems(cfg, args.metrics_port, args.metrics_host):
        print(f"kafka-eos run: --metrics-host/--metrics-port: nothing was started; {problem}", file=sys.stderr)
        return EXIT_INVALID
    if args.restarts < 0:
        print(f"kafka-eos run: --restarts {args.restarts}: give 0 (no restart) or more", file=sys.stderr)
        return EXIT_INVALID
    if args.master and args.remote:
        print("kafka-eos run: --master and --remote exclude each other (the Spark Connect server has its own "
              "master); give one", file=sys.stderr)
        return EXIT_INVALID
    held = _held(cfg, redactor)
    if held is not None:
        return held
    if args.from_savepoint:
        from kafka_eos.connectors.cli_savepoint import restore_before_run
        refused = restore_before_run(cfg, args.from_savepoint, args.timeout, redactor)
        if refused is not None:
            return refused
    if args.restarts:
        from kafka_eos.connectors.pipeline.supervisor import Supervisor, child_args
        emit = lambda line: print(redactor(line), flush=True)  # noqa: E731
        return Supervisor(child_args(args.argv), args.restarts, emit, cfg.name or "kafka-eos").run()
    if args.master:
        from kafka_eos.config.records import records_home
        from kafka_eos.connectors.pipeline.submit import submit
        return submit(args.pipeline, args.master, redactor, args.once, conf, name=f"kafka-eos {cfg.name}",
                      verbose=args.verbose, metrics_port=args.metrics_port, metrics_host=args.metrics_host,
                      stop_home=records_home(cfg) if cfg.checkpoint.location else None)
    from kafka_eos.connectors.pipeline.runner import run_local, run_remote
    emit = lambda line: print(line, flush=True)  # noqa: E731
    try:
        if args.remote:
            result = run_remote(cfg, args.remote, args.once, conf=conf, emit=emit, metrics_port=args.metrics_port,
                                metrics_host=args.metrics_host)
        else:
            result = run_local(cfg, args.once, conf=conf, emit=emit, verbose=args.verbose,
                               metrics_port=args.metrics_port, metrics_host=args.metrics_host)
    except Exception as exc:  # noqa: BLE001 - every failure gets its code; Python's own 1 would read "invalid"
        return _failed(exc, redactor)
    return result.exit_code


def _held(cfg, redactor) -> int | None:
    """The exit code of a start ``held_states`` refuses (None: it may run)."""
    from kafka_eos import KafkaEosError
    from kafka_eos.connectors.exit_codes import of_error
    from kafka_eos.connectors.pipeline.held_states import check_held
    try:
        check_held(cfg)
    except KafkaEosError as exc:
        print(redactor(f"kafka-eos: {cfg.origin}: {exc}"), file=sys.stderr)
        return of_error(exc)
    return None


def _failed(exc: Exception, redactor) -> int:
    """Print a run's failure and return its exit code (``exit_codes.of_error``; 4 for one not named)."""
    from kafka_eos import KafkaEosError
    from kafka_eos.connectors.exit_codes import of_error
    if isinstance(exc, KafkaEosError):
        print(redactor(f"kafka-eos: {exc}"), file=sys.stderr)
    else:
        import traceback
        print(redactor("kafka-eos: the run failed: " + "".join(traceback.format_exception(exc)).rstrip()),
              file=sys.stderr)
    return of_error(exc)


def _stop(args: argparse.Namespace) -> int:
    """Place the stop request and marker in the pipeline's checkpoint: the run stops after its
    running batch, and no start runs until ``kafka-eos resume``."""
    from kafka_eos.config.records import records_home
    from kafka_eos.connectors.pipeline.stop import StopNotSupported, request_stop
    from kafka_eos.connectors.pipeline.validation import load_valid
    from kafka_eos.config.violations import InvalidPipeline
    try:
        cfg = load_valid(args.pipeline, offline=True)
        path = request_stop(records_home(cfg))  # load_valid refuses a missing location
    except (InvalidPipeline, StopNotSupported, OSError) as exc:  # OSError: the checkpoint's store refused
        print(f"kafka-eos: {args.pipeline}: {exc}", file=sys.stderr)
        return 1
    print(f"kafka-eos: stop requested ({path}); the run stops after its running batch commits, and the pipeline "
          f"stays stopped, also across a supervisor's restarts, until `kafka-eos resume {args.pipeline}`")
    return 0


def _resume(args: argparse.Namespace) -> int:
    """Withdraw the stop request: the pipeline's next start (its supervisor's restart too) runs."""
    from kafka_eos.config.records import records_home
    from kafka_eos.config.violations import InvalidPipeline
    from kafka_eos.connectors.pipeline.stop import StopNotSupported, withdraw_stop
    from kafka_eos.connectors.pipeline.validation import load_valid
    try:
        cfg = load_valid(args.pipeline, offline=True)
        stood = withdraw_stop(records_home(cfg))
    except (InvalidPipeline, StopNotSupported, OSError) as exc:
        print(f"kafka-eos: {args.pipeline}: {exc}", file=sys.stderr)
        return 1
    print(f"kafka-eos: {'stop request withdrawn' if stood else 'no stop request stood'}; the pipeline's next "
          "start runs (`kafka-eos run`, or its supervisor's restart)")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from kafka_eos.connectors.pipeline.validation import validate_files
    report = validate_files(args.pipelines, offline=args.offline, timeout_s=args.timeout)
    print(report.render(), file=sys.stdout if report.exit_code == 0 else sys.stderr)
    if args.against_savepoint and report.configs and report.exit_code != 1:
        from kafka_eos.connectors.cli_savepoint import against_savepoint
        code, text = against_savepoint(report.configs, args.against_savepoint, args.timeout, args.offline)
        print(text, file=sys.stdout if code == 0 else sys.stderr)
        return 1 if code == 1 else max(code, report.exit_code)
    if args.against_checkpoint and report.configs and report.exit_code != 1:
        from kafka_eos.connectors.pipeline.checkpoint_compat import against_checkpoints
        code, text = against_checkpoints(report.configs)
        print(text, file=sys.stdout if code == 0 else sys.stderr)
        return 1 if code == 1 else max(code, report.exit_code)
    return report.exit_code


def _describe(args: argparse.Namespace) -> int:
    from kafka_eos.connectors.pipeline import describe
    from kafka_eos.connectors.pipeline.spark_security import security_facts
    from kafka_eos.connectors.pipeline.validation import validate_files
    report = validate_files([args.pipeline], offline=True)
    if not report.configs:
        print(report.render(), file=sys.stderr)
        return report.exit_code
    cfg = report.configs[0]
    details: dict[str, Any] = {}
    if report.violations:
        details["problems"] = [f"{v.path}: {v.message}" for v in report.violations]
    details["checkpoint_state"] = describe.checkpoint_offsets(cfg)
    details["spark_security"] = security_facts(args.master, _conf(args.conf))
    if not args.offline:
        try:
            details["live_offsets"] = describe.live_offsets(cfg, args.timeout)
        except Exception as exc:  # noqa: BLE001 - the plan is still worth printing
            details["live_offsets"] = f"unavailable: {exc}"
        from kafka_eos.config.live import silent_brokers
        warnings = silent_brokers(cfg)
        if warnings:
            details["warnings"] = warnings
    print(describe.render(cfg, details, as_json=args.json))
    return report.exit_code


def _add_pipeline_commands(sub) -> None:
    run = sub.add_parser("run", help="validate, then run a pipeline (in this process, or spark-submit with --master); "
                         "several files or a directory: a group, each its own query in one application")
    run.add_argument("pipelines", nargs="*", metavar="pipeline.yaml")
    run.add_argument("--watch", metavar="DIR", help="run the pipeline files of DIR as a group and follow it: a file "
                     "added is started, one removed stopped after its running batch, one changed validated against its "
                     "checkpoint and then put in place of the running one")
    run.add_argument("--master", help="Spark master URL (spark://host:7077, yarn, k8s://..., local[4]): "
                     "run through spark-submit with kafka-eos shipped as a zip; default: in this process")
    run.add_argument("--remote", metavar="sc://HOST:PORT", help="run through a Spark Connect server (this "
                     "process is its client; the server's Python needs kafka-eos and the checkpoint location must be "
                     "reachable from both); not with --master")
    run.add_argument("--once", action="store_true", help="process the records available now, then stop "
                     "(availableNow trigger)")
    run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    run.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each broker when validating")
    run.add_argument("--verbose", action="store_true", help="show Spark's and Java's own log lines and progress bar")
    run.add_argument("--spark-ui", action="store_true", help="with a local master: serve the Spark UI (on "
                     "127.0.0.1 only, like every port of a local run); off by default")
    run.add_argument("--metrics-port", type=int, metavar="PORT", help="serve Prometheus metrics on "
                     "PORT/metrics (records read/written/to DLQ, batch duration, last batch, lag); over the "
                     "file's metrics.port, on its metrics.host (default 127.0.0.1)")
    run.add_argument("--metrics-host", metavar="HOST", help="bind the metrics endpoint to HOST (0.0.0.0: every "
                     "interface, for a Prometheus on another host or container) over the file's metrics.host")
    run.add_argument("--restarts", type=int, default=0, metavar="N", help="restart the run when it fails "
                     "transiently (its driver died, its query stopped on a transient error: exit 4 or a signal), "
                     "after 1 s doubling to 60 s, at most N times in a row; a finished or stopped run (exit 0) and "
                     "one that needs a person (exit 1, 3, 5) are not restarted. Default 0")
    run.add_argument("--from-savepoint", metavar="LOCATION", help="start the pipeline's NEW checkpoint from a "
                     "savepoint (`kafka-eos savepoint`): windows open at it are rebuilt by a replay, then it goes on "
                     "where the saved pipeline stopped")
    run.set_defaults(func=_run)
    stop = sub.add_parser("stop", help="ask the run of a pipeline (another process) to stop after its running "
                          "batch; it stays stopped, also across a supervisor's restarts, until `kafka-eos resume`")
    stop.add_argument("pipeline", metavar="pipeline.yaml")
    stop.set_defaults(func=_stop)
    resume = sub.add_parser("resume", help="withdraw the stop request `kafka-eos stop` left: the pipeline's next "
                            "start runs")
    resume.add_argument("pipeline", metavar="pipeline.yaml")
    resume.set_defaults(func=_resume)
    validate = sub.add_parser("validate", help="check pipeline files; exit 0 valid, 1 invalid, "
                              "2 broker unreachable, 3 not authorized (login refused, ACL missing)")
    validate.add_argument("pipelines", nargs="+", metavar="pipeline.yaml")
    validate.add_argument("--offline", action="store_true", help="skip the live broker checks")
    validate.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each broker")
    validate.add_argument("--against-checkpoint", action="store_true", help="also say whether each change from the "
                          "pipeline that wrote the checkpoint keeps it (exit 1: a change needs a new checkpoint)")
    validate.add_argument("--against-savepoint", metavar="LOCATION", help="say, change by change, what of the "
                          "saved pipeline carries over to this one and what is refused (exit 1: refused)")
    validate.set_defaults(func=_validate)
    from kafka_eos.connectors.cli_savepoint import add_savepoint_command
    add_savepoint_command(sub)
    describe = sub.add_parser("describe", help="print the resolved plan of a pipeline (secrets redacted)")
    describe.add_argument("pipeline", metavar="pipeline.yaml")
    describe.add_argument("--offline", action="store_true", help="do not ask the broker for offsets")
    describe.add_argument("--timeout", type=float, default=10.0)
    describe.add_argument("--json", action="store_true", help="JSON instead of YAML")
    describe.add_argument("--master", help="the master a run would use (default: in this process, local[*]): "
                          "spark_security shows what Spark listens on and which of its security settings are on")
    describe.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                          help="a Spark setting the run would get (repeatable)")
    describe.set_defaults(func=_describe)


class _Parser(argparse.ArgumentParser):
    """A command line argparse refuses exits 1 (invalid, ``exit_codes``), not argparse's 2 (unreachable)."""

    def error(self, message: str):  # type: ignore[override]
        from kafka_eos.config.violations import EXIT_INVALID
        self.print_usage(sys.stderr)
        self.exit(EXIT_INVALID, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafka-eos", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="local broker + the orders-json example on generated orders + "
                          "an exactly-once count")
    demo.add_argument("--records", type=int, default=100_000, help="orders to generate")
    demo.add_argument("--poison", type=int, default=10, help="records that are not JSON (to the DLQ)")
    demo.add_argument("--verbose", action="store_true", help="show Spark's and Java's own log lines and progress bar")
    demo.set_defaults(func=_demo)
    _add_pipeline_commands(sub)
    add_operator_commands(sub)
    add_dev_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return args.func(args)
    except BrokerEnvironmentError as exc:
        print(f"kafka-eos: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
