"""``make matrix``: the suite's version matrix, each pyspark in a virtual environment of its own.

For each version (default ``VERSIONS``: the newest patch of each 4.x line before the one ``make test``
runs) under ``build/matrix/venv-<version>``:
1. the environment: kafka-eos editable with its test and bench extras, and ``pyspark[connect]==<version>``
   (installed once; a stamp names what was installed);
2. the unit suite (``tests``);
3. the integration cells marked ``matrix`` (``pytest -m matrix integration_tests``, on 3 workers a module each
   as make test's: their processes mostly wait on brokers and Spark's start; the crash-matrix
   cell, a windowed pipeline with late records, the DLQ pipeline with ``run --once``, a backlog under
   ``max_offsets_per_trigger`` across a driver kill, ``verify --recompute``, ``kafka-eos demo``, a windowed
   count on RocksDB and a refused backend change),
   on real brokers and real Spark;
then one line per version, and ``build/matrix/results.json`` (passed, failed, seconds per step).
Exits non-zero if any step of any version failed.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[1]
MATRIX = ROOT / "build" / "matrix"
VERSIONS = ("4.0.5", "4.1.4", "4.2.1")
COUNTS = re.compile(r"(\d+) (passed|failed|error|errors|skipped)")


def venv(version: str) -> Path:
    """Step 1: the environment of ``version``, created and installed once."""
    home = MATRIX / f"venv-{version}"
    stamp = home / ".installed"
    wanted = f"pyspark=={version}\n{(ROOT / 'pyproject.toml').read_text()}"
    if stamp.exists() and stamp.read_text() == wanted:
        return home
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
    pip = [str(home / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run(pip + ["--upgrade", "pip"], check=True)
    subprocess.run(pip + ["-e", f"{ROOT}[test,bench]", f"pyspark[connect]=={version}"], check=True, cwd=ROOT)
    stamp.write_text(wanted)
    return home


def pytest(home: Path, args: list[str], name: str) -> dict:
    """Steps 2 and 3: run pytest in ``home``; its closing counts and seconds."""
    started = time.monotonic()
    junit = ROOT / "build" / "test-results" / f"{name}.xml"
    done = subprocess.run([str(home / "bin" / "pytest"), "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                           f"--junitxml={junit}", *args], cwd=ROOT, capture_output=True, text=True)
    print(done.stdout[-3000:], done.stderr[-2000:], sep="\n", flush=True)
    closing = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    counts = {kind.rstrip("s") if kind != "passed" else kind: int(n) for n, kind in COUNTS.findall(closing)}
    return {"exit": done.returncode, "seconds": round(time.monotonic() - started), **counts,
            "figures": figures(junit)}


def figures(junit: Path) -> dict[str, dict[str, str]]:
    """Per test, the figures it recorded (``record_property``: ids, batches, kills)."""
    if not junit.exists():
        return {}
    found: dict[str, dict[str, str]] = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        props = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        if props:
            found[case.get("name", "")] = props
    return found


def run(version: str) -> dict:
    home = venv(version)
    return {"unit": pytest(home, ["-n", "2", "tests"], f"matrix-{version}-unit"),
            "matrix": pytest(home, ["-n", "3", "--dist", "loadfile", "-m", "matrix", "integration_tests"],
                             f"matrix-{version}")}


def main(versions: list[str]) -> int:
    results = {}
    for version in versions:
        print(f"== pyspark {version}", flush=True)
        results[version] = run(version)
    MATRIX.mkdir(parents=True, exist_ok=True)
    (MATRIX / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    for version, steps in results.items():
        print(f"pyspark {version}: " + "; ".join(
            f"{step} {r.get('passed', 0)} passed, {r.get('failed', 0)} failed, {r.get('error', 0)} errors "
            f"({r['seconds']} s)" for step, r in steps.items()))
        for test, props in steps["matrix"]["figures"].items():
            print(f"pyspark {version}: {test}: " + ", ".join(f"{k} {v}" for k, v in props.items()))
    passed = sum(r.get("passed", 0) for steps in results.values() for r in steps.values())
    failed = sum(r.get("failed", 0) + r.get("error", 0) for steps in results.values() for r in steps.values())
    print(f"matrix: {passed} passed, {failed} failed")
    return 1 if any(r["exit"] != 0 for steps in results.values() for r in steps.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(VERSIONS)))
