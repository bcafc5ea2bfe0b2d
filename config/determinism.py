"""Which expressions and plan shapes make a replayed batch differ from its first run (pure rules).

The sink re-writes a lost sink partition from a replay of the same offsets, and that is exactly
once only if the replay gives each sink partition the same rows (``txn/protocol/protocol.py`` step 2
checks record counts, not the rows). This module decides, from names only, what breaks that:

- refused: a non-deterministic expression (Spark's ``deterministic`` flag is false): ``rand``,
  ``randn``, ``uuid``, ``shuffle``, ``monotonically_increasing_id``, ``spark_partition_id``, a
  Python UDF marked ``asNondeterministic()`` ...; a round-robin ``repartition(n)`` when
  ``spark.sql.execution.sortBeforeRepartition`` is false; ``coalesce(n)`` after a shuffle;
- warned: a stream-static join (a static table that changes between the run and the replay
  gives other rows);
- safe: ``current_timestamp``/``now``/``current_date``/``localtimestamp``: a micro-batch replaces
  them with the batch timestamp recorded in the offset log (``batchTimestampMs``), which a replay
  re-uses; a round-robin ``repartition(n)`` with ``sortBeforeRepartition`` true (the default):
  Spark sorts each input partition before dealing rows out from a start given by the partition
  index, so the same input rows land in the same output partitions.

``sql_calls`` is the static scan ``kafka-eos validate`` uses without Spark: it finds the calls
of the refused functions by name in SQL text (comments and string literals aside). It cannot
see a Python UDF's flag, a repartition done in code, or a function reached through a view.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

REFUSE, WARN = "refuse", "warn"
SORT_BEFORE_REPARTITION = "spark.sql.execution.sortBeforeRepartition"

# Catalyst class name -> SQL function name, for the non-deterministic functions a SQL text can call
FUNCTIONS = {"Rand": "rand", "Randn": "randn", "Uuid": "uuid", "Shuffle": "shuffle",
             "MonotonicallyIncreasingID": "monotonically_increasing_id", "SparkPartitionID": "spark_partition_id",
             "Randstr": "randstr", "Uniform": "uniform", "InputFileName": "input_file_name"}
SQL_NAMES = frozenset(FUNCTIONS.values()) | {"random"}           # random() is rand()'s SQL alias
# logical plan nodes whose output partitions come from a shuffle
SHUFFLING = frozenset({"RepartitionByExpression", "RebalancePartitions", "Aggregate", "Join", "Deduplicate",
                       "DeduplicateWithinWatermark", "Distinct", "Window", "Sort"})   # Sort: when global
OPT_OUT = "transform.allow_nondeterministic: true (YAML) or check_deterministic(df, allow_nondeterministic=True)"


@dataclass(frozen=True)
class Finding:
    """One thing in a plan that a replay may not reproduce; ``what`` is its SQL text."""
    severity: str   # REFUSE | WARN
    what: str
    reason: str
    fix: str

    def __str__(self) -> str:
        return f"{self.what}: {self.reason}; fix: {self.fix}"


def expression(class_name: str, sql: str) -> Finding:
    """A non-deterministic expression (Spark says so): refused, named by its SQL text."""
    if class_name == "PythonUDF":
        return Finding(REFUSE, sql, "a Python UDF marked asNondeterministic() may return other values on a "
                       "replay", "make the UDF deterministic (and drop asNondeterministic()), or opt out")
    name = FUNCTIONS.get(class_name, class_name)
    return Finding(REFUSE, sql, f"{name} is non-deterministic: a replay of the batch computes other values, "
                   "and where they decide which rows are kept or which sink partition gets them, re-writing a "
                   "lost partition loses or duplicates records",
                   "derive the value from the record (e.g. xxhash64(key, offset) instead of rand(), "
                   "the topic/partition/offset instead of uuid()), or opt out if only the values differ")


def repartition(shuffle: bool, num_partitions: int, sort_before_repartition: bool,
                after_shuffle: bool) -> Finding | None:
    """``Repartition(n, shuffle)``: round-robin ``repartition(n)`` (shuffle) or ``coalesce(n)``."""
    if shuffle and not sort_before_repartition:
        return Finding(REFUSE, f"repartition({num_partitions})",
                       f"a round-robin repartition with {SORT_BEFORE_REPARTITION}=false deals rows out in "
                       "arrival order, which a replay does not keep",
                       f"repartition({num_partitions}, <key columns>), or leave {SORT_BEFORE_REPARTITION} "
                       "at its default (true)")
    if not shuffle and after_shuffle:
        return Finding(REFUSE, f"coalesce({num_partitions})",
                       "coalesce after a shuffle groups the shuffle's partitions by where their data was "
                       "written, which differs on a replay",
                       f"repartition({num_partitions}, <key columns>) instead of coalesce({num_partitions})")
    return None


def stream_static_join(sql: str) -> Finding:
    return Finding(WARN, sql, "a stream-static join reads the static side again on a replay: if that table "
                   "changed, the replayed batch has other rows and its lost partitions cannot be re-written",
                   "keep the static table unchanged while the query runs (or version it)")


_STRINGS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`", re.S)
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
_CALL = re.compile(r"(?i)\b([a-z_][a-z0-9_]*)\s*\(")


def sql_calls(text: str) -> list[str]:
    """The refused functions ``text`` calls, in order of first call (lower case; a static scan)."""
    bare = _STRINGS.sub("''", _COMMENTS.sub(" ", text))
    found: list[str] = []
    for match in _CALL.finditer(bare):
        name = match[1].lower()
        if name in SQL_NAMES and name not in found:
            found.append(name)
    return found
