"""``${VAR}`` / ``${VAR:-default}`` interpolation of the string values of a loaded YAML tree.

Invariants:
- Only values are interpolated, never keys; ``$${`` stands for a literal ``${``.
- A variable that is unset and has no default is a violation naming the YAML path and the
  variable (all of them are collected); the value is then left as written.
- Values taken from variables whose names are secret (``kafka_eos.secrets.is_secret_env_var``:
  ``*PASSWORD*``, ``*SECRET*``, ``*TOKEN*``, ``*KEY*``, ``*AUTH*``, ...) are returned as secrets
  to redact, wherever they end up.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from kafka_eos.config.violations import Violation
from kafka_eos.secrets import is_secret_env_var

_TOKEN = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{")


def child_path(path: str, key: object) -> str:
    """``a.b`` for plain keys, ``a["x.y"]`` for keys with dots (client settings), ``a[0]`` for items."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    key = str(key)
    if "." in key or not key:
        return f'{path}["{key}"]'
    return f"{path}.{key}" if path else key


class Interpolator:
    """Walks a YAML tree, substituting variables from ``env``; collects violations and secrets."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.violations: list[Violation] = []
        self.secret_values: set[str] = set()

    def tree(self, node: Any, path: str = "") -> Any:
        if isinstance(node, dict):
            return {k: self.tree(v, child_path(path, k)) for k, v in node.items()}
        if isinstance(node, list):
            return [self.tree(v, child_path(path, i)) for i, v in enumerate(node)]
        if isinstance(node, str) and "${" in node:
            return self.text(node, path)
        return node

    def text(self, value: str, path: str) -> str:
        def substitute(match: re.Match) -> str:
            token, name, default = match.group(0), match.group(1), match.group(2)
            if token == "$${":
                return "${"
            if name is None:
                self.violations.append(Violation(
                    path, f"malformed variable reference in {value!r}",
                    "write ${NAME} or ${NAME:-default} (NAME: letters, digits, _), or $${ for a literal ${"))
                return token
            if name in self.env:
                result = self.env[name]
            elif default is not None:
                result = default
            else:
                self.violations.append(Violation(
                    path, f"environment variable {name} is not set (referenced as ${{{name}}})",
                    f"export {name}=..., or give a default: ${{{name}:-value}}"))
                return token
            if is_secret_env_var(name) and result:
                self.secret_values.add(result)
            return result
        return _TOKEN.sub(substitute, value)
