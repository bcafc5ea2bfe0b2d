"""A group of YAML pipelines in one Spark application (issue 67): ``kafka-eos run a.yaml b.yaml c.yaml``.

- Killed twice: five pipelines (JSON orders with a DLQ and poison records, a bytes copy with keys
  and headers, an Avro copy, a windowed count, a copy on a second cluster) with input arriving; the
  group's process SIGKILLed twice after every pipeline committed batches; a last ``--once`` run;
  each output holds every id exactly once, the DLQ every poison record once, nothing from aborted
  input, every closed window equal to a batch count, once.
- Submitted (``--master``), and one pipeline's broker hung 60 s (the others go on).
- Watched and isolated (`run --watch DIR`): files added, changed, removed; one output topic re-created: that pipeline
  stops with its reason, the others commit batches after it stopped (counted), SIGTERM ends the
  group, whose summary names the stopped one and whose exit code is its permanent one (5).
"""
from __future__ import annotations

import io
import json
import re
import signal
import threading
import time
import urllib.request
from pathlib import Path

import fastavro
import pytest
import yaml

from kafka_eos.connectors.demo_data import order
from integration_tests.kafka_tools import (ABORTED_BASE, assert_exactly_once, check_exactly_once, create_topic,
                                           produce, unique)
from integration_tests.pipeline_cli import EXAMPLES, kafka_eos, small_spark_conf, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, tail

CLUSTER = {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}
POISON = 15
BATCHES_BOUND_S = 240.0


def _copy(tmp_path: Path, name: str, source: str, out: str, cluster: dict = CLUSTER) -> Path:
    doc = {"version": 1, "name": name,
           "source": {"kafka": cluster, "topics": [source], "starting_offsets": "earliest",
                      "max_offsets_per_trigger": 400, "include_headers": True},
           "sink": {"kafka": cluster, "topic": out, "headers_column": "headers", "transaction_timeout_ms": 300_000},
           "checkpoint": {"location": f"${{KAFKA_EOS_CHECKPOINTS}}/{name}", "trigger": "1 second"}}
    return _write(tmp_path, name, doc)


def _far_copy(tmp_path: Path, bootstrap: str) -> tuple[Path, str, str]:
    """g-far: a copy on another cluster (``bootstrap``), its input and output topics."""
    far_in, far_out = create_topic(bootstrap, unique("far-in"), 2), create_topic(bootstrap, unique("far-out"), 2)
    return _copy(tmp_path, "g-far", far_in, far_out, {"bootstrap_servers": bootstrap}), far_in, far_out


def _orders(tmp_path: Path, name: str, source: str, out: str, dlq: str) -> Path:
    doc = yaml.safe_load((EXAMPLES / "orders-json.yaml").read_text())
    doc["name"], doc["source"]["topics"], doc["sink"]["topic"] = name, [source], out
    doc["source"]["kafka"] = doc["sink"]["kafka"] = CLUSTER
    doc["source"]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "order.avsc")
    doc["source"]["max_offsets_per_trigger"] = 400
    doc["transform"]["sql"] = doc["transform"]["sql"].replace("value.quantity > 0", "true")
    doc["checkpoint"] = {"location": f"${{KAFKA_EOS_CHECKPOINTS}}/{name}", "trigger": "1 second"}
    doc["errors"] = {"on_decode_error": "dlq", "dlq_topic": dlq}
    return _write(tmp_path, name, doc)


def _write(tmp_path: Path, name: str, doc: dict) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _order(i: int) -> bytes:
    return order("g", i)[1]  # order_id "g-<i>"


def _order_id(message) -> int:
    return int(json.loads(message.value())["order_id"].rsplit("-", 1)[1])


class Input:
    """Ids written to every input topic in rounds while the group runs; aborted ones between."""

    def __init__(self, bootstrap: str, topics: dict[str, str]) -> None:
        self.bootstrap, self.topics, self.next_id = bootstrap, topics, 0
        self.stop, self.thread = threading.Event(), threading.Thread(target=self._loop, daemon=True)
        self.lock = threading.Lock()

    def write(self, count: int) -> None:
        with self.lock:
            self._write(count)

    def _write(self, count: int) -> None:
        ids = range(self.next_id, self.next_id + count)
        for kind, topic in self.topics.items():
            value = {"orders": _order, "avro": _avro_value}.get(kind, lambda i: b"%d" % i)
            produce(self.bootstrap, topic, [(b"k%d" % (i % 7), value(i)) for i in ids], transactional=unique("in"))
            produce(self.bootstrap, topic, [(b"x", value(ABORTED_BASE + i)) for i in ids[:5]],
                    transactional=unique("in-abort"), commit=False)
        self.next_id += count

    def _loop(self) -> None:
        while not self.stop.wait(1.0):
            self.write(150)

    def __enter__(self) -> "Input":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(30)


def _batches(log: Path, name: str) -> int:
    """How many batches of ``name`` committed output (its progress lines counting "out"); a windowed
    pipeline's: every batch."""
    tail_ = "" if name == "g-windows" else r": .* out\b"
    pattern = re.compile(rf"^kafka-eos {re.escape(name)} batch \d+{tail_}", re.M)
    return len(pattern.findall(log.read_text(errors="replace")))


def _await_batches(log: Path, proc, names: list[str], at_least: dict[str, int]) -> None:
    deadline = time.monotonic() + BATCHES_BOUND_S
    while time.monotonic() < deadline:
        if all(_batches(log, n) >= at_least[n] for n in names):
            return
        assert proc.poll() is None, f"the group exited ({proc.returncode}):\n{tail(log, 80)}"
        time.sleep(0.5)
    kill_group(proc)
    raise AssertionError(f"not every pipeline committed within {BATCHES_BOUND_S} s:\n{tail(log, 80)}")


def _group(tmp_path: Path, bootstrap: str) -> tuple[list[Path], dict[str, str], dict[str, str]]:
    inputs = {kind: create_topic(bootstrap, unique(f"group-{kind}-in"), 3) for kind in ("copy", "orders", "keyed")}
    outs = {kind: create_topic(bootstrap, unique(f"group-{kind}-out"), 2) for kind in ("copy", "orders", "keyed")}
    outs["dlq"] = create_topic(bootstrap, unique("group-dlq"), 1)
    files = [_copy(tmp_path, "g-copy", inputs["copy"], outs["copy"]),
             _orders(tmp_path, "g-orders", inputs["orders"], outs["orders"], outs["dlq"]),
             _copy(tmp_path, "g-keyed", inputs["keyed"], outs["keyed"])]
    return files, inputs, outs


def test_a_group_submitted_to_a_master_drains_every_pipeline_once(bootstrap, tmp_path):
    """``kafka-eos run a.yaml b.yaml --master local[2] --once``: one spark-submit driver, both drained."""
    files, inputs, outs = _group(tmp_path, bootstrap)
    with Input(bootstrap, {k: inputs[k] for k in ("copy", "keyed")}) as feed:
        feed.stop.set()
        feed.write(900)
    done = kafka_eos(["run", str(files[0]), str(files[2]), "--master", "local[2]", "--once", *small_spark_conf()],
                     bootstrap, tmp_path, timeout=600)
    assert done.code == 0, done.log(60)
    assert "kafka-eos: the group ended:" in done.stdout and done.stdout.count("(exit 0)") == 2, done.log(40)
    for kind in ("copy", "keyed"):
        assert_exactly_once(check_exactly_once(bootstrap, outs[kind], feed.next_id))


AVRO = fastavro.parse_schema({"type": "record", "name": "Id", "fields": [{"name": "id", "type": "long"}]})


def _avro_value(i: int) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, AVRO, {"id": i})
    return out.getvalue()


def _avro_id(message) -> int:
    return fastavro.schemaless_reader(io.BytesIO(message.value()), AVRO)["id"]


def _avro(tmp_path: Path, name: str, source: str, out: str) -> Path:
    schema = {"inline": {"type": "record", "name": "Id", "fields": [{"name": "id", "type": "long"}]}}
    doc = {"version": 1, "name": name,
           "source": {"kafka": CLUSTER, "topics": [source], "starting_offsets": "earliest", "format": "avro",
                      "schema": schema, "max_offsets_per_trigger": 400},
           "transform": {"sql": "SELECT key, value FROM source"},
           "sink": {"kafka": CLUSTER, "topic": out, "format": "avro", "schema": schema, "transaction_timeout_ms": 300_000},
           "checkpoint": {"location": f"${{KAFKA_EOS_CHECKPOINTS}}/{name}", "trigger": "1 second"}}
    return _write(tmp_path, name, doc)


def _windows(tmp_path: Path, bootstrap: str) -> tuple[Path, dict[str, str], list]:
    """The savepoint tests' 1-minute windowed count (watermark 30 s, late topic, DLQ) over 4 minutes of views."""
    from integration_tests import savepoint_cells as cells
    topics = cells.new_topics(bootstrap)
    doc = cells.pipeline_doc(tmp_path, topics, "g-windows", cells.SQL.format(size="1 minute", slide=""))
    doc["name"], doc["checkpoint"]["location"] = "g-windows", "${KAFKA_EOS_CHECKPOINTS}/g-windows"
    sent = cells.seed(bootstrap, topics["in"], 0, cells.T0, cells.T0 + 4 * cells.MINUTE)
    return _write(tmp_path, "g-windows", doc), topics, sent


@pytest.mark.long
def test_five_pipelines_killed_twice_keep_every_output_exactly_once(bootstrap, tmp_path):
    """JSON orders with a DLQ and poison records, a bytes copy, an Avro copy, a windowed count and a
    copy on a second cluster, in one application with input arriving; the group's process SIGKILLed
    twice after every pipeline committed batches; a last ``--once``: every output exactly once, every
    window the watermark closed equal to a batch count over the whole input, each once."""
    from integration_tests import savepoint_cells as cells
    from integration_tests.providers import local_broker
    with local_broker() as far:
        files, inputs, outs = _group(tmp_path, bootstrap)
        inputs["avro"] = create_topic(bootstrap, unique("g-avro-in"), 2)
        outs["avro"] = create_topic(bootstrap, unique("g-avro-out"), 2)
        remote, far_in, far_out = _far_copy(tmp_path, far.bootstrap)
        windowed, views, sent = _windows(tmp_path, bootstrap)
        group = [files[0], files[1], _avro(tmp_path, "g-avro", inputs["avro"], outs["avro"]), windowed, remote]
        del inputs["keyed"]
        produce(bootstrap, inputs["orders"], [(b"p", b"poison-%d" % i) for i in range(POISON)])
        args = ["run", *map(str, group), *small_spark_conf()]
        names = ["g-copy", "g-orders", "g-avro", "g-far"]
        with Input(bootstrap, inputs) as feed, Input(far.bootstrap, {"far": far_in}) as far_feed:
            feed.write(300), far_feed.write(300)
            for kill in (1, 2):
                log = tmp_path / f"group-{kill}.log"
                proc = start_kafka_eos(args, bootstrap, tmp_path, log)
                _await_batches(log, proc, [*names, "g-windows"], {**{n: 2 for n in names}, "g-windows": 1})
                kill_group(proc)
                proc.wait(30)
        done = kafka_eos([*args, "--once"], bootstrap, tmp_path, timeout=900)
        assert done.code == 0, done.log(60)
        assert all(f"kafka-eos {n}: " in done.stdout for n in [*names, "g-windows"]), done.log(60)
        for kind, id_of in (("copy", None), ("orders", _order_id), ("avro", _avro_id)):
            report = check_exactly_once(bootstrap, outs[kind], feed.next_id, **({"id_of": id_of} if id_of else {}))
            assert_exactly_once(report)
        assert_exactly_once(check_exactly_once(bootstrap, outs["dlq"], expected=range(POISON),
                                               id_of=lambda m: int(m.value().split(b"-")[1])))
        assert_exactly_once(check_exactly_once(far.bootstrap, far_out, far_feed.next_id))
        got, late = cells.windows(bootstrap, views["out"]), cells.late_ids(bootstrap, views["late"])
        assert len(got) == len(set((page, start) for page, start, _ in got)), "a window emitted twice"
        want = cells.expected(sent, late)
        assert want and sorted(w for w in got if (w[0], w[1]) in {(p, s) for p, s, _ in want}) == sorted(want), (got, want)


def _delete_and_recreate(bootstrap: str, topic: str, partitions: int) -> None:
    from integration_tests.sink.test_sink_topic_changes import delete_topic
    delete_topic(bootstrap, topic)
    for _ in range(60):
        try:
            create_topic(bootstrap, topic, partitions)
            return
        except Exception:  # noqa: BLE001 - the deletion is still under way, or the producer re-created it
            time.sleep(0.5)


def _terminated_after_more(log: Path, proc, name: str, more: int = 2) -> int:
    """SIGTERM once ``name`` committed ``more`` batches from now; the group's exit code."""
    _await_batches(log, proc, [name], {name: _batches(log, name) + more})
    proc.send_signal(signal.SIGTERM)
    return proc.wait(180)


def _free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _await_line(log: Path, proc, text: str) -> None:
    deadline = time.monotonic() + BATCHES_BOUND_S
    while text not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline and proc.poll() is None, f"no {text!r}:\n{tail(log, 80)}"
        time.sleep(0.5)


def test_a_watched_group_follows_its_directory_and_one_pipelines_failure_stops_it_alone(bootstrap, tmp_path):
    """``run --watch DIR`` with g-copy and g-orders: g-keyed's file added (started), g-copy's changed
    (replaced on its checkpoint), g-keyed's output topic re-created (it stops, 5), g-orders' file removed
    (stopped after its batch), the others committing throughout; SIGTERM: the summary names each, exit 5.
    Then each drained with --once: every id once in g-copy's and g-orders' outputs, the DLQ's once."""
    folder, spare = tmp_path / "pipelines", tmp_path / "spare"
    folder.mkdir(), spare.mkdir()
    files, inputs, outs = _group(spare, bootstrap)
    copy, orders, keyed = (folder / f.name for f in files)
    port = _free_port()
    doc = yaml.safe_load(files[0].read_text())
    doc["metrics"] = {"port": port}  # each file's own endpoint serves its pipeline in the group
    copy.write_text(yaml.safe_dump(doc)), orders.write_text(files[1].read_text())
    produce(bootstrap, inputs["orders"], [(b"p", b"poison-%d" % i) for i in range(POISON)])
    log = tmp_path / "watch.log"
    with Input(bootstrap, inputs) as feed:
        feed.write(300)
        proc = start_kafka_eos(["run", "--watch", str(folder), *small_spark_conf()], bootstrap, tmp_path, log)
        try:
            _await_batches(log, proc, ["g-copy", "g-orders"], {"g-copy": 2, "g-orders": 1})
            scraped = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            assert re.search(r'kafka_eos_batches_committed_total\{pipeline="g-copy"\} [1-9]', scraped), scraped[:2000]
            keyed.write_text(files[2].read_text())                                     # added
            _await_batches(log, proc, ["g-keyed"], {"g-keyed": 1})
            doc = yaml.safe_load(copy.read_text())
            doc["source"]["max_offsets_per_trigger"] = 300
            copy.write_text(yaml.safe_dump(doc))                                       # changed
            _await_line(log, proc, f"{copy}: the changed pipeline replaces the stopped one")
            _delete_and_recreate(bootstrap, outs["keyed"], 2)                          # g-keyed fails
            _await_line(log, proc, "kafka-eos g-keyed: failed (5)")
            after = {n: _batches(log, n) for n in ("g-copy", "g-orders")}
            _await_batches(log, proc, ["g-copy", "g-orders"], {n: after[n] + 2 for n in after})
            orders.unlink()                                                            # removed
            _await_line(log, proc, "kafka-eos g-orders: stopped after batch")
            code = _terminated_after_more(log, proc, "g-copy")
        finally:
            kill_group(proc)
    text = log.read_text(errors="replace")
    summary = text[text.index("kafka-eos: the group ended:"):]
    assert code == 5 and "g-keyed: failed (5)" in summary, summary
    assert re.search(r"g-orders: stopped after batch \d+ .*\(exit 0\)", summary), summary
    assert re.search(r"g-copy: stopped after batch \d+ .*\(exit 143\)", summary), summary
    assert summary.count("kafka-eos g-copy:") == 2, summary  # the replaced query and its successor
    for path in files[:2]:
        done = kafka_eos(["run", str(path), "--once", *small_spark_conf()], bootstrap, tmp_path, timeout=600)
        assert done.code == 0, done.log(60)
    assert_exactly_once(check_exactly_once(bootstrap, outs["copy"], feed.next_id))
    assert_exactly_once(check_exactly_once(bootstrap, outs["orders"], feed.next_id, id_of=_order_id))
    assert_exactly_once(check_exactly_once(bootstrap, outs["dlq"], expected=range(POISON),
                                           id_of=lambda m: int(m.value().split(b"-")[1])))


HANG_S = 60


@pytest.mark.long
def test_one_pipelines_hung_broker_holds_back_that_pipeline_alone(bootstrap, tmp_path):
    """g-copy on the session's broker, g-far on a broker of its own, SIGSTOPped for 60 s while both run:
    g-copy commits batches throughout the hang (counted), g-far rides it out (no failure, batches
    after it); SIGTERM, each drained with --once: every id once in both outputs."""
    from integration_tests import network_faults as faults
    from integration_tests.providers import local_broker
    with local_broker() as far:
        near_in, near_out = create_topic(bootstrap, unique("near-in"), 2), create_topic(bootstrap, unique("near-out"), 2)
        near = _copy(tmp_path, "g-copy", near_in, near_out)
        remote, far_in, far_out = _far_copy(tmp_path, far.bootstrap)
        log = tmp_path / "hung.log"
        with Input(bootstrap, {"near": near_in}) as feed, Input(far.bootstrap, {"far": far_in}) as far_feed:
            feed.write(300), far_feed.write(300)
            proc = start_kafka_eos(["run", str(near), str(remote), *small_spark_conf()], bootstrap, tmp_path, log)
            try:
                _await_batches(log, proc, ["g-copy", "g-far"], {"g-copy": 2, "g-far": 2})
                far_feed.stop.set()  # its producer would block on the hung broker: no write in flight
                far_feed.thread.join(30)
                before = _batches(log, "g-copy")
                with faults.hung(far.cluster, far.cluster.nodes[0].node_id):
                    time.sleep(HANG_S)
                    during = _batches(log, "g-copy") - before
                code = _terminated_after_more(log, proc, "g-far")
            finally:
                kill_group(proc)
        text = log.read_text(errors="replace")
        assert during >= HANG_S // 5, f"g-copy committed {during} batches in the {HANG_S} s hang:\n{tail(log, 60)}"
        assert code == 143 and "g-far: failed" not in text, tail(log, 60)
        for path in (near, remote):
            done = kafka_eos(["run", str(path), "--once", *small_spark_conf()], bootstrap, tmp_path, timeout=600)
            assert done.code == 0, done.log(60)
        assert_exactly_once(check_exactly_once(bootstrap, near_out, feed.next_id))
        assert_exactly_once(check_exactly_once(far.bootstrap, far_out, far_feed.next_id))
