"""Faults only containers give, on a broker container attached to a network of its own
(``integration_tests.chaos.container_faults``): the broker frozen whole by the engine
(``pause``/``unpause``) and the broker cut off its network (``network disconnect``/``connect``).
The running query rides out both without a restart and every input id is in the read_committed
output exactly once."""
from __future__ import annotations

import pytest

from integration_tests.chaos import container_faults
from integration_tests.broker_containers import ContainerUnavailable
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import kill_group, seed_input, start_job, tail, wait_for
from integration_tests.crash.test_sink_crash_matrix import job_args

IDS = 3000
HOLD_S = 20


@pytest.fixture(scope="module")
def networked_broker():
    context = container_faults.networked_broker()
    try:
        broker, network = context.__enter__()
    except ContainerUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield broker, network
    finally:
        context.__exit__(None, None, None)


# A pause longer than the single broker's session timeout (9 s) fences it at the unpause: for a
# moment (0.4 s idle, longer under load) every partition has leader -1, then it is unfenced with a
# new leader epoch. A new AdminClient whose metadata says leader -1 fails ListOffsets at once with
# _NOENT "Failed to query partition leaders: No leaders found"; the source took that as
# non-transient and stopped the query (2 of 6 runs). It is now retried as LEADER_NOT_AVAILABLE
# (offsets/kafka_offsets.py). A client older than the fault answers FENCED_LEADER_EPOCH until its
# next full metadata refresh (minutes); the lookup retries that on a new client. After the fix:
# 4 of 4 pause runs that reached the fault passed (3 others ended before it: the job did not
# start at load 25-38), and 3096 lookups right after 8 unpauses (7 fenced) all answered.
@pytest.mark.chaos  # each 1-5 min on 2 shared cores: `make chaos`
@pytest.mark.parametrize("fault", container_faults.KINDS)
def test_the_query_rides_out_a_container_fault(fault, networked_broker, tmp_path):
    broker, network = networked_broker
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique(f"ctr-{fault}")}
    seed_input(broker.bootstrap, names["input"], IDS)
    args = job_args(broker.bootstrap, tmp_path, names)
    log = tmp_path / "job.log"
    proc = start_job(args, log)
    try:
        # the first decision: a job on 2 shared cores under load took over 300 s to get there
        wait_for((tmp_path / "checkpoint" / "kafka-eos-sink", "[0-9]*.json"), proc, 600, log)
        container_faults.hold(broker, network, fault, HOLD_S)
        assert proc.wait(600) == 0, f"the query stopped after the {fault}:\n{tail(log)}\n{broker.container.log_tail(80)}"
    finally:
        kill_group(proc)
    assert_exactly_once(check_exactly_once(broker.bootstrap, names["output"], IDS))
