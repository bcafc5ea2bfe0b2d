"""Seeded fault injection: which fault, when. Every choice comes from one random.Random(seed),
so a failing run is replayed by its seed."""
from __future__ import annotations

import os
import random
import signal
from dataclasses import dataclass

from kafka_eos.connectors.dev.processes import descendants

KINDS = ("driver", "python_worker", "broker", "spark_worker", "hung_broker", "black_hole", "lossy_link")
NETWORK_KINDS = ("hung_broker", "black_hole", "lossy_link")  # 3-broker runs: the query must ride them out
LOSSY_PROBABILITY = 0.07


def hold_s(fault: "Fault") -> float:
    """How long a network fault lasts: 6 x its delay, 18-60 s (no extra draw: seeds replay as before)."""
    return round(6 * fault.after_s, 1)


@dataclass
class Fault:
    kind: str
    after_s: float
    target: int = 0


def plan(seed: int, count: int, kinds: tuple[str, ...], min_s: float = 3.0, max_s: float = 10.0) -> list[Fault]:
    """Every kind once (in a seeded order) while count allows, then seeded random kinds."""
    rng = random.Random(seed)
    order = list(kinds)
    rng.shuffle(order)
    chosen = (order + [rng.choice(kinds) for _ in range(count)])[:count]
    return [Fault(kind, round(rng.uniform(min_s, max_s), 2), rng.randint(1, 3)) for kind in chosen]


TASK_DAEMONS = ("pyspark.daemon", "kafka_eos.connectors.worker_daemon")  # the latter on local masters


def is_task_worker(cmd: str, parent_cmd: str) -> bool:
    """A Python worker of a Spark task (forked from its daemon, one of ``TASK_DAEMONS``), not one
    of the driver's own data source runners (``pyspark.daemon pyspark.sql.worker.<role>``:
    planning, the writer's commit), whose loss is a driver crash and stops the query by Spark's design."""
    return (any(d in cmd and d in parent_cmd for d in TASK_DAEMONS)
            and "pyspark.sql.worker." not in cmd)


def python_workers(root_pid: int) -> list[int]:
    """Task Python workers (``is_task_worker``) below ``root_pid``."""
    workers = []
    for pid in descendants(root_pid):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            parent = int(open(f"/proc/{pid}/stat").read().split()[3])
            parent_cmd = open(f"/proc/{parent}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        if is_task_worker(cmd, parent_cmd):
            workers.append(pid)
    return workers


def kill(pid: int) -> bool:
    try:
        os.kill(pid, signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False
