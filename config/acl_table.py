"""The one table of the ACLs a pipeline's principal needs, per ``kafka-eos`` command (``ACLS``):
README's and config/README's ACL tables are ``acl_table()`` (``tests/config/test_acl_table.py`` fails
when they drift); ``config.live`` asks the brokers for the ones ``validate`` asks."""
from __future__ import annotations

from dataclasses import dataclass

from kafka_eos.txn.topics.prefix_claim import DEFAULT_CLAIM_TOPIC as CLAIM_TOPIC  # sink option prefixClaimTopic's default


@dataclass(frozen=True)
class Acl:
    """One ACL a pipeline's principal needs: a row of the ACL table (``acl_table``). ``names``: the
    YAML keys (or fixed names) naming the resources; ``commands``: the ``kafka-eos`` commands that
    need it (``COMMANDS``); ``asks``: the operations ``validate`` asks of the broker for them (none:
    not asked)."""
    resource: str                # kafka-acls's resource: topic, group, transactional-id, cluster
    names: tuple[str, ...]
    operations: tuple[str, ...]
    when: str
    asks: tuple[str, ...] = ()
    note: str = ""               # what else validate says of it
    commands: tuple[str, ...] = ("run",)


# every kafka-eos command run on a pipeline's file (demo and dev run a local broker of their own)
COMMANDS = ("run", "validate", "describe", "status", "monitor", "monitor --verify", "verify", "verify --recompute",
            "stop", "resume", "retire", "accept-loss", "accept-topic", "savepoint")
NO_ACL = ("stop", "resume", "accept-loss", "savepoint")  # only the records' store: the stop request and marker, the sink log
SOURCE_TOPICS = ("source.topics", "source.assign")
SINK_TOPICS = ("sink.topic", "errors.dlq_topic", "transform.watermark.late_topic")

ACLS: tuple[Acl, ...] = (
    Acl("topic", SOURCE_TOPICS, ("Read",), "always (a `source.pattern`'s topics too); `status` reads their "
        "read_committed end (ListOffsets) after the same check; `monitor` reads the ends and the first unread record "
        "of each partition behind (Fetch: the lag's age); `verify --recompute` re-reads each batch's input",
        ("Read",), "named topics only", ("run", "validate", "status", "monitor", "verify --recompute")),
    Acl("topic", SOURCE_TOPICS, ("Describe",), "their partitions' earliest and latest offsets (Metadata, "
        "ListOffsets); Read implies it; without it `describe` prints `live_offsets: unavailable`",
        commands=("describe",)),
    Acl("topic", SOURCE_TOPICS, ("DescribeConfigs",), "optional: their `cleanup.policy`; without it a warning, and "
        "a batch whose re-run differs fails instead of `cannot be verified` on a compacted input",
        commands=("verify --recompute",)),
    Acl("group", ("source.kafka.properties.group.id",), ("Read",),
        "when set: the source commits its progress there (lag tools), its readers use it", ("Read",),
        commands=("run", "validate")),
    Acl("group", ("spark-kafka-source",), ("Read",),
        "prefixed (source option `groupIdPrefix`), when `group.id` is not set: the executors' readers",
        commands=("run", "verify --recompute")),
    Acl("topic", SINK_TOPICS, ("Write",), "always", ("Write",), commands=("run", "validate")),
    Acl("topic", SINK_TOPICS, ("Describe",), "`exactly_once`: each output partition's last stable offset and high "
        "watermark (DescribeTopics, ListOffsets: output held back); `accept-topic`: the output topics' ids and "
        "partition counts (DescribeTopics); Write implies it", commands=("monitor", "accept-topic")),
    Acl("topic", SINK_TOPICS, ("Read",), "`exactly_once`: each committed batch's partitions read back (Fetch "
        "read_uncommitted, ListOffsets); `verify --follow` and `monitor --verify` as each batch commits",
        commands=("verify", "monitor --verify")),
    Acl("topic", SINK_TOPICS, ("DescribeConfigs",), "`exactly_once`, optional: their `cleanup.policy`; without it "
        "a warning, and a batch on a compacted topic fails instead of `cannot be verified`",
        commands=("verify", "monitor --verify")),
    Acl("transactional-id", ("sink.transactional_id_prefix",), ("Write",), "prefixed; `exactly_once`; `retire` "
        "commits the decided batch and aborts the other open transactions (EndTxn)", ("Write",),
        "a producer `<prefix>-validate-probe` initialises transactions, writes nothing", ("run", "validate", "retire")),
    Acl("transactional-id", ("sink.transactional_id_prefix",), ("Describe",), "prefixed; `exactly_once`: the open "
        "transactions (ListTransactions, DescribeTransactions); Write implies it. Without it the brokers list none "
        "(no open transaction shown); a transaction lists only the partitions of topics the principal may Describe",
        commands=("status", "monitor")),
    Acl("topic", (CLAIM_TOPIC,), ("Create", "Describe", "Read", "Write"),
        "`exactly_once`, unless sink option `prefixClaim=off` (other name: `prefixClaimTopic`); Create while "
        "it does not exist (the first pipeline's start creates it)", ("Read", "Write"), commands=("run", "validate")),
    Acl("topic", (CLAIM_TOPIC,), ("Read", "Write"), "`exactly_once`, unless `prefixClaim=off`: `status` reads the "
        "prefix's owner (Read only); `retire` reads the claims and writes this checkpoint's release",
        commands=("status", "retire")),
    Acl("topic", ("checkpoint.records",), ("Create", "Describe", "Read", "Write"), "`checkpoint.records: kafka`: "
        "the record store topic `_kafka_eos_store-<prefix>` (the sink log and every record under it; Create while it "
        "does not exist: the first `validate` or start creates it); `status` and `monitor` read it, `verify` and "
        "`retire` (and `accept-loss`) write their records there", (),
        "probed instead: a record created, read back, refused again and deleted; a refusal names these ACLs",
        ("run", "validate", "status", "monitor", "monitor --verify", "verify", "retire")),
    Acl("transactional-id", ("sink.transactional_id_prefix",), ("Write",), "`checkpoint.records: kafka`: the store's "
        "writers `<prefix>-store-driver`, `-planner`, `-runner`, `-operator`, `-follower`, `-probe` (prefixed: the "
        "Write above covers them)", (), "probed with the store", ("run", "validate", "monitor --verify", "verify", "retire")),
    Acl("cluster", ("kafka-cluster",), ("DescribeConfigs",),
        "`exactly_once`: `validate` and the sink's start read `transaction.max.timeout.ms`", ("DescribeConfigs",),
        commands=("run", "validate")),
)


def acl_table(acls: tuple[Acl, ...] = ACLS) -> str:
    """The ACL table of README.md and config/README.md (markdown), and the commands that need none."""
    lines = ["| resource | name | operations | commands | needed | `validate` asks |", "|---|---|---|---|---|---|"]
    for acl in acls:
        asks = ", ".join(acl.asks) or "no"
        lines.append(f"| {acl.resource} | {', '.join(f'`{n}`' for n in acl.names)} | {', '.join(acl.operations)} | "
                     f"{', '.join(f'`{c}`' for c in acl.commands)} | {acl.when} | "
                     f"{asks + ('; ' + acl.note if acl.note else '')} |")
    lines += ["", "`verify --recompute` needs `verify`'s ACLs too; "
                  f"{', '.join(f'`{c}`' for c in NO_ACL[:-1])} and `{NO_ACL[-1]}` need none with records in files: they "
                  "touch only the checkpoint's store (the stop request and marker, the sink log); with "
                  "`checkpoint.records: kafka` they write there, and need the two `checkpoint.records` rows' ACLs."]
    return "\n".join(lines)
