"""`kafka-eos run a.yaml b.yaml ...` or `kafka-eos run DIR`: the command line of a group of pipelines.

Enforced here: every file is validated, and the group's own rule (``config.rules_group``: no
shared name, checkpoint, prefix or metrics port) checked, before anything starts: one invalid file
refuses the whole group (exit 1/2/3 with every violation, each naming its file). What a group does
not take yet is refused with the way on: ``--remote``, ``--from-savepoint`` (restore one
pipeline, then group it), ``--metrics-port`` and ``--metrics-host`` (each file's own ``metrics:``
serves that pipeline). ``--master`` submits the group (every file a ``--config`` of one driver).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

FILE_SUFFIXES = (".yaml", ".yml")
_NOT_FOR_GROUPS = (("remote", "--remote", "a group runs in this process or through --master"),
                   ("from_savepoint", "--from-savepoint", "restore the one pipeline on its own first, then group it"),
                   ("metrics_port", "--metrics-port", "give each file's metrics: a port of its own"),
                   ("metrics_host", "--metrics-host", "give each file's metrics: its host"))


def group_files(paths: list[str]) -> list[str]:
    """The pipeline files named: a directory stands for its *.yaml and *.yml files, sorted."""
    files: list[str] = []
    for path in paths:
        folder = Path(path)
        if folder.is_dir():
            files += sorted(str(p) for p in folder.iterdir() if p.suffix in FILE_SUFFIXES and p.is_file())
        else:
            files.append(path)
    return files


def run_group_command(args: argparse.Namespace, files: list[str]) -> int:
    """A group of ``files``, or with ``--watch DIR`` of the directory's files as they come and go."""
    from kafka_eos.config.violations import EXIT_INVALID, InvalidPipeline, exit_code
    refused = [f"{flag}: {why}" for attr, flag, why in _NOT_FOR_GROUPS if getattr(args, attr, None)]
    if args.restarts < 0:
        refused.append(f"--restarts {args.restarts}: give 0 (no restart) or more")
    if args.watch and args.master:
        refused.append("--watch DIR: a watched group runs in this process; give no --master")
    if args.watch and (files or args.once):
        refused.append("--watch DIR: the group is the directory's files; give no other file, and no --once")
    elif args.watch and not Path(args.watch).is_dir():
        refused.append(f"--watch {args.watch}: not a directory")
    elif not files and not args.watch:
        refused.append(f"{' '.join(args.pipelines)}: no pipeline file (*.yaml, *.yml) found")
    if refused:
        print("kafka-eos run: a group of pipelines: nothing was started;\n  " + "\n  ".join(refused), file=sys.stderr)
        return EXIT_INVALID
    if args.watch:
        return _watch(args)
    cfgs, violations = valid_group(files, args.timeout)
    if violations:
        print(f"kafka-eos run: a group of {len(files)} pipelines: nothing was started; "
              f"{InvalidPipeline(violations)}", file=sys.stderr)
        return exit_code(violations)
    if args.master:
        return _submit(args, files, cfgs)
    return _local(args, cfgs)


def _local(args: argparse.Namespace, cfgs: list, watch=None) -> int:
    """The group in this process: ``cfgs``, or the directory ``watch`` follows."""
    from kafka_eos.connectors.cli import _conf
    from kafka_eos.connectors.pipeline.group import run_group_local
    from kafka_eos.connectors.pipeline.spark_security import bind_local
    conf = {**bind_local("local[*]", args.spark_ui), **_conf(args.conf)}
    return run_group_local(cfgs, conf=conf, emit=lambda line: print(line, flush=True), verbose=args.verbose,
                           restarts=args.restarts, once=args.once, watch=watch)


def valid_group(files: list[str], timeout_s: float) -> tuple[list, list]:
    """(every file's config, every violation): the group's rule checked before any broker is asked,
    then every file with its live checks."""
    from kafka_eos.config.rules_group import group_violations
    cfgs, violations = _loaded(files, offline=True)
    violations += group_violations(cfgs) if not violations else []
    return _loaded(files, offline=False, timeout_s=timeout_s) if not violations else (cfgs, violations)


def _loaded(files: list[str], offline: bool, timeout_s: float = 10.0) -> tuple[list, list]:
    """(every file's config, every violation, each naming its file)."""
    from dataclasses import replace
    from kafka_eos.config.violations import InvalidPipeline
    from kafka_eos.connectors.pipeline.validation import load_valid
    cfgs, violations = [], []
    for path in files:
        try:
            cfgs.append(load_valid(path, offline=offline, timeout_s=timeout_s))
        except InvalidPipeline as exc:
            violations += [v if v.file else replace(v, file=path) for v in exc.violations]
    return cfgs, violations


def _watch(args: argparse.Namespace) -> int:
    from kafka_eos.connectors.pipeline.checkpoint_compat import against_checkpoint
    from kafka_eos.connectors.pipeline.group_watch import Watch, run_watch

    def validate(path: str, others: list) -> tuple:
        from kafka_eos.config.rules_group import group_violations
        from kafka_eos.config.violations import InvalidPipeline
        cfgs, violations = _loaded([path], offline=False, timeout_s=args.timeout)
        violations += group_violations([*others, *cfgs]) if cfgs else []
        return (None, str(InvalidPipeline(violations))) if violations else (cfgs[0], "")

    def watch(group) -> int:
        return run_watch(group, Watch(group, args.watch, lambda: group_files([args.watch]), validate, against_checkpoint))
    return _local(args, [], watch)


def _submit(args: argparse.Namespace, files: list[str], cfgs: list) -> int:
    """The group through spark-submit (``submit``: one driver, every file a ``--config``)."""
    from kafka_eos.config.records import records_home
    from kafka_eos.config.redact import install
    from kafka_eos.connectors.cli import _conf
    from kafka_eos.connectors.pipeline.group import FAIR_CONF
    from kafka_eos.connectors.pipeline.spark_security import bind_local
    from kafka_eos.connectors.pipeline.submit import submit
    redactor = install([s for cfg in cfgs for s in cfg.secrets()])
    conf = {**bind_local(args.master, args.spark_ui), **_conf(args.conf), **FAIR_CONF}
    return submit(files, args.master, redactor, args.once, conf, name=f"kafka-eos group of {len(files)}",
                  verbose=args.verbose, stop_home=[records_home(cfg) for cfg in cfgs if cfg.checkpoint.location])
