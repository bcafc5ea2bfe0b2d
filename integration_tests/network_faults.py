"""Fault injection for a local Kafka cluster's brokers: hung (SIGSTOP), black hole and lossy link.

- ``hung``: the node's JVM is stopped with SIGSTOP and resumed with SIGCONT; its TCP connections
  stay "up" (the kernel still accepts connections into the listen backlog), so clients wait for
  their request timeouts rather than seeing a refused connection.
- ``dropped``: iptables rules on the loopback interface drop every packet (or, for a lossy link,
  a random share) to the node's client and controller ports; the node keeps running.
- ``black_hole``: ``dropped`` plus every packet the node's JVM sends (an OUTPUT rule matching the
  cgroup v2 the JVM is moved into for the fault). Dropping only what reaches its ports leaves the
  node's own connections working: it keeps heartbeating to the controller, stays leader of its
  partitions and no client can reach them (measured: the sink's pre-commit waited the whole
  60 s). A cgroup match only sees sockets created after the move, so the node's connections open
  at the start (e.g. its heartbeats to the controller) are cut by INPUT rules on each of those
  connections (from ``ss``; a rule matches both ports of one connection, never a port alone: see
  ``connection_rules``). Cut off both ways, it is fenced and its partitions move, as in a real
  partition.
- ``driver_cut_off``: a process tree (a Spark driver: spark-submit's JVM and the Python processes
  it spawns) cut off from the brokers' ports only, both ways, while every other process (the
  executors) still reaches them: the tree is moved into a cgroup v2 whose new connections to those
  ports are dropped (processes spawned later inherit it), and the tree's connections already open
  to them are cut by INPUT rules on each of those connections. Its other connections (to
  executors and the Spark master) keep working.
- Every rule carries the comment ``kafka-eos-test:<pid>`` (and every test cgroup the name
  ``kafka-eos-test-<pid>-...``), ``<pid>`` being the process that set it up, and is removed in a
  ``finally`` (the processes are moved back to the root cgroup); ``remove_stale_rules`` removes
  the rules and cgroups of owners no longer running (an earlier, interrupted run), never those of
  a test session running at the same time.
- ``ensure_iptables`` installs iptables (and iproute2's ``ss``) with apt-get when missing (root
  only) and says why a network-fault test cannot run otherwise.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from integration_tests.debian_tools import ensure
from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster

TAG = "kafka-eos-test"
OWNER = f"{TAG}:{os.getpid()}"          # the comment of this process's rules
GROUP_PREFIX = f"{TAG}-{os.getpid()}"   # the name prefix of this process's cgroups
CGROUP_ROOTS = (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))  # cgroup v2: hybrid, then unified


class NetworkFaultUnavailable(RuntimeError):
    """iptables cannot be used here (not root, or it cannot be installed)."""


def ensure_iptables() -> str:
    """The iptables binary, installed with apt-get if missing (needs root)."""
    tools = ensure({"iptables": "iptables", "ss": "iproute2"})
    found = tools["iptables"]
    if found is None or tools["ss"] is None:
        raise NetworkFaultUnavailable("iptables or ss is missing: run as root with apt-get available, or "
                                      "`apt-get install -y iptables iproute2` first")
    probe = subprocess.run([found, "-L", "INPUT", "-n"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise NetworkFaultUnavailable(f"iptables cannot list rules (needs root / CAP_NET_ADMIN): {probe.stderr.strip()}")
    return found


Connection = tuple[int, int]   # an established loopback connection: (local port, remote port)


def _established(pids: list[int]) -> list[Connection]:
    """(local, remote) ports of the established TCP connections processes ``pids`` hold (from ``ss``)."""
    listing = subprocess.run(["ss", "-Htnp", "state", "established"], capture_output=True, text=True).stdout
    found = set()
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) >= 4 and any(f"pid={pid}," in line for pid in pids):
            found.add((int(fields[2].rsplit(":", 1)[1]), int(fields[3].rsplit(":", 1)[1])))
    return sorted(found)


def own_connections(pid: int, listeners: tuple[int, ...]) -> list[Connection]:
    """The connections process ``pid`` opened (not those accepted on its ``listeners``)."""
    return [(local, remote) for local, remote in _established([pid]) if local not in listeners]


def connections_to(pids: list[int], remote_ports: tuple[int, ...]) -> list[Connection]:
    """The connections processes ``pids`` hold to ``remote_ports``."""
    return [(local, remote) for local, remote in _established(pids) if remote in remote_ports]


def connection_rules(connection: Connection) -> list[list[str]]:
    """INPUT rules dropping both directions of one loopback connection, matched on both its ports.
    A rule on one ephemeral port alone would also cut any other process's connection that got the
    same local port number for another destination (Linux shares an ephemeral port between
    connections to different remote ports); in CI it cut a parallel test session's admin client
    off its own broker (connect timed out)."""
    local, remote = connection
    return [["INPUT", "-i", "lo", "-p", "tcp", "--sport", str(src), "--dport", str(dst),
             "-m", "comment", "--comment", OWNER, "-j", "DROP"] for src, dst in ((local, remote), (remote, local))]


@contextlib.contextmanager
def cut_connections(connections: list[Connection]) -> Iterator[list[list[str]]]:
    """Drop every packet of ``connections`` (both ways) for the block; the rules added."""
    binary = ensure_iptables()
    added: list[list[str]] = []
    try:
        for connection in connections:
            for rule in connection_rules(connection):
                subprocess.run([binary, "-I", *rule], check=True, capture_output=True)
                added.append(rule)
        yield added
    finally:
        for rule in added:
            subprocess.run([binary, "-D", *rule], check=False, capture_output=True)


def _rule(port: int, probability: float | None) -> list[str]:
    rule = ["INPUT", "-i", "lo", "-p", "tcp", "--dport", str(port)]
    if probability is not None:
        rule += ["-m", "statistic", "--mode", "random", "--probability", f"{probability:.3f}"]
    return rule + ["-m", "comment", "--comment", OWNER, "-j", "DROP"]


def _alive(owner: str) -> bool:
    """Whether ``owner`` (a pid as text; anything else: an older, unowned tag) still runs."""
    if not owner.isdigit():
        return False
    try:
        os.kill(int(owner), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_rules() -> int:
    """Delete every INPUT/OUTPUT rule and test cgroup tagged ``kafka-eos-test`` whose owner no
    longer runs (left by an interrupted run); how many rules."""
    binary = ensure_iptables()
    removed = 0
    for chain in ("INPUT", "OUTPUT"):
        listing = subprocess.run([binary, "-S", chain], capture_output=True, text=True, check=True).stdout
        for line in listing.splitlines():
            spec = [part.strip('"') for part in line.split()[1:]]  # "-A INPUT ..." -> "INPUT ..."
            comment = spec[spec.index("--comment") + 1] if "--comment" in spec[:-1] else ""
            if (comment == TAG or comment.startswith(f"{TAG}:")) and not _alive(comment.partition(":")[2]):
                subprocess.run([binary, "-D", *spec], check=False, capture_output=True)
                removed += 1
    root = _cgroup_root()
    for stale in (root.glob(f"{TAG}-*") if root else ()):
        if not _alive(stale.name[len(TAG) + 1:].split("-")[0]):
            _release(root, stale)
    return removed


def _cgroup_root() -> Path | None:
    return next((r for r in CGROUP_ROOTS if (r / "cgroup.procs").exists() and (r / "cgroup.controllers").exists()),
                None)


def _release(root: Path, group: Path) -> None:
    """Move the group's processes back to the root cgroup and remove the group (if still there)."""
    try:
        pids = (group / "cgroup.procs").read_text().split()
    except OSError:  # already removed
        return
    for pid in pids:
        with contextlib.suppress(OSError):
            (root / "cgroup.procs").write_text(pid)
    with contextlib.suppress(OSError):
        group.rmdir()


@contextlib.contextmanager
def dropped(cluster: LocalKafkaCluster, node_id: int, probability: float | None = None) -> Iterator[None]:
    """Drop packets (all, or a random ``probability`` share) to the node's client and controller
    ports."""
    binary = ensure_iptables()
    node = cluster.node(node_id)
    added = []
    try:
        for port in (node.port, node.controller_port):
            rule = _rule(port, probability)
            subprocess.run([binary, "-I", *rule], check=True, capture_output=True)
            added.append(rule)
        yield
    finally:
        for rule in added:
            subprocess.run([binary, "-D", *rule], check=False, capture_output=True)


@contextlib.contextmanager
def black_hole(cluster: LocalKafkaCluster, node_id: int) -> Iterator[None]:
    """Cut the node off both ways: packets to its ports and every packet its JVM sends dropped."""
    binary, root = ensure_iptables(), _cgroup_root()
    if root is None:
        raise NetworkFaultUnavailable("no cgroup v2 hierarchy (/sys/fs/cgroup/unified or /sys/fs/cgroup) to "
                                      "match the node's own packets with")
    process = cluster.node(node_id).process
    assert process is not None, f"node {node_id} is not running"
    name = f"{GROUP_PREFIX}-node{node_id}-{process.pid}"
    group = root / name
    rule = ["OUTPUT", "-m", "cgroup", "--path", name, "-m", "comment", "--comment", OWNER, "-j", "DROP"]
    group.mkdir(exist_ok=True)
    try:
        (group / "cgroup.procs").write_text(str(process.pid))
        node = cluster.node(node_id)
        opened = own_connections(process.pid, (node.port, node.controller_port))
        with dropped(cluster, node_id), cut_connections(opened):
            subprocess.run([binary, "-I", *rule], check=True, capture_output=True)
            try:
                yield
            finally:
                subprocess.run([binary, "-D", *rule], check=False, capture_output=True)
    finally:
        _release(root, group)


def _move_tree(root_pid: int, group: Path, passes: int = 5) -> list[int]:
    """Move ``root_pid`` and its descendants into ``group``, again until a pass finds no process
    outside it (a child forked while its parent was being moved stays behind); the pids."""
    from kafka_eos.connectors.dev.processes import descendants
    inside = f"0::/{group.name}"
    for _ in range(passes):
        pids = [root_pid, *descendants(root_pid)]
        outside = [pid for pid in pids if inside not in _cgroups_of(pid)]
        if not outside:
            break
        for pid in outside:
            with contextlib.suppress(OSError):  # a process that ended meanwhile
                (group / "cgroup.procs").write_text(str(pid))
    return pids


def _cgroups_of(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return []


@dataclass
class Cut:
    """What ``driver_cut_off`` set up: the processes moved, their cgroup and the rules added."""
    pids: list[int]
    group: Path
    rules: list[list[str]] = field(default_factory=list)

    def intact(self) -> bool:
        """Every rule still in place and the cgroup still there (nothing undid the cut)."""
        binary = ensure_iptables()
        return self.group.exists() and all(
            subprocess.run([binary, "-C", *rule], capture_output=True).returncode == 0 for rule in self.rules)


@contextlib.contextmanager
def driver_cut_off(cluster: LocalKafkaCluster, root_pid: int) -> Iterator[Cut]:
    """Cut process ``root_pid`` and its descendants off from every broker port (see the module
    docstring). Other processes keep reaching the brokers."""
    binary, root = ensure_iptables(), _cgroup_root()
    if root is None:
        raise NetworkFaultUnavailable("no cgroup v2 hierarchy (/sys/fs/cgroup/unified or /sys/fs/cgroup) to "
                                      "match the driver's packets with")
    brokers = tuple(p for node in cluster.nodes for p in (node.port, node.controller_port))
    name = f"{GROUP_PREFIX}-driver-{root_pid}"
    cut = Cut([], root / name)
    new = ["OUTPUT", "-p", "tcp", "-m", "multiport", "--dports", ",".join(map(str, brokers)),
           "-m", "cgroup", "--path", name, "-m", "comment", "--comment", OWNER, "-j", "DROP"]
    cut.group.mkdir(exist_ok=True)
    try:
        cut.pids = _move_tree(root_pid, cut.group)
        subprocess.run([binary, "-I", *new], check=True, capture_output=True)
        cut.rules.append(new)
        with cut_connections(connections_to(cut.pids, brokers)) as opened:   # opened before the move
            cut.rules.extend(opened)
            yield cut
    finally:
        subprocess.run([binary, "-D", *new], check=False, capture_output=True)   # cut_connections removed its own
        _release(root, cut.group)


@contextlib.contextmanager
def hung(cluster: LocalKafkaCluster, node_id: int) -> Iterator[None]:
    """Freeze the node's JVM (SIGSTOP) for the block; always resumed (SIGCONT)."""
    process = cluster.node(node_id).process
    assert process is not None, f"node {node_id} is not running"
    os.kill(process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(process.pid, signal.SIGCONT)


def transaction_coordinator(bootstrap: str, transactional_id: str) -> int:
    """The node id coordinating ``transactional_id`` (FindCoordinator)."""
    from kafka.protocol.metadata import CoordinatorType
    from kafka_eos.txn.cluster.control_plane import control_plane
    client = control_plane({"bootstrap.servers": bootstrap})
    return client._manager.run(client._find_coordinator_id, transactional_id, CoordinatorType.TRANSACTION)
