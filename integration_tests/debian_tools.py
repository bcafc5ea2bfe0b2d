"""Command-line tools some integration tests need, installed from Debian packages when missing
(root with apt-get only; a fresh machine's package lists are updated once if the install fails)."""
from __future__ import annotations

import os
import shutil
import subprocess


def ensure(packages: dict[str, str]) -> dict[str, str | None]:
    """tool -> its path (None when it is still missing), after installing the packages
    (``packages``: tool -> Debian package) of the tools not on PATH."""
    missing = sorted({package for tool, package in packages.items() if not shutil.which(tool)})
    if missing and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
        if subprocess.run(install, env=env, capture_output=True, check=False).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, check=False)
            subprocess.run(install, env=env, capture_output=True, check=False)
    return {tool: shutil.which(tool) for tool in packages}
