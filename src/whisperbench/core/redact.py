"""Secrets out of everything the harness stores or prints: the one place URLs are redacted, by rule rather than by
a list of names (a secret passed as ``code=``, ``jwt=`` or in the path is one too).

A URL keeps its scheme, host, port and path; its user information (``user:password@``) is dropped, the value of
every query parameter is replaced by ``REDACTED`` (the names stay: which parameters an endpoint was given), and so
is every path segment that looks like a key: a run of 20 or more letters and digits mixing both (``sk-…``, a
Slack or GitHub token, 32 hex digits), as no word, version or model name is.

>>> redact_url("http://user:SECRET456@127.0.0.1:9/v1?api-key=SECRET789&api-version=1&code=abc%3D%3D")
'http://127.0.0.1:9/v1?api-key=REDACTED&api-version=REDACTED&code=REDACTED'
>>> redact_url("https://hooks.example.com/services/T0AB12CD3/B0XY89/a1B2c3D4e5F6g7H8i9J0k1L2/whisper-large-v3")
'https://hooks.example.com/services/T0AB12CD3/B0XY89/REDACTED/whisper-large-v3'
>>> redact_text("openai-api base_url=https://u:p@h.example/v1?token=abc")
'openai-api base_url=https://h.example/v1?token=REDACTED'
>>> redact_text("at sqlite:///mlflow.db and sqlite:////tmp/mlflow.db")
'at sqlite:///mlflow.db and sqlite:////tmp/mlflow.db'

A query without its URL (``url: /?token=abc/api/…`` in a client library's error) is redacted too, every value:

>>> redact_text("Max retries exceeded with url: /?jwt=s3cret/api/2.0/x&experiment_name=w")
'Max retries exceeded with url: /?jwt=REDACTED&experiment_name=REDACTED'
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

REDACTED = "REDACTED"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>|]+")
#: a query parameter anywhere in a text (a query quoted without its URL): its value runs to the next ``&``, ``#``,
#: space or quote
_PARAM = re.compile(r"([?&;])([^=&?;\s\"'<>]*)=([^&#\s\"'<>]*)")
#: what makes a path segment a key: 20 or more letters and digits in a row, at least one of each
_KEY_RUN = re.compile(r"[A-Za-z0-9]{20,}")


def _looks_like_a_key(segment: str) -> bool:
    """Whether a path segment holds a key-like run (see the module).

    >>> [_looks_like_a_key(s) for s in ("v1", "whisper-large-v3-turbo", "ghp_a1B2c3D4e5F6g7H8i9J0", "x" * 30)]
    [False, False, True, False]
    """
    return any(any(c.isdigit() for c in run) and any(c.isalpha() for c in run) for run in _KEY_RUN.findall(segment))


def redact_url(url: str) -> str:
    """``url`` without user information, every query value and every key-like path segment replaced."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # not parseable as a URL: keep nothing that could be a secret
        return REDACTED
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if port:
        host = f"{host}:{port}"
    path = "/".join(REDACTED if _looks_like_a_key(part) else part for part in parts.path.split("/"))
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = "&".join(f"{quote(name, safe='-_.')}={REDACTED}" for name, _ in pairs)
    # built by hand: urlunsplit drops the "//" of an empty host (sqlite:///mlflow.db would lose a slash)
    return f"{parts.scheme}://{host}{path}" + (f"?{query}" if query else "")


def redact_text(text: str) -> str:
    """Every URL inside ``text`` redacted (labels, error messages, option values), and every query parameter's
    value outside one."""
    if "://" in text:
        text = _URL.sub(lambda match: redact_url(match.group(0)), text)
    if "=" not in text:
        return text
    return _PARAM.sub(lambda m: m.group(0) if m.group(3) == REDACTED else f"{m.group(1)}{m.group(2)}={REDACTED}", text)


def redact(value: Any) -> Any:
    """``value`` with every string in it (nested in dicts, lists and tuples too) redacted."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redact(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(item) for item in value)
    return value
