"""Secrets out of everything the harness stores or prints: the one place URLs are redacted.

A URL keeps its scheme, host, port and path; user information (``user:password@``) is dropped and the
value of every query parameter whose name looks secret (key, token, secret, password, signature, auth,
credential, session ...) is replaced by ``REDACTED``. Other query parameters stay: they can matter to
what an endpoint does (``api-version=2024-06-01``).

>>> redact_url("http://user:SECRET456@127.0.0.1:9/v1?api-key=SECRET789&api-version=1")
'http://127.0.0.1:9/v1?api-key=REDACTED&api-version=1'
>>> redact_text("openai-api base_url=https://u:p@h.example/v1?token=abc")
'openai-api base_url=https://h.example/v1?token=REDACTED'
>>> redact_text("at sqlite:///mlflow.db and sqlite:////tmp/mlflow.db")
'at sqlite:///mlflow.db and sqlite:////tmp/mlflow.db'

A query without its URL (``url: /?token=abc/api/…`` in a client library's error) is redacted too:

>>> redact_text("Max retries exceeded with url: /?token=s3cret/api/2.0/x&experiment_name=w")
'Max retries exceeded with url: /?token=REDACTED&experiment_name=w'
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

REDACTED = "REDACTED"
#: query parameter names treated as secret (matched as a part of the name, any case)
_SECRET_NAME = re.compile(r"key|token|secret|passw|pwd|sig|auth|credential|session|cookie|bearer", re.I)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>|]+")
#: a secret-looking parameter anywhere in a text (a query quoted without its URL): its value runs to the next
#: ``&``, ``#``, space or quote
_PARAM = re.compile(r"([?&;])([^=&?;\s\"'<>]*)=([^&#\s\"'<>]*)")


def redact_url(url: str) -> str:
    """``url`` without user information and with secret-looking query values replaced."""
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
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = "&".join(
        f"{quote(name, safe='-_.')}={REDACTED if _SECRET_NAME.search(name) else quote(value, safe='-_.')}"
        for name, value in pairs
    )
    # built by hand: urlunsplit drops the "//" of an empty host (sqlite:///mlflow.db would lose a slash)
    return f"{parts.scheme}://{host}{parts.path}" + (f"?{query}" if query else "")


def redact_text(text: str) -> str:
    """Every URL inside ``text`` redacted (labels, error messages, option values), and every secret-looking query
    parameter outside one."""
    if "://" in text:
        text = _URL.sub(lambda match: redact_url(match.group(0)), text)
    if "=" not in text:
        return text
    return _PARAM.sub(
        lambda m: f"{m.group(1)}{m.group(2)}={REDACTED}" if _SECRET_NAME.search(m.group(2)) else m.group(0), text
    )


def redact(value: Any) -> Any:
    """``value`` with every string in it (nested in dicts, lists and tuples too) redacted."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redact(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(item) for item in value)
    return value
