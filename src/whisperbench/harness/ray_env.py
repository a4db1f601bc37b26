"""The environment a Ray run's workers get: ``--runtime-env`` (Ray's runtime_env as JSON, or a JSON/YAML file)
and ``--ray-env NAME`` (the driver's value of NAME forwarded).

``--ray-env`` values never leave memory: each actor gets them as it starts and sets them before it builds the
adapter (not through the runtime_env, whose contents Ray's runtime_env agent writes to its session logs on
every node, so secrets belong in ``--ray-env``). run.json records the runtime_env with its ``env_vars`` reduced to
their names, and
the names of the forwarded variables (:func:`describe`). Ray itself is not imported here.

>>> load_runtime_env('{"env_vars": {"A": "1"}, "pip": ["x"]}')
{'env_vars': {'A': '1'}, 'pip': ['x']}
>>> describe({"env_vars": {"TOKEN": "s3cret"}, "pip": ["x"]}, ("OPENAI_API_KEY",))
{'runtime_env': {'env_vars': ['TOKEN'], 'pip': ['x']}, 'forwarded_env': ['OPENAI_API_KEY']}
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.redact import redact
from ..errors import OptionError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def load_runtime_env(value: str | None) -> dict[str, Any] | None:
    """``--runtime-env``: JSON text (``{...}``) or the path of a .json/.yaml/.yml file; a mapping, whose
    ``env_vars`` (if any) maps names to strings. None for None. One-line OptionError otherwise (never quoting
    the content, which may hold secrets)."""
    if value is None:
        return None
    text, source, yaml_file = value, "the JSON given", False
    if not value.lstrip().startswith("{"):
        path = Path(value).expanduser()
        if not path.is_file():
            raise OptionError(f"--runtime-env {value}: neither JSON ({{...}}) nor an existing file")
        text, source, yaml_file = path.read_text(encoding="utf-8"), str(path), path.suffix.lower() in (".yaml", ".yml")
    try:
        if yaml_file:
            import yaml

            env = yaml.safe_load(text)
        else:
            env = json.loads(text)
    except Exception as exc:  # json.JSONDecodeError, yaml.YAMLError: the message names only a position
        raise OptionError(f"--runtime-env: {source} cannot be read ({type(exc).__name__})") from None
    if not isinstance(env, dict):
        raise OptionError(f"--runtime-env: {source} is not a mapping (Ray's runtime_env is a dict)")
    env_vars = env.get("env_vars", {})
    if not isinstance(env_vars, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env_vars.items()
    ):
        raise OptionError(f"--runtime-env: env_vars in {source} must map names to strings")
    return env


def check_names(names: Iterable[str]) -> tuple[str, ...]:
    """``--ray-env`` names, checked to be variable names (sorted, each once)."""
    names = tuple(sorted(set(names)))
    bad = [n for n in names if not _NAME.fullmatch(n)]
    if bad:
        raise OptionError(f"--ray-env: not environment variable names: {', '.join(bad)} (give NAME, not NAME=VALUE)")
    return names


def forwarded(names: Iterable[str], environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The driver's values of ``names``; a name this process does not have is refused (named, no value shown)."""
    names = check_names(names)
    missing = [n for n in names if n not in environ]
    if missing:
        raise OptionError(f"--ray-env: not set in this environment: {', '.join(missing)}")
    return {n: environ[n] for n in names}


def worker_runtime_env(runtime_env: dict[str, Any] | None, base_vars: Mapping[str, str]) -> dict[str, Any]:
    """Each actor's runtime_env: ``runtime_env`` with ``base_vars`` (the harness's own, e.g. OMP_NUM_THREADS)
    under its own ``env_vars`` (which win). The ``--ray-env`` values are not in it: Ray's runtime_env agent
    writes a runtime_env's contents to its session logs, so they reach each actor as it starts (in memory)."""
    env = dict(runtime_env or {})
    env["env_vars"] = {**base_vars, **(env.get("env_vars") or {})}
    return env


def describe(runtime_env: dict[str, Any] | None, names: Iterable[str]) -> dict[str, Any]:
    """What run.json records: the runtime_env with ``env_vars`` reduced to their names (URLs redacted), and
    the names of the forwarded variables: never a value."""
    record: dict[str, Any] = {}
    if runtime_env:
        shown = dict(runtime_env)
        if "env_vars" in shown:
            shown["env_vars"] = sorted(shown["env_vars"])
        record["runtime_env"] = redact(shown)
    names = check_names(names)
    if names:
        record["forwarded_env"] = list(names)
    return record
