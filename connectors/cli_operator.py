"""`kafka-eos` operator commands on a pipeline's checkpoint and output: status, verify, retire,
accept-loss, monitor (the command line's other commands are in ``cli`` and ``cli_dev``)."""
from __future__ import annotations

import argparse
import functools
import os
import sys

def _status(args: argparse.Namespace) -> int:
    """Exit 0 healthy, 1 needs attention (or an invalid file), 2 a broker is unreachable, 3 not authorized."""
    from kafka_eos.config.violations import EXIT_UNAUTHORIZED, InvalidPipeline, exit_code
    from kafka_eos.connectors.operate import status
    from kafka_eos.connectors.pipeline.validation import load_valid
    from kafka_eos.offsets.acl_advice import AclMissingError
    try:
        cfg = load_valid(args.pipeline, offline=True)
        report = status.gather(cfg, args.timeout)
    except (InvalidPipeline, AclMissingError) as exc:  # the source's lookups name a topic it may not read
        print(f"kafka-eos: {args.pipeline}: {exc}", file=sys.stderr)
        return exit_code(exc.violations) if isinstance(exc, InvalidPipeline) else EXIT_UNAUTHORIZED
    print(status.render(cfg, report, as_json=args.json))
    return report.exit_code


# -- accept-loss: the way on after ReplayMismatchError (logic in connectors/operate/accept_loss.py) --
def _accept_loss(args: argparse.Namespace) -> int:
    from kafka_eos.config.violations import InvalidPipeline
    from kafka_eos.connectors.operate import accept_loss
    if bool(args.pipeline) == bool(args.sink_log):
        print("kafka-eos accept-loss: name the pipeline file or --sink-log <location>, not both", file=sys.stderr)
        return 1
    try:
        location = args.sink_log or accept_loss.sink_log_of_pipeline(args.pipeline)
        print(accept_loss.accept(location, args.batch))
    except (InvalidPipeline, accept_loss.NothingToAcceptError) as exc:
        print(f"kafka-eos: {exc}", file=sys.stderr)
        return 1
    return 0


def _add_accept_loss_command(sub) -> None:
    accept = sub.add_parser("accept-loss", help="after ReplayMismatchError: record the named batch committed "
                            "without its lost sink partitions (once), so the query goes on; prints what is dropped")
    accept.add_argument("pipeline", nargs="?", metavar="pipeline.yaml")
    accept.add_argument("--sink-log", help="the sink log location (default <checkpointLocation>/kafka-eos-sink), "
                        "instead of a pipeline file")
    accept.add_argument("--batch", type=int, required=True, help="the batch id ReplayMismatchError named")
    accept.set_defaults(func=_accept_loss)
# -- end accept-loss --


# -- accept-topic: the way on after OutputTopicChangedError (logic in connectors/operate/accept_topic.py) --
def _accept_topic(args: argparse.Namespace) -> int:
    """Exit 0 accepted (or nothing to accept), 1 an invalid file or a topic that cannot be accepted, 2 unreachable."""
    from kafka_eos.connectors.operate.accept_topic import accept_topics
    from kafka_eos.connectors.sink.options import sink_config
    return _on_sink(args.pipeline, "accept-topic", lambda options: accept_topics(sink_config(options)))
# -- end accept-topic --


def _retire(args: argparse.Namespace) -> int:
    """Commit what is decided, abort the rest, release the prefix, mark the checkpoint retired."""
    from kafka_eos.connectors.operate.retire import retire_sink
    return _on_sink(args.pipeline, "retire", retire_sink)


def _on_sink(pipeline: str, verb: str, act) -> int:
    """Run ``act`` on the sink options of the valid pipeline file ``pipeline``; print its lines, return
    its exit code (an invalid file: the violations' code)."""
    from kafka_eos.config.violations import InvalidPipeline, exit_code
    from kafka_eos.connectors.pipeline.spark_options import sink_options
    from kafka_eos.connectors.pipeline.validation import load_valid
    try:
        cfg = load_valid(pipeline, offline=True)
    except InvalidPipeline as exc:
        print(f"kafka-eos: {pipeline}: {exc}", file=sys.stderr)
        return exit_code(exc.violations)
    done = act(sink_options(cfg))
    for line in done.lines:
        print(f"kafka-eos {verb} {cfg.name}: {line}", file=sys.stdout if done.exit_code == 0 else sys.stderr)
    return done.exit_code


def _verify(args: argparse.Namespace) -> int:
    """Exit 0 every batch in range verified, 6 one failed, 7 none failed and one cannot be verified,
    8 no committed batch in range, 1 an invalid file or option, 2 unreadable (``exit_codes``)."""
    from kafka_eos import KafkaEosError
    from kafka_eos.config.violations import InvalidPipeline, exit_code
    from kafka_eos.connectors.operate import verify
    from kafka_eos.connectors.pipeline.validation import load_valid
    try:
        cfg = load_valid(args.pipeline, offline=True)
        batches, since = verify.parse_batches(args.batches), verify.since_ms_of(args.since)
    except InvalidPipeline as exc:
        print(f"kafka-eos: {args.pipeline}: {exc}", file=sys.stderr)
        return exit_code(exc.violations)
    except ValueError as exc:
        print(f"kafka-eos verify: {exc}", file=sys.stderr)
        return 1
    if args.follow:
        return _follow(args, cfg)
    try:
        def progress(line: str) -> None:
            print(f"kafka-eos verify: {line}", file=sys.stderr, flush=True)
        recompute = None
        if args.recompute:
            from kafka_eos.connectors.operate.recompute import recompute_locally
            recompute = functools.partial(recompute_locally, cfg, progress=progress)
        report = verify.verify(cfg, batches, since, progress=progress, recompute=recompute)
    except KafkaEosError as exc:
        print(f"kafka-eos verify {cfg.name}: {exc}", file=sys.stderr)
        return 2
    print(verify.render(cfg, report, as_json=args.json))
    if not args.no_record:
        try:
            name = verify.record(cfg, report)
            if name:
                print(f"kafka-eos verify {cfg.name}: recorded as {name} beside the sink log (status, metrics)",
                      file=sys.stderr)
        except OSError as exc:
            print(f"kafka-eos verify {cfg.name}: the run was not recorded beside the sink log ({exc}); "
                  "status and the metrics do not show it", file=sys.stderr)
    return report.exit_code


def _follow(args: argparse.Namespace, cfg) -> int:
    """``verify --follow``: rounds until SIGTERM / Ctrl-C (exit 143 / 130); 1 for options it refuses."""
    import signal
    import threading

    from kafka_eos.config.redact import install
    from kafka_eos.connectors.operate.recompute_session import RecomputeSession
    from kafka_eos.connectors.operate.verify_follow import Follower, follow
    from kafka_eos.connectors.pipeline.spark_options import sink_options
    from kafka_eos.connectors.sink.options import sink_config
    if args.batches or args.since or args.json or args.no_record:
        print("kafka-eos verify: --follow verifies each batch as it commits and records it; it takes no "
              "--batches, --since, --json or --no-record", file=sys.stderr)
        return 1
    install(cfg.secrets())
    if args.nice:
        os.nice(args.nice)  # its bound is 60 s, the pipeline's is its trigger: the pipeline gets the CPU first

    def emit(line: str) -> None:
        print(line, flush=True)
    stop, received = threading.Event(), []

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signum)
        stop.set()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    session = RecomputeSession(cfg, lambda line: emit(f"kafka-eos verify {cfg.name}: {line}")) if args.recompute else None
    follower = Follower(sink_config(sink_options(cfg)), lambda line: emit(f"kafka-eos verify {cfg.name}: {line}"),
                        session, args.recompute_every)
    emit(f"kafka-eos verify {cfg.name}: following from batch {follower.state.verified_through + 1}"
         + (f", re-running one batch in {follower.every} (ids divisible by it)" if session else "") + "; Ctrl-C stops")
    try:
        follow(follower, cfg.name or "kafka-eos", stop, emit, args.interval)
    finally:
        follower.close()
        if session is not None:
            session.close()
    emit(f"kafka-eos verify {cfg.name}: stopped; verified through batch {follower.state.verified_through}")
    return 128 + received[0] if received else 0


# -- monitor: the pipelines' probes beside their drivers (logic in connectors/operate/monitor.py) --
def _monitor(args: argparse.Namespace) -> int:
    """Exit 143 / 130 when stopped (SIGTERM, Ctrl-C), 1 an invalid file or one pipeline name given twice."""
    from kafka_eos.config.redact import install
    from kafka_eos.config.violations import InvalidPipeline, exit_code
    from kafka_eos.connectors.operate import monitor
    from kafka_eos.connectors.pipeline.validation import load_valid
    cfgs = []
    for path in args.pipelines:
        try:
            cfgs.append(load_valid(path, offline=True))
        except InvalidPipeline as exc:
            print(f"kafka-eos monitor: {path}: nothing was started; {exc}", file=sys.stderr)
            return exit_code(exc.violations)
        install(cfgs[-1].secrets())
    twice = monitor.duplicate_names(cfgs)
    if twice:
        print(f"kafka-eos monitor: pipeline name(s) {', '.join(twice)} given twice: their series would be one; "
              "give each pipeline a name of its own", file=sys.stderr)
        return 1
    return monitor.run(cfgs, args.port, args.host, lambda line: print(line, flush=True), timeout_s=args.timeout,
                       verify=args.verify)


def _add_monitor_command(sub) -> None:
    watch = sub.add_parser("monitor", help="export the pipelines' lag, open and decided transactions, held-back "
                           "output and last commit from their checkpoints, sink logs and brokers, whether or not "
                           "their drivers run (Prometheus /metrics, exporter=\"monitor\"; no Spark)")
    watch.add_argument("pipelines", nargs="+", metavar="pipeline.yaml")
    watch.add_argument("--port", type=int, default=9465, help="port of /metrics (default 9465; the driver's is 9464)")
    watch.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 every "
                       "interface)")
    watch.add_argument("--timeout", type=float, default=10.0, help="seconds each broker lookup may take")
    watch.add_argument("--verify", action="store_true", help="also verify each exactly-once pipeline's batches as "
                       "they commit (verify --follow, without re-runs)")
    watch.set_defaults(func=_monitor)
# -- end monitor --


def add_operator_commands(sub) -> None:
    status = sub.add_parser("status", help="checkpoint, lag, sink log and open transactions of a pipeline; "
                            "exit 0 healthy, 1 needs attention, 2 broker unreachable, 3 not authorized")
    status.add_argument("pipeline", metavar="pipeline.yaml")
    status.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each broker")
    status.add_argument("--json", action="store_true", help="a JSON object (with format_version)")
    status.set_defaults(func=_status)
    check = sub.add_parser("verify", help="read each committed batch's output back and check it against what its "
                           "tasks recorded (records, digest, no other writer's records); exit 0 all verified, "
                           "6 a batch failed, 7 one cannot be verified (none failed), 8 none in range, "
                           "2 unreadable")
    check.add_argument("pipeline", metavar="pipeline.yaml")
    check.add_argument("--batches", metavar="A..B", help="only these batch ids (inclusive; A.. or ..B)")
    check.add_argument("--since", metavar="TIME", help="only batches committed since TIME (ISO, UTC by default, "
                       "or epoch ms)")
    check.add_argument("--recompute", action="store_true", help="also re-run each batch's transform over its "
                       "recorded input (Spark in this process, from the checkpoint's offset log and state) and check "
                       "that the committed records are exactly what it gives")
    check.add_argument("--follow", action="store_true", help="keep running: verify each batch within seconds of "
                       "its commit, reading only what is new, and record each result (status, metrics); stops on "
                       "SIGTERM / Ctrl-C")
    check.add_argument("--interval", type=float, default=1.0, help="--follow: seconds between rounds (default 1)")
    check.add_argument("--nice", type=int, default=10, help="--follow: lower the process's CPU priority by this "
                       "much (default 10; 0 keeps it), so a pipeline sharing the machine gets the CPU first")
    check.add_argument("--recompute-every", type=int, default=100, metavar="N", help="--follow --recompute: "
                       "re-run every Nth batch (batch id divisible by N; default 100, 1 re-runs every batch)")
    check.add_argument("--json", action="store_true", help="a JSON object (with format_version)")
    check.add_argument("--no-record", action="store_true", help="do not record the run beside the sink log "
                       "(the one thing verify writes; status and the metrics read it)")
    check.set_defaults(func=_verify)
    retire = sub.add_parser("retire", help="for a pipeline that will not run again: commit its decided batch, "
                            "abort its other open transactions, release its transactional-id prefix and mark "
                            "its checkpoint retired")
    retire.add_argument("pipeline", metavar="pipeline.yaml")
    retire.set_defaults(func=_retire)
    _add_accept_loss_command(sub)
    topic = sub.add_parser("accept-topic", help="after OutputTopicChangedError: accept the output topic(s) as the "
                           "brokers have them now (at least the recorded partitions), so the query's next start "
                           "writes to them; until then every start is refused")
    topic.add_argument("pipeline", metavar="pipeline.yaml")
    topic.set_defaults(func=_accept_topic)
    _add_monitor_command(sub)
