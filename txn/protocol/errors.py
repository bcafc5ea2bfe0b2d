"""Named exceptions for broken invariants of the commit protocol."""
from __future__ import annotations

from kafka_eos import KafkaEosError


class TwoPhaseCommitError(KafkaEosError, RuntimeError):
    """Base class: something the exactly-once protocol cannot continue past."""


class SinkConfigError(TwoPhaseCommitError, ValueError):
    """A sink setting is missing or unsafe; the message names the setting and the fix."""


class TransactionLostError(TwoPhaseCommitError):
    """A decided transaction can no longer be committed (the broker aborted it, e.g. on
    ``transaction.timeout.ms``). Its data is NOT in the output: the batch must be replayed,
    which a restart from the checkpoint does (the lost sink partitions are re-written)."""

    @classmethod
    def of_batch(cls, batch_id: int, lost: list[int], records: int, transaction_timeout_ms: int
                 ) -> "TransactionLostError":
        return cls(
            f"batch {batch_id}: the broker aborted the transactions of sink partitions "
            f"{lost} ({records} records) before they were committed: transaction.timeout.ms "
            f"({transaction_timeout_ms} ms) elapsed, the ids expired, or another writer of the "
            "ids fenced them (a straggling task attempt, a second run of the query). Nothing is lost for "
            "good: restart the query from its checkpoint; it replays this batch and re-writes exactly "
            "those partitions. If the timeout elapsed, raise transaction.timeout.ms (within the broker's "
            "transaction.max.timeout.ms).")


class ReplayMismatchError(TwoPhaseCommitError):
    """A replayed batch does not have the rows of the decided one (another number of sink
    partitions, or another record count in a sink partition), so its lost partitions cannot be
    re-written exactly once; the replay's transactions are aborted, nothing is committed."""

    @classmethod
    def of_batch(cls, batch_id: int, rewrite: list[int], rewrite_records: int, replay_partitions: int,
                 decided_partitions: int, counts: str) -> "ReplayMismatchError":
        return cls(
            f"batch {batch_id} cannot be re-written exactly once: sink partitions {rewrite} of its decision "
            f"({rewrite_records} records) were lost and must be re-written, but "
            f"the replay of the same offsets does not give the decided rows - it has {replay_partitions} sink "
            f"partitions (decided: {decided_partitions}) and other record counts ({counts}). Likely cause: "
            "a non-deterministic plan before the sink (rand()/uuid() deciding which rows are kept or where they "
            "go, coalesce after a shuffle, a round-robin repartition(n) with "
            "spark.sql.execution.sortBeforeRepartition=false, a stream-static join on a table that changed). "
            "Nothing of this replay was committed (its transactions are aborted). Ways on: (1) make the plan "
            "reproduce the decided rows (e.g. repartition(n, <key columns>)) and restart from the checkpoint; "
            f"or (2) accept the loss of those {rewrite_records} records, once: stop the query and run "
            f"`kafka-eos accept-loss --batch {batch_id} <pipeline.yaml>` (code users: "
            f"`kafka-eos accept-loss --batch {batch_id} --sink-log <checkpointLocation>/kafka-eos-sink`), then "
            "restart: the replay of this batch commits nothing more (no duplicate) and the query goes on; the "
            f"lost records' source offsets are in the checkpoint's offsets/{batch_id}, to be re-sent by hand "
            "if they are needed.")


class ProducerFencedError(TwoPhaseCommitError):
    """Another writer (a newer query with the same transactional-id prefix, or a newer task
    attempt) took over the transactional id."""


class StoreFencedError(ProducerFencedError):
    """Another writer of the same role (a second driver of the pipeline, a second operator
    command or follower) opened kafka-eos's record store topic and fenced this one: this writer
    wrote nothing more, and every later write of it raises this error too."""

    @classmethod
    def of_writer(cls, topic: str, role: str, transactional_id: str, name: str) -> "StoreFencedError":
        return cls(
            f"kafka-eos's record store topic {topic!r}: another {role} of this pipeline (transactional.id "
            f"{transactional_id!r}) opened the store after this one and fenced it, so record {name!r} was not "
            f"written and this {role} writes nothing more. Two {role}s of one pipeline ran at once (for a "
            "driver: a second run of the query on the same checkpoint). Fix: run one at a time; stop this one "
            "(the newer one goes on), or stop the newer one and restart this one.")


class SinkLogError(TwoPhaseCommitError):
    """The sink log is unreadable, of an unknown format version, or belongs to another prefix."""


class SinkLogConflictError(SinkLogError):
    """A create-only sink log record already exists: another run of the query (same checkpoint
    and sink log) wrote that state meanwhile and took over; this run must not proceed."""

    @classmethod
    def of_record(cls, where: str, batch_id: int) -> "SinkLogConflictError":
        return cls(f"{where} already exists: another run of this query (same checkpoint "
                   f"and sink log) wrote batch {batch_id} meanwhile and took over. This run stops "
                   "without touching it; run one query per checkpoint at a time.")


class OutputTopicChangedError(TwoPhaseCommitError):
    """An output topic is not the one earlier batches wrote to (deleted, re-created, shrank; or
    grew while the sink keeps a fixed partition layout). The batch's records are not committed."""

    @classmethod
    def of_changes(cls, changes: list, fixed_partitions: bool) -> "OutputTopicChangedError":
        """``changes``: the refused ``kafka_eos.txn.topics.output_topics.TopicChange``s."""
        what = "; ".join(c.describe() for c in changes)
        counts = ", ".join(f"'{c.name}' with {'exactly' if fixed_partitions else 'at least'} "
                           f"{c.recorded.partitions if c.recorded else 'the intended number of'} partitions"
                           for c in changes)
        return cls(
            f"{what}. The query stops so that no record lands in another topic or partition layout than the "
            "one earlier batches wrote to; nothing of the running batch is committed. If the broker "
            "auto-creates topics (auto.create.topics.enable=true), a producer may have re-created it with the "
            "broker's num.partitions. Every start of the query is refused the same way, a supervisor's automatic "
            "restarts included, until an operator accepts the topic. Fix: (re-)create the topic as intended - "
            + counts + " (e.g. kafka-topics --create --topic <name> --partitions <n>; delete an auto-created one "
            "first) - then accept it: `kafka-eos accept-topic <pipeline.yaml>` (code users: "
            "kafka_eos.connectors.operate.accept_topic.accept_sink_topics(<the sink's options>)), and restart "
            "the query from its checkpoint: it writes every batch not yet committed (records committed to a "
            "deleted topic went with it)."
            + (" With sink option fixedPartitions=true (YAML sink.fixed_partitions) a topic that grew is refused: "
               "set it to false to accept the new layout." if fixed_partitions else ""))


class OutputTopicCheckError(TwoPhaseCommitError):
    """The broker did not say what the output topics are (DescribeTopics failed or timed out)."""

    @classmethod
    def of_topics(cls, names: list[str], detail: str) -> "OutputTopicCheckError":
        return cls(f"could not describe the output topics {names} to check they are the ones earlier batches "
                   f"wrote to: {detail}. Check the broker is reachable and the principal may Describe these "
                   "topics (commit.timeout.ms bounds the wait), then restart the query from its checkpoint.")


class PrefixClaimedError(TwoPhaseCommitError):
    """The transactional-id prefix is claimed by another pipeline (another checkpoint): two
    pipelines sharing a prefix would abort each other's transactions, so this one does not start."""

    @classmethod
    def of_claims(cls, prefix: str, ours: str, theirs: str, claimed_at: str, host: str,
                  topic: str) -> "PrefixClaimedError":
        return cls(
            f"transactional.id.prefix {prefix!r} belongs to the pipeline checkpointed at {theirs} "
            f"(claimed {claimed_at} from host {host or '?'}, recorded in topic {topic}); this pipeline "
            f"(checkpoint {ours}) did not start and wrote nothing. Two pipelines sharing a prefix abort each "
            "other's transactions. Fix: give this pipeline another prefix, or leave transactional_id_prefix "
            "unset to get one derived from its name and checkpoint, or - if the pipeline at "
            f"{theirs} will never run again - run 'kafka-eos retire' on its pipeline file to release the prefix.")


class PrefixClaimAccessError(TwoPhaseCommitError):
    """The prefix-claim topic cannot be created, read or written by this principal."""

    @classmethod
    def of_topic(cls, topic: str, action: str, detail: str) -> "PrefixClaimAccessError":
        return cls(
            f"the prefix-claim topic {topic!r} could not be {action}: {detail}. kafka-eos records there which "
            "checkpoint owns each transactional.id.prefix, so two pipelines never share one. Fix: let an "
            f"admin create it (kafka-topics --create --topic {topic} --partitions 1 --config "
            "cleanup.policy=compact) and grant this principal Describe, Read and Write on it "
            f"(kafka-acls --add --allow-principal User:<user> --operation Describe --operation Read "
            f"--operation Write --topic {topic}); or name another topic with sink option prefixClaimTopic; "
            "or turn the check off with sink option prefixClaim=off (then nothing stops a second pipeline "
            "with the same prefix).")


class CheckpointRetiredError(TwoPhaseCommitError):
    """The checkpoint was retired (``kafka-eos retire``): its prefix is released, it does not run again."""

    @classmethod
    def of_marker(cls, where: str, retired_at: str) -> "CheckpointRetiredError":
        return cls(
            f"this pipeline's checkpoint was retired at {retired_at} ({where}): its decided transactions "
            "were committed, the rest aborted and its transactional-id prefix released. It does not run "
            "again; start the pipeline with a new checkpoint location to process the input anew.")
