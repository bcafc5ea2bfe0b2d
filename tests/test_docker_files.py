"""Static checks of docker/: every file the Dockerfile copies exists, the compose services refer
to each other consistently, the job runs an example pipeline the image contains, and Prometheus
scrapes the job's metrics endpoint. (No Docker engine runs here; nothing is built.)"""
from __future__ import annotations

import ast
import base64
import re
import shlex
import tomllib
from pathlib import Path, PurePosixPath

import yaml

from kafka_eos.config.loader import load_file
from kafka_eos.config.model import DEFAULT_METRICS_PORT

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"


def with_defaults(text: str) -> str:
    """The compose file as compose reads it with none of its variables set: ``${NAME:-default}``
    -> default, ``$$`` -> ``$``."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", text).replace("$$", "$")


COMPOSE = yaml.safe_load(with_defaults((DOCKER / "compose.yaml").read_text()))
SERVICES = COMPOSE["services"]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", "\n".join(l for l in path.read_text().splitlines() if not l.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in text.splitlines() if line.strip()]


def job_script() -> str:
    """The job's shell command: creates the topics, then execs ``kafka-eos run``."""
    (script,) = SERVICES["job"]["command"]
    assert SERVICES["job"]["entrypoint"][-2:] == ["/bin/sh", "-c"]
    return script


def job_run_args() -> list[str]:
    """The arguments the job execs once the topics exist."""
    (line,) = [text for text in job_script().splitlines() if "exec kafka-eos run" in text]
    return shlex.split(line.split("exec ", 1)[1])


def job_topics() -> dict[str, int]:
    created = re.search(r'create_topics\("kafka:9092", (\{[^}]*\})\)', job_script())
    assert created, "the job creates its topics on the internal listener"
    return ast.literal_eval(created.group(1))


def job_services() -> dict[str, dict]:
    return {name: s for name, s in SERVICES.items() if s.get("image") == "kafka-eos-job:latest"}


def build_context() -> tuple[Path, Path]:
    builds = {(s["build"]["context"], s["build"]["dockerfile"]) for s in job_services().values()}
    assert len(builds) == 1, f"every job-image service builds the same image: {builds}"
    context, dockerfile = builds.pop()
    return (DOCKER / context).resolve(), (DOCKER / context / dockerfile).resolve()


def image_files() -> dict[str, Path]:
    """Container path -> repository path of every file the Dockerfile copies."""
    context, dockerfile = build_context()
    workdir, files = PurePosixPath("/"), {}
    for op, args in instructions(dockerfile):
        if op == "WORKDIR":
            workdir = workdir / args.strip()
        if op != "COPY":
            continue
        *sources, dest = [a for a in shlex.split(args) if not a.startswith("--")]
        target = workdir / dest
        for source in sources:
            origin = context / source
            assert origin.exists(), f"COPY {source}: {origin} does not exist"
            inside = [origin] if origin.is_file() else [p for p in origin.rglob("*") if p.is_file()
                                                        and "__pycache__" not in p.parts]  # Python's, not ours
            for file in inside:
                relative = file.relative_to(origin) if origin.is_dir() else None
                if relative is not None:
                    files[str(target / relative)] = file
                else:
                    files[str(target / file.name if dest.endswith("/") else target)] = file
    return files


def test_dockerfile_copies_existing_sources_and_every_package():
    files = image_files()
    copied_roots = {Path(p).relative_to(ROOT).parts[0] for p in files.values()}
    packages = set(PYPROJECT["tool"]["setuptools"]["package-dir"].values())
    assert packages <= copied_roots, f"pip install . needs every package: missing {packages - copied_roots}"
    assert {"pyproject.toml", PYPROJECT["project"]["readme"]} <= copied_roots


def test_dockerfile_java_python_and_spark_home_agree():
    ops = instructions(build_context()[1])
    base = next(args for op, args in ops if op == "ARG" and args.startswith("BASE="))  # FROM ${BASE}
    python = re.search(r"python:(\d+\.\d+)", base).group(1)
    env = " ".join(args for op, args in ops if op == "ENV")
    assert f"/opt/venv/lib/python{python}/site-packages/pyspark" in env
    assert any(op == "RUN" and "openjdk-17-jre" in args for op, args in ops)
    assert any(op == "RUN" and "pip install" in args and " ." in args for op, args in ops)
    minimum = PYPROJECT["project"]["requires-python"].lstrip(">=")
    assert tuple(map(int, python.split("."))) >= tuple(map(int, minimum.split(".")))


def test_dockerignore_keeps_what_is_copied():
    ignored = [l.strip() for l in (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
               if l.strip() and not l.startswith("#")]
    for container_path, file in image_files().items():
        relative = file.relative_to(ROOT).as_posix()
        for pattern in ignored:
            assert not PurePosixPath(relative).match(pattern) and not relative.startswith(pattern + "/"), \
                f"{relative} is copied but ignored by {pattern}"


def test_services_refer_to_existing_services_and_volumes():
    declared_volumes = set(COMPOSE.get("volumes") or {})
    for name, service in SERVICES.items():
        depends = service.get("depends_on") or []
        for other in (depends if isinstance(depends, list) else depends.keys()):
            assert other in SERVICES, f"{name} depends on unknown service {other}"
        for volume in service.get("volumes") or []:
            source = volume.split(":")[0]
            if source.startswith((".", "/")):
                assert (DOCKER / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in declared_volumes, f"{name} uses undeclared volume {source}"


def test_kafka_is_kraft_and_listeners_match_the_clients():
    kafka = SERVICES["kafka"]
    env = kafka["environment"]
    assert kafka["image"] == "apache/kafka:4.2.1" and "controller" in env["KAFKA_PROCESS_ROLES"]
    assert advertised_external_port(env) == kafka["ports"][0].split(":")[0] == "9094"
    assert len(base64.urlsafe_b64decode(env["CLUSTER_ID"] + "==")) == 16
    advertised = dict(item.split("://") for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    internal = advertised[env["KAFKA_INTER_BROKER_LISTENER_NAME"]]
    assert SERVICES["job"]["environment"]["KAFKA_BOOTSTRAP_SERVERS"] == internal
    assert job_topics() and internal == "kafka:9092"
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == 1


def advertised_external_port(env: dict) -> str:
    """The host port the EXTERNAL listener advertises: the one the kafka service publishes."""
    raw = (DOCKER / "compose.yaml").read_text()
    assert "EXTERNAL://localhost:${KAFKA_PORT:-9094}" in raw and '"${KAFKA_PORT:-9094}:9094"' in raw
    return env["KAFKA_ADVERTISED_LISTENERS"].split("EXTERNAL://localhost:")[1].split(",")[0]


def test_images_are_variables_defaulting_to_registry_images():
    raw = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    images = {name: s.get("image") for name, s in raw["services"].items()}
    assert images["kafka"] == "${KAFKA_IMAGE:-apache/kafka:4.2.1}"
    assert images["prometheus"] == "${PROMETHEUS_IMAGE:-prom/prometheus:v3.5.0}"
    assert {images[n] for n in job_services()} == {"${JOB_IMAGE:-kafka-eos-job:latest}"}


def test_spark_master_url_matches_the_master_service():
    master = SERVICES["spark-master"]["command"]
    host, port = master[master.index("--host") + 1], master[master.index("--port") + 1]
    url = f"spark://{host}:{port}"
    assert host in SERVICES and SERVICES[host]["hostname"] == host
    assert url in SERVICES["spark-worker"]["command"] and url == job_run_args()[job_run_args().index("--master") + 1]
    assert set(job_services()) == {"spark-master", "spark-worker", "job", "monitor"}


def mounted_file(service: dict, container_path: str) -> Path:
    """The repository file a service mounts at ``container_path`` (asserted to exist)."""
    sources = [v.split(":")[0] for v in service.get("volumes") or [] if v.split(":")[1] == container_path]
    assert len(sources) == 1 and sources[0].startswith("."), f"{container_path} is not mounted from docker/"
    path = (DOCKER / sources[0]).resolve()
    assert path.is_file(), f"{sources[0]} is mounted but does not exist"
    return path


def test_prometheus_scrapes_the_jobs_metrics_on_the_documented_default_port():
    prometheus, job = SERVICES["prometheus"], SERVICES["job"]
    flags = [a.split("=", 1) for a in prometheus["command"] if a.startswith("--config.file=")]
    config = yaml.safe_load(mounted_file(prometheus, flags[0][1]).read_text())
    scrapes = {c["job_name"]: c for c in config["scrape_configs"]}
    assert set(scrapes) == {"kafka-eos", "kafka-eos-monitor"}  # the monitor's: tests/test_ops_files.py
    scrape = scrapes["kafka-eos"]
    assert scrape.get("metrics_path", "/metrics") == "/metrics"
    (target,) = [t for group in scrape["static_configs"] for t in group["targets"]]
    host, port = target.rsplit(":", 1)
    assert int(port) == DEFAULT_METRICS_PORT == 9464
    command = job_run_args()
    assert command[command.index("--metrics-port") + 1] == port, "the job serves where Prometheus scrapes"
    # the job's driver listens on its container's interfaces; Prometheus scrapes it by service name on the
    # compose network, not from inside the job's network namespace (a restarted job gets a new one)
    assert command[command.index("--metrics-host") + 1] == "0.0.0.0" and host == "job"
    assert "network_mode" not in prometheus and "job" in prometheus["depends_on"]
    assert not job.get("ports"), "the driver's endpoint is not published on the host"
    published = {p.split(":")[-1] for p in prometheus.get("ports") or []}
    assert "9090" in published, "Prometheus publishes its own UI"
    readme = (ROOT / "config" / "README.md").read_text()
    assert re.search(rf"\| `metrics.port` \| `{DEFAULT_METRICS_PORT}` \|", readme), "the default is documented"


def test_job_runs_an_example_pipeline_shipped_in_the_image(tmp_path):
    job = SERVICES["job"]
    command = job_run_args()
    assert command[0] in PYPROJECT["project"]["scripts"], "the job runs the kafka-eos console script"
    container_pipeline = next(a for a in command if a.endswith(".yaml"))
    files = image_files()
    assert container_pipeline in files, f"{container_pipeline} is not copied into the image"
    env = {**job["environment"], "KAFKA_EOS_CHECKPOINTS": str(tmp_path)}
    cfg, problems = load_file(files[container_pipeline], env=env)
    assert problems == [] and cfg.source.kafka.bootstrap_servers == "kafka:9092"
    assert {*cfg.source.topics, cfg.sink.topic, cfg.errors.dlq_topic} <= set(job_topics())
    checkpoint_mount = {v.split(":")[1] for v in job["volumes"]}
    assert job["environment"]["KAFKA_EOS_CHECKPOINTS"] in checkpoint_mount
    assert checkpoint_mount <= {v.split(":")[1] for v in SERVICES["spark-worker"]["volumes"]}


def test_readme_names_only_existing_repository_files():
    text = (DOCKER / "README.md").read_text()
    mentioned = set(re.findall(r"`((?:docker|config|tests)/[\w./-]+)`", text))
    assert {"docker/Dockerfile", "docker/compose.yaml", "docker/prometheus.yml",
            "config/pipelines/orders-json.yaml"} <= mentioned
    for path in mentioned:
        assert (ROOT / path).exists(), f"docker/README.md names {path}, which does not exist"
