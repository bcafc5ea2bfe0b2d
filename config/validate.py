"""Validate pipeline files: load, rules, live broker checks, and checks across the files given.

Invariants: every violation of every file is collected before anything is reported;
``exit_code`` turns them into 0 valid / 1 invalid / 2 unreachable / 3 not authorized. ``backstops`` (see
``kafka_eos.config.rules.check``) come from the caller: the connectors' layer passes the check
that its source and sink accept the file. The live checks do not run while a client setting is
refused (``rules.client_settings``): a client that cannot be built is not asked. That rule runs once
per file (it reads keystores): its result decides and is passed to ``check``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

from kafka_eos.config.loader import load_file
from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.redact import Redactor
from kafka_eos.config.rules import check, client_settings
from kafka_eos.config.rules_safety import across_pipelines
from kafka_eos.config.violations import Backstop, Context, InvalidPipeline, Violation, exit_code


@dataclass
class Report:
    configs: list[PipelineConfig] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # a listed broker silent while others answer

    @property
    def exit_code(self) -> int:
        return exit_code(self.violations)

    def redactor(self) -> Redactor:
        return Redactor(s for cfg in self.configs for s in cfg.secrets())

    def render(self) -> str:
        """Human-readable report, secrets redacted."""
        lines = []
        for file in self.files:
            mine = [v for v in self.violations if v.file == file]
            lines.append(f"{file}: OK" if not mine else f"{file}: {len(mine)} problem(s)")
            lines += [f"  {v.path}: {v.message}\n      fix: {v.fix}" for v in mine]
        lines += [f"warning: {line}" for line in self.warnings]
        return self.redactor()("\n".join(lines))


def validate_config(cfg: PipelineConfig, offline: bool, timeout_s: float = 10.0,
                    backstops: Sequence[Backstop] = ()) -> list[Violation]:
    ctx: Context = Context()
    problems: list[Violation] = []
    refused = client_settings(cfg, ctx)  # run once (it reads keystores): it decides, and check reuses it
    if not offline and not refused:  # a client that cannot be built is not asked
        from kafka_eos.config.live import live_context
        from kafka_eos.config.rules_registry import registry_problems
        ctx, problems = live_context(cfg, timeout_s)
        problems += registry_problems(cfg)  # the schema registry: subjects, the sink's writer schema
    return [replace(v, file=cfg.origin) for v in problems + check(cfg, ctx, backstops, ran={client_settings: refused})]


def validate_files(paths: Sequence[str | os.PathLike], offline: bool = False, timeout_s: float = 10.0,
                   env: Mapping[str, str] | None = None, backstops: Sequence[Backstop] = ()) -> Report:
    report = Report(files=[str(p) for p in paths])
    for path in paths:
        cfg, problems = load_file(path, env)
        report.violations += problems
        if cfg is not None:
            report.configs.append(cfg)
            found = validate_config(cfg, offline, timeout_s, backstops)
            report.violations += found
            if not offline:
                from kafka_eos.config.live import silent_brokers
                report.warnings += silent_brokers(cfg)
                if not found:  # a pipeline refused anyway gets no probe record in its checkpoint
                    report.violations += _store(cfg, report)
    report.violations += across_pipelines(report.configs)
    return report


def _store(cfg: PipelineConfig, report: Report) -> list[Violation]:
    """The sink-log location's probe (``store_check``); how it keeps records create-only is a warning
    where a second writer is not excluded by the store itself."""
    from kafka_eos.config.store_check import store_problems
    problems, probe = store_problems(cfg)
    if probe is not None and not probe.exclusive:
        report.warnings.append(f"{probe.location}: records are create-only by {probe.create_mode}; run one "
                               "driver per checkpoint (as Spark's own checkpoint there requires)")
    return [replace(v, file=cfg.origin) for v in problems]


def load_valid(path: str | os.PathLike, offline: bool = False, timeout_s: float = 10.0,
               backstops: Sequence[Backstop] = ()) -> PipelineConfig:
    """The config of ``path``, or ``InvalidPipeline`` carrying every violation (redacted)."""
    report = validate_files([path], offline, timeout_s, backstops=backstops)
    if report.violations or not report.configs:
        redact = report.redactor()
        raise InvalidPipeline([replace(v, message=redact(v.message), fix=redact(v.fix)) for v in report.violations])
    return report.configs[0]
