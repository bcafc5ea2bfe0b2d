"""Refuse, before a query starts, a streaming plan whose replay may give a sink partition other rows.

``check_deterministic(df)`` walks Spark's analyzed plan of ``df`` (through py4j) and applies the
pure rules of ``kafka_eos.config.determinism``: a non-deterministic expression (Spark's own
``deterministic`` flag), a round-robin ``repartition(n)`` with
``spark.sql.execution.sortBeforeRepartition=false`` or a ``coalesce(n)`` after a shuffle raise
``NonDeterministicPlanError`` naming the expression (its SQL text) and the fix; a stream-static
join is logged as a warning. ``allow_nondeterministic=True`` turns refusals into warnings. A frame
of offset-range rows (emit=offsetRanges) must reach the sink unchanged (``range_rows_changed``);
``value_refs_refusal`` says why a frame may not carry value references (emit=valueRefs) instead
of the source's values, or nothing when it may.

Covered: the plan of ``df`` as given (the YAML pipeline builder checks its whole frame; code users
call this on the frame they pass to ``writeStream``). Not covered: a Python UDF that is random but
not marked ``asNondeterministic()`` (Spark trusts the flag), a static table that changes (warned
only), and Spark Connect DataFrames (no ``_jdf``): there the check is skipped with a log line.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from kafka_eos import KafkaEosError
from kafka_eos.config import determinism
from kafka_eos.config.determinism import REFUSE, Finding
from kafka_eos.connectors.schema import is_range_schema
from kafka_eos.connectors.source.range_rows import RangeRowsError
from kafka_eos.connectors.source.value_refs import ValueRefError

log = logging.getLogger(__name__)


class NonDeterministicPlanError(KafkaEosError, ValueError):
    """The plan may give a replayed batch other rows; the message names the expressions and the fix."""

    @classmethod
    def of(cls, findings: list[Finding]) -> "NonDeterministicPlanError":
        lines = "\n".join(f"  - {f}" for f in findings)
        return cls("the query's plan is not deterministic, so a batch whose transactions the broker aborted "
                   "could not be re-written exactly once (the restart would stop with ReplayMismatchError):\n"
                   f"{lines}\n  opt out (values may differ on a replay, records are then neither lost nor "
                   f"duplicated only if the rows per partition stay the same): {determinism.OPT_OUT}")


def _seq(scala_seq: Any) -> list[Any]:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]


def _culprits(expr: Any) -> list[Any]:
    """The innermost non-deterministic expressions under a non-deterministic ``expr``."""
    inner = [c for c in _seq(expr.children()) if not c.deterministic()]
    return [e for c in inner for e in _culprits(c)] if inner else [expr]


def _shuffles(node: Any) -> bool:
    name = node.nodeName()
    if name == "Repartition":
        return bool(node.shuffle())
    if name == "Sort":                      # sortWithinPartitions does not shuffle
        return bool(getattr(node, "global")())
    return name in determinism.SHUFFLING


def _shuffles_below(node: Any) -> bool:
    return any(_shuffles(child) or _shuffles_below(child) for child in _seq(node.children()))


def _node_findings(node: Any, sort_before_repartition: bool) -> list[Finding]:
    name = node.nodeName()
    found = [determinism.expression(e.getClass().getSimpleName(), e.sql())
             for top in _seq(node.expressions()) if not top.deterministic() for e in _culprits(top)]
    if name == "Repartition":
        shape = determinism.repartition(bool(node.shuffle()), int(node.numPartitions()), sort_before_repartition,
                                        _shuffles_below(node))
        found += [shape] if shape else []
    elif name == "Join":
        sides = [child.isStreaming() for child in _seq(node.children())]
        if any(sides) and not all(sides):
            found.append(determinism.stream_static_join(node.simpleString(200).splitlines()[0]))
    return found


def plan_findings(df: Any) -> list[Finding] | None:
    """Every finding in ``df``'s analyzed plan (deduplicated, plan order); None on Spark Connect."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return None
    conf = df.sparkSession.conf.get(determinism.SORT_BEFORE_REPARTITION, "true")
    sort_before = str(conf).strip().lower() != "false"
    found: list[Finding] = []
    stack = [jdf.queryExecution().analyzed()]
    while stack:
        node = stack.pop()
        found += [f for f in _node_findings(node, sort_before) if f not in found]
        stack += reversed(_seq(node.children()))
    return found


_RANGES_KEPT = frozenset({"StreamingRelationV2", "StreamingRelation", "StreamingDataSourceV2Relation",
                          "StreamingDataSourceV2ScanRelation", "SubqueryAlias", "View", "Project"})


def range_rows_changed(df: Any) -> str | None:
    """For a frame of offset-range rows (source option emit=offsetRanges): the first plan node that
    may drop, add or change rows (anything but the scan and projections of its columns as they
    are), or None. None too for other frames and on Spark Connect."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None or not is_range_schema(df.schema):
        return None
    stack = [jdf.queryExecution().analyzed()]
    while stack:
        node = stack.pop()
        name = node.nodeName()
        kept = name in _RANGES_KEPT and (name != "Project" or all(
            e.getClass().getSimpleName() == "AttributeReference" for e in _seq(node.projectList())))
        if not kept:
            return node.simpleString(200).splitlines()[0]
        stack += _seq(node.children())
    return None


_SCANS = frozenset({"StreamingRelationV2", "StreamingRelation", "StreamingDataSourceV2Relation",
                    "StreamingDataSourceV2ScanRelation"})
_NARROW = frozenset({"SubqueryAlias", "View", "Project", "Filter"})


def _ids(attributes: Any) -> set[int]:
    return {int(a.exprId().id()) for a in _seq(attributes)}


def _passes_value(expr: Any, refs: set[int]) -> bool:
    """Whether ``expr`` is a reference attribute as it is, or that attribute renamed."""
    kind = expr.getClass().getSimpleName()
    if kind == "Alias":
        expr = expr.child()
        kind = expr.getClass().getSimpleName()
    return kind == "AttributeReference" and int(expr.exprId().id()) in refs


def _value_refs_node(node: Any, refs: set[int]) -> str | None:
    """Why ``node`` (its children already seen) may not carry value references, or None; adds the
    attributes it passes them on as to ``refs``."""
    name, line = node.nodeName(), node.simpleString(200).splitlines()[0]
    if name in _SCANS:
        refs |= {int(a.exprId().id()) for a in _seq(node.output()) if a.name() == "value"}
        return None
    if name not in _NARROW:
        return f"{line}: only projections and filters keep each row in its source task and order"
    if name == "Filter" and _ids(node.condition().references().toSeq()) & refs:
        return f"the filter {node.condition().sql()} reads value"
    if name == "Project":
        for expr in _seq(node.projectList()):
            if _passes_value(expr, refs):
                refs.add(int(expr.exprId().id()))
            elif _ids(expr.references().toSeq()) & refs:
                return f"{expr.sql()} reads value"
    return None


def emits_value_refs(df: Any) -> bool:
    """Whether a scan of ``df``'s plan has the source option emit=valueRefs (False on Spark Connect)."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return False
    stack = [jdf.queryExecution().analyzed()]
    while stack:
        node = stack.pop()
        if node.nodeName() == "StreamingRelationV2" and str(node.extraOptions().get("emit")).lower() == "valuerefs":
            return True
        stack += _seq(node.children())
    return False


def value_refs_refusal(df: Any) -> str | None:
    """Why ``df``'s rows may not reach the sink with value references in place of the source's
    values (source option emit=valueRefs), or None: its analyzed plan is one scan under projections
    and filters (no shuffle, no Python function, nothing that adds or reorders rows), no expression
    reads the source's ``value``, and it reaches the output as its ``value`` column, unchanged and
    nowhere else. A reason too on Spark Connect (no plan to walk)."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return "no JVM plan to check (Spark Connect)"
    root = jdf.queryExecution().analyzed()
    refs: set[int] = set()
    order, stack = [], [root]
    while stack:  # parents before children; visited in reverse: children first
        node = stack.pop()
        order.append(node)
        stack += _seq(node.children())
    scans = [n for n in order if n.nodeName() in _SCANS]
    if len(scans) != 1:
        return f"the plan reads {len(scans)} sources (one scan only)"
    for node in reversed(order):
        reason = _value_refs_node(node, refs)
        if reason:
            return reason
    out = [(a.name(), int(a.exprId().id()) in refs) for a in _seq(root.output())]
    if ("value", True) not in out:
        return "the output's value is not the source's value as it is"
    carried = [name for name, ref in out if ref and name != "value"]
    return f"the output column(s) {carried} hold the source's value" if carried else None


def check_deterministic(df: Any, allow_nondeterministic: bool = False,
                        warn: Callable[[str], None] = log.warning) -> list[Finding]:
    """Raise ``NonDeterministicPlanError`` for what a replay may not reproduce (unless allowed);
    warn about the rest. Returns every finding (empty: nothing found). A frame of offset-range
    rows that the query changes is refused first, whatever is allowed (``RangeRowsError``), and so is
    a frame of value references (emit=valueRefs) whose plan may change them (``ValueRefError``)."""
    changed = range_rows_changed(df)
    if changed:
        raise RangeRowsError(f"the query changes the source's offset-range rows ({changed}): the sink would skip or "
                             "repeat records. With emit=offsetRanges hand the source's rows to the sink as they are, "
                             "or read records (emit=records) to transform them")
    refusal = value_refs_refusal(df) if emits_value_refs(df) else None
    if refusal:
        raise ValueRefError(f"the query may change the source's value references ({refusal}): the sink would write "
                            "other values than the records'. With emit=valueRefs hand value to the sink as it is and "
                            "read nothing else of it, or read records (emit=records) to use it")
    found = plan_findings(df)
    if found is None:
        warn("kafka-eos: the plan check is skipped on Spark Connect (no JVM plan to walk): make sure the "
             "query is deterministic (no rand()/uuid(), no round-robin repartition, no coalesce after a shuffle)")
        return []
    refused = [f for f in found if f.severity == REFUSE]
    if refused and not allow_nondeterministic:
        raise NonDeterministicPlanError.of(refused)
    for finding in found:
        warn(f"kafka-eos: a replay may not reproduce this batch's rows: {finding}")
    return found
