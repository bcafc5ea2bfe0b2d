"""``kafka-eos status``'s report as text lines, one per fact (``status.render`` adds the attention
lines and the verdict, and redacts)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any


def _time(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _v(value: Any) -> str:
    return "none" if value is None else str(value)


def lines(doc: dict[str, Any]) -> list[str]:
    c = doc["checkpoint"]
    lines = [f"pipeline: {doc['pipeline'] or '-'} ({doc['file']}), {doc['guarantee']}",
             f"checkpoint: {c['location']}: last planned batch {_v(c['last_planned_batch'])}, "
             f"last committed batch {_v(c['last_committed_batch'])}"]
    source = doc.get("source")
    for row in (source or {}).get("partitions", []):
        lines.append(f"source {row['topic']}-{row['partition']}: position {_v(row['position'])}, "
                     f"end (read_committed) {_v(row['end'])}, lag {_v(row['lag'])}")
    if source:
        lines.append(f"source lag: {source['total_lag']} records" if source["total_lag"] is not None else
                     "source lag: unknown (no batch committed yet)")
    if (waits := doc.get("stall")):
        lines.append(f"input waiting: {waits['waiting_s']:.0f} s with no batch committed (stall threshold "
                     f"{waits['threshold_s']:.0f} s)" + (f"; driver {waits['driver']}" if waits["driver"] else ""))
    log = doc.get("sink_log")
    if log:
        lines.append(f"sink log: {log['location']}: " + (
            "no decision yet" if log["state"] == "none" else f"last decision batch {log.get('batch')}: "
            f"{log['state']} ({log.get('sink_partitions')} sink partitions, {log.get('records')} records)"
            if log["state"] != "unreadable" else "unreadable"))
    checked = doc.get("verify") or {}
    if "at_ms" in checked:
        lines.append(f"verify: newest verified batch {_v(checked['newest_verified_batch'])}; last run at "
                     f"{_time(checked['at_ms'])}: " + ", ".join(f"{n} {o}" for o, n in checked["batches"].items()))
    if (follow := checked.get("follow")):
        lines.append(f"verify --follow: verified through batch {follow['verified_through']}, "
                     f"{follow['unverified_batches']} waiting, {follow['aged_out']} aged out; at {_time(follow['at_ms'])}")
    txns = doc.get("open_transactions")
    if txns is not None:
        rows = txns["transactions"]
        lines.append(f"open transactions under prefix {txns['prefix']}: {len(rows) or 'none'}")
        lines += [f"open transaction {t['transactional_id']}: open {t['age_ms'] / 1000:.0f} s of "
                  f"{t['timeout_ms'] / 1000:.0f} s (transaction.timeout.ms), owner {t.get('owner', '-')}, "
                  f"partitions {', '.join(t['partitions']) or '-'}" for t in rows]
    owner = doc.get("prefix_owner")
    if owner is not None:
        claim = owner["claim"]
        held = (f"checkpoint {claim['checkpoint']} (query {claim['query_id']}, ids owner {claim['owner'] or 'legacy'}, "
                f"since {claim['claimed_at']}, host {claim['host']})" if isinstance(claim, dict) else claim or "nobody")
        lines.append(f"prefix owner ({owner['topic']}): {held}; this checkpoint's ids owner: "
                     f"{owner['this_owner'] or 'legacy'}")
    return lines
