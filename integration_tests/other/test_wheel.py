"""The built distribution as users install it: sdist, then a wheel built from that sdist, installed
into a fresh venv (no editable install, no checkout on ``sys.path``), driven from another directory.

The venv gets kafka-eos from the wheel only; its third-party packages (pyspark, pyarrow, …) are
this test process's, through a plain ``.pth`` line naming their site-packages folders (a plain
line adds a folder without processing the ``.pth`` files in it, so the editable install's finder
is not installed there). Every test asserts the imported kafka_eos is the wheel's.
"""
from __future__ import annotations

import os
import site
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = {"kafka_eos": "kafka_eos", "txn": "kafka_eos/txn", "offsets": "kafka_eos/offsets",
                "serde": "kafka_eos/serde", "config": "kafka_eos/config", "connectors": "kafka_eos/connectors"}
ORDER_TOPICS = {"orders": 3, "orders-priced": 3, "orders-dlq": 1}


def _repo_package_files() -> set[str]:
    """What the wheel must hold: each package folder's tracked files (sources and data) under
    their installed names; docs (``*.md``) stay in the repository."""
    listed = subprocess.run(["git", "ls-files", *PACKAGE_DIRS], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.split()
    return {f"{PACKAGE_DIRS[path.split('/', 1)[0]]}/{path.split('/', 1)[1]}" for path in listed
            if not path.endswith(".md")}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """``python -m build``: the sdist, then the wheel built from the unpacked sdist."""
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
                           capture_output=True, text=True, timeout=600, cwd=out)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


def _dependency_dirs() -> list[str]:
    """The site-packages folders this process imports its third-party packages from."""
    dirs = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    return list(dict.fromkeys([*site.getsitepackages(), *dirs]))


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed (``--no-deps``) and this process's dependencies."""
    home = tmp_path_factory.mktemp("wheel-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home / "venv")], check=True, timeout=120)
    python = home / "venv" / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    wheel = next(dist.glob("kafka_eos-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
                   check=True, timeout=300, cwd=home)
    # after the install: pip would otherwise see the editable kafka-eos there as already installed
    (Path(purelib) / "kafka_eos_test_deps.pth").write_text("\n".join(_dependency_dirs()) + "\n")
    return home / "venv"


def _env(venv: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    python = str(venv / "bin" / "python")
    return {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "VIRTUAL_ENV": str(venv),
            "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python, **extra}


def _kafka_eos(venv: Path, args: list[str], cwd: Path, timeout: float = 500, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "kafka-eos"), *args], cwd=cwd, env=_env(venv, **env),
                          capture_output=True, text=True, timeout=timeout)


def _tail(proc: subprocess.CompletedProcess, lines: int = 40) -> str:
    return "\n".join([line for line in (proc.stdout + proc.stderr).splitlines() if "\tat " not in line][-lines:])


def test_sdist_and_wheel_hold_every_package_file(dist: Path):
    wheel = next(dist.glob("kafka_eos-*.whl"))
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    missing = _repo_package_files() - in_wheel
    assert not missing, f"the wheel (built from the sdist) lacks {sorted(missing)}"
    for data in ("kafka_eos/config/pipelines/orders-json.yaml", "kafka_eos/config/schemas/order.avsc",
                 "kafka_eos/connectors/dev/pom.xml", "kafka_eos/connectors/pipeline/log4j2-quiet.properties"):
        assert data in in_wheel
    sdist = next(dist.glob("kafka_eos-*.tar.gz"))
    names = {name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "config/pipelines/orders-json.yaml", "connectors/dev/pom.xml"} <= names


def test_wheel_is_what_the_venv_imports(venv: Path, tmp_path: Path):
    probe = ("import sys, kafka_eos, kafka_eos.connectors.cli as cli; print(kafka_eos.__file__); "
             "print(cli.__file__); print(any(p.rstrip('/') == sys.argv[1] for p in sys.path))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", probe, str(REPO)], cwd=tmp_path, env=_env(venv),
                         capture_output=True, text=True, check=True).stdout.split()
    assert all(Path(p).is_relative_to(venv) and "site-packages" in p for p in out[:2]), out
    assert out[2] == "False", "the checkout is on the venv's sys.path"


def test_wheel_validate_and_run_through_spark_submit(venv: Path, bootstrap: str, tmp_path: Path):
    """``validate`` (live) and ``run --master local[2] --once`` (spark-submit, kafka-eos shipped as a
    zip of the wheel's installed files) on the wheel's own example, exactly once."""
    example = next((venv / "lib").glob("python*/site-packages/kafka_eos/config/pipelines/orders-json.yaml"))
    env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(tmp_path / "checkpoints")}
    checked = _kafka_eos(venv, ["validate", str(example)], tmp_path, **env)
    assert checked.returncode == 0, _tail(checked)
    create_topics(bootstrap, ORDER_TOPICS)
    orders = produce_orders(bootstrap, "orders", 3000, poison=0, aborted_every=1000, aborted_size=20)
    run = _kafka_eos(venv, ["run", str(example), "--once", "--master", "local[2]",
                            "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.ui.enabled=false"],
                     tmp_path, **env)
    assert run.returncode == 0, _tail(run)
    assert "kafka-eos orders-json batch " in run.stdout, _tail(run)
    assert order_report(bootstrap, {orders.run: 3000}) == \
        {"out": 3000, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}


@pytest.mark.chaos  # its own broker JVM and Spark: about a minute more than the cases above
def test_wheel_demo(venv: Path, tmp_path: Path):
    demo = _kafka_eos(venv, ["demo", "--records", "2000", "--poison", "2"], tmp_path, timeout=600)
    assert demo.returncode == 0, _tail(demo)
    assert "demo: 2000 in, 2000 out, 0 duplicates, 0 missing" in demo.stdout, _tail(demo)
