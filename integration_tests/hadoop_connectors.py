"""Hadoop's file-system connectors from Maven for the store tests, matched to the running
pyspark's Hadoop (its ``hadoop-client-api`` jar names the version): Spark keeps its checkpoint
through them, as it does on the platforms. Fetched once into ``build/hadoop-connectors/<kind>-<version>``."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POMS = {"s3a": ROOT / "integration_tests" / "jobs" / "hadoop-s3a.pom.xml",
        "minicluster": ROOT / "integration_tests" / "jobs" / "hadoop-minicluster.pom.xml",
        "gcs": ROOT / "integration_tests" / "jobs" / "hadoop-gcs.pom.xml"}


def hadoop_version() -> str:
    import pyspark
    jars = Path(pyspark.__file__).parent / "jars"
    for jar in jars.glob("hadoop-client-api-*.jar"):
        found = re.match(r"hadoop-client-api-(.+)\.jar$", jar.name)
        if found:
            return found[1]
    raise AssertionError(f"no hadoop-client-api jar in {jars}: which Hadoop does this pyspark run?")


def connector_jars(kind: str) -> list[str]:
    """The jars of connector ``kind`` for this pyspark's Hadoop, downloaded on first use."""
    version = hadoop_version()
    target = ROOT / "build" / "hadoop-connectors" / f"{kind}-{version}"
    if not (target / ".complete").exists():
        mvn = shutil.which("mvn")
        assert mvn, "Maven (mvn) fetches Hadoop's connectors: apt-get install maven (.ci/run installs it)"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        done = subprocess.run([mvn, "-B", "-q", "-f", str(POMS[kind]),
                               "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
                               f"-DoutputDirectory={target}", "-DincludeScope=runtime", f"-Dhadoop.version={version}"],
                              capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, f"Maven could not fetch {kind} for Hadoop {version}:\n{done.stdout[-3000:]}"
        (target / ".complete").write_text(version)
    return sorted(str(jar) for jar in target.glob("*.jar"))
