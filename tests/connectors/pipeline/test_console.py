"""The driver's console: quiet Spark settings by default, Spark's own with --verbose."""
from __future__ import annotations

from kafka_eos.connectors.cli import build_parser
from kafka_eos.connectors.pipeline import console
from tests.factories import load, valid


def test_quiet_by_default_uses_the_packaged_log4j_file_and_keeps_user_java_options():
    conf = console.console_conf(False, {console.JAVA_OPTIONS: "-Dx=1"})
    assert conf["spark.ui.showConsoleProgress"] == "false"
    option, user = conf[console.JAVA_OPTIONS].split(" ")
    assert option == f"-Dlog4j2.configurationFile={console.QUIET_LOG4J.as_uri()}" and user == "-Dx=1"
    assert console.QUIET_LOG4J.is_file() and "NativeCodeLoader" in console.QUIET_LOG4J.read_text()


def test_verbose_sets_nothing_of_the_log_configuration():
    assert console.JAVA_OPTIONS not in console.console_conf(True)


def test_local_masters_bind_to_loopback_unless_set(monkeypatch):
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    console.quiet_environment("spark://h:7077", False)
    assert "SPARK_LOCAL_IP" not in __import__("os").environ
    console.quiet_environment("local[*]", True)
    assert "SPARK_LOCAL_IP" not in __import__("os").environ
    console.quiet_environment("local[*]", False)
    assert __import__("os").environ["SPARK_LOCAL_IP"] == "127.0.0.1"
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.0.0.5")
    console.quiet_environment("local[2]", False)
    assert __import__("os").environ["SPARK_LOCAL_IP"] == "10.0.0.5"


def test_run_and_demo_take_verbose_and_stop_takes_a_pipeline():
    parser = build_parser()
    assert parser.parse_args(["run", "p.yaml", "--verbose"]).verbose
    assert not parser.parse_args(["run", "p.yaml"]).verbose
    assert parser.parse_args(["demo", "--verbose"]).verbose
    assert parser.parse_args(["stop", "p.yaml"]).pipeline == "p.yaml"


def test_known_keys_of_a_watermark_list_each_key_once(tmp_path):
    data = valid(tmp_path)
    data["transform"] = {"sql": "SELECT * FROM source",
                         "watermark": {"column": "t", "expression": "value.ts", "delay": "1 minute", "zz": 1}}
    _, found = load(tmp_path, data)
    (problem,) = [v for v in found if v.path == "transform.watermark.zz"]
    known = problem.fix.split("known keys here: ")[1].split(", ")
    assert sorted(known) == sorted(set(known)) and "delay" in known, problem.fix


def test_spark_submit_gets_the_quiet_log_file_before_the_users_options():
    env = console.submit_env(False, {"PATH": "/bin", "SPARK_SUBMIT_OPTS": "-Dmine=1"})
    assert env["PATH"] == "/bin"
    assert env["SPARK_SUBMIT_OPTS"] == f"-Dlog4j2.configurationFile={console.QUIET_LOG4J.as_uri()} -Dmine=1"
    assert console.submit_env(True, {"PATH": "/bin"}) == {"PATH": "/bin"}
