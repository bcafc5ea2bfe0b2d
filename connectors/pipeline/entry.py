"""spark-submit entry of a kafka-eos pipeline (what ``kafka-eos run --master URL`` submits).

    spark-submit --master spark://host:7077 --py-files kafka_eos.zip \\
        connectors/pipeline/entry.py --config pipeline.yaml [--once] [--verbose] [--metrics-port PORT]
        [--metrics-host HOST]

Invariants:
- Needs nothing but the zip (``--py-files``, the ``kafka_eos`` namespace) and the cluster's
  third-party packages.
- Validates the file before starting Spark's query (exit 1 invalid, 2 broker unreachable, 3 not
  authorized, with every violation) and refuses a held state before building a Spark session
  (``held_states``: a standing stop request exits 0, an output-topic refusal not accepted 5),
  then runs it like ``kafka-eos run``: one progress line per batch; the exit code is
  ``exit_codes``'s (4 a transient failure, 5 a state a person must decide, with the query's error,
  secrets redacted; 0 finished or stopped by request, 128 + N stopped by signal N). spark-submit
  exits with it, so a supervisor of spark-submit reads the same table.
- Serves Prometheus metrics from this driver as ``kafka-eos run`` does (``metrics.serve``: the
  file's ``metrics:``, ``--metrics-port`` over its port); Spark's progress bar only with ``--verbose``
  (the driver JVM's log settings are spark-submit's, set by ``submit``).
"""
from __future__ import annotations

import argparse
import sys


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="entry.py", description="run a kafka-eos pipeline under spark-submit")
    parser.add_argument("--config", required=True, action="append", metavar="pipeline.yaml",
                        help="the pipeline file; repeated: a group, each its own query in this application")
    parser.add_argument("--once", action="store_true", help="process what is available now, then stop")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each broker")
    parser.add_argument("--verbose", action="store_true", help="Spark's progress bar")
    parser.add_argument("--metrics-port", type=int, metavar="PORT", help="Prometheus metrics port "
                        "(over the file's metrics.port)")
    parser.add_argument("--metrics-host", metavar="HOST", help="the address it binds (over the file's metrics.host)")
    return parser.parse_args(argv)


def _emit(line: str) -> None:
    print(line, flush=True)


def _failed(exc: Exception, redactor) -> int:
    """Print a failure and return its exit code: every failure gets one (``exit_codes.of_error``,
    4 for one not named); Python's own 1 for an uncaught exception would read "invalid"."""
    from kafka_eos import KafkaEosError
    from kafka_eos.connectors.exit_codes import of_error
    text = f"kafka-eos: {exc}" if isinstance(exc, KafkaEosError) else f"kafka-eos: the run failed: {type(exc).__name__}: {exc}"
    print(redactor(text), file=sys.stderr, flush=True)
    return of_error(exc)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if len(args.config) > 1:
        return _group(args)
    args.config = args.config[0]
    from kafka_eos import KafkaEosError
    from kafka_eos.config.violations import InvalidPipeline, exit_code
    from kafka_eos.connectors.pipeline.held_states import check_held
    from kafka_eos.connectors.pipeline.validation import load_valid
    try:
        cfg = load_valid(args.config, timeout_s=args.timeout)
    except InvalidPipeline as exc:
        print(f"kafka-eos: {args.config}: nothing was started; {exc}", file=sys.stderr)
        return exit_code(exc.violations)
    from kafka_eos.config.redact import install
    redactor = install(cfg.secrets())
    try:
        check_held(cfg)
    except KafkaEosError as exc:
        return _failed(exc, redactor)
    from kafka_eos.connectors.operate.metrics import serve
    from kafka_eos.connectors.pipeline.runner import run_query
    try:
        spark = _session(f"kafka-eos {cfg.name}", args.verbose)
    except Exception as exc:  # noqa: BLE001 - a master that does not answer: transient (_failed)
        return _failed(exc, redactor)
    metrics = None
    try:
        metrics = serve(cfg, args.metrics_port, _emit, args.metrics_host)
        result = run_query(spark, cfg, once=args.once, emit=_emit, listeners=[metrics] if metrics else None)
        print(result.summary(), flush=True)
        return result.exit_code
    except Exception as exc:  # noqa: BLE001 - see _failed
        return _failed(exc, redactor)
    finally:
        if metrics is not None:
            metrics.close()
        spark.stop()


def _session(app: str, verbose: bool, conf: dict[str, str] | None = None):
    """This driver's SparkSession with the run's settings (a master that does not answer fails
    here), its task workers started early."""
    from pyspark.sql import SparkSession
    from kafka_eos.connectors.pipeline.runner import RUN_CONF
    from kafka_eos.connectors.worker_daemon import start_early
    builder = SparkSession.builder.appName(app)
    for key, value in {**RUN_CONF, **(conf or {}), "spark.ui.showConsoleProgress": str(verbose).lower()}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    start_early(spark)
    return spark


def _group(args: argparse.Namespace) -> int:
    """Several ``--config``: every file valid and the group's rule (``cli_group.valid_group``), then
    ``group.run_group`` in this driver."""
    from functools import partial
    from kafka_eos.config.redact import install
    from kafka_eos.config.violations import InvalidPipeline, exit_code
    from kafka_eos.connectors.cli_group import valid_group
    from kafka_eos.connectors.pipeline.group import FAIR_CONF, held_then_run, run_group
    cfgs, violations = valid_group(args.config, args.timeout)
    if violations:
        print(f"kafka-eos: a group of {len(args.config)} pipelines: nothing was started; "
              f"{InvalidPipeline(violations)}", file=sys.stderr)
        return exit_code(violations)
    redactor = install([s for cfg in cfgs for s in cfg.secrets()])
    try:
        spark = _session(f"kafka-eos group of {len(cfgs)}", args.verbose, FAIR_CONF)
    except Exception as exc:  # noqa: BLE001 - a master that does not answer: transient (_failed)
        return _failed(exc, redactor)
    try:
        return run_group(spark, cfgs, partial(held_then_run, once=args.once), _emit)
    finally:
        spark.stop()

if __name__ == "__main__":
    sys.exit(main())
