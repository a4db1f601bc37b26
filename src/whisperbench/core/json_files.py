"""Files written whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    import orjson as _orjson
except ImportError:  # a dependency; without it (a broken install) json reads every line, only slower
    _orjson = None  # type: ignore[assignment]


def parse_json(text: bytes | str) -> Any:
    """One JSON document (a line of JSON Lines) as Python's ``json.loads`` reads it.

    orjson parses it where it can (a fourth of the time: it counts at a million lines); what orjson refuses and
    Python's json takes (``NaN``, ``Infinity``, ``1e400``, integers past 64 bits, lone surrogates, all of which
    ``json.dumps`` can write) is read by json, and so is a line with a number of 19 digits or more (orjson reads
    an integer outside 64 bits as a float); a malformed line raises json's ``JSONDecodeError``.

    >>> parse_json(b'{"a": [1, 2.5, null], "a": "last"}'), parse_json("[NaN]")
    ({'a': 'last'}, [nan])
    """
    return _fast_json(text) if not _long_number(text) else _json_loads(text)


def _json_loads(text: bytes | str) -> Any:
    """Python's ``json.loads``; a document nested too deeply for it (100,000 ``[``) is a ``JSONDecodeError`` like
    any malformed one, never a ``RecursionError``.

    >>> try:
    ...     _json_loads("[" * 100_000)
    ... except json.JSONDecodeError as exc:
    ...     print(exc.msg)
    nested too deeply to read (over the interpreter's recursion limit)
    """
    try:
        return json.loads(text)
    except RecursionError:
        shown = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise json.JSONDecodeError(
            "nested too deeply to read (over the interpreter's recursion limit)", shown, 0
        ) from None


def json_lines_parser(whole: bytes | str) -> Callable[[bytes | str], Any]:
    r"""A :func:`parse_json` for the lines of ``whole`` (a JSON Lines file's text), the file looked at once for
    19 digits in a row instead of each line (a tenth of a line's parse, which counts at a million lines).

    >>> parse = json_lines_parser(b'{"n": 1}\n{"n": 2}\n'); parse(b'{"n": 2}')
    {'n': 2}
    """
    return parse_json if _long_number(whole) else _fast_json


def _fast_json(text: bytes | str) -> Any:
    """orjson's parse, else json's (a text with 19 digits in a row goes to :func:`parse_json`, not here)."""
    if _orjson is not None:
        try:
            return _orjson.loads(text)
        except _orjson.JSONDecodeError:
            pass
    return _json_loads(text)


#: every ASCII digit as "0", everything else as a space (for :func:`_long_number`: a translation and a substring
#: search take a tenth of a regular expression's time)
_DIGITS_BYTES = bytes(48 if 48 <= code < 58 else 32 for code in range(256))
_DIGITS = str.maketrans({chr(code): "0" if 48 <= code < 58 else " " for code in range(128)})


def _long_number(text: bytes | str) -> bool:
    """Whether ``text`` holds 19 digits in a row: a number orjson might read otherwise than json (an integer
    outside 64 bits becomes a float), or a long float or string, which json reads the same, only slower.

    >>> _long_number(b'{"n": -9223372036854775809}'), _long_number('{"n": 922337203685477580}')
    (True, False)
    """
    if isinstance(text, bytes):
        return b"0000000000000000000" in text.translate(_DIGITS_BYTES)
    return "0000000000000000000" in text.translate(_DIGITS)


#: ``json.dumps(data, ensure_ascii=False, default=str)``, its encoder built once; circular references are not
#: checked (a line is a tree of plain values: a cycle would end in RecursionError instead of ValueError), which
#: spares a check of every container of every line
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str, check_circular=False)


def json_line(data: Any) -> bytes:
    r"""``data`` as one line of JSON Lines, UTF-8, its newline included: ``json.dumps(data, ensure_ascii=False,
    default=str)`` (json's own spacing, which people grep for: orjson would write it a few µs faster, without it).

    >>> json_line({"a": [1, 0.5, None], "b": "é"})
    b'{"a": [1, 0.5, null], "b": "\xc3\xa9"}\n'
    """
    return (_ENCODER.encode(data) + "\n").encode("utf-8")


def cache_dir() -> Path:
    """Where whisperbench keeps its caches (converted weights, file digests, audio facts): ``$WHISPERBENCH_CACHE``,
    else ``$XDG_CACHE_HOME/whisperbench``, else ``~/.cache/whisperbench``."""
    explicit = os.environ.get("WHISPERBENCH_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "whisperbench"


def write_json_atomic(path: Path, data: Any, indent: int | None = 2) -> None:
    """Write JSON so that a reader sees the old file or the new one, never half of one (temp file, fsync, rename).

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> write_json_atomic(target, {"ok": True}); json.loads(target.read_text())
    {'ok': True}
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=indent, ensure_ascii=False, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


#: the longest file name stem :func:`safe_file_name` makes (file systems allow 255 bytes with the extension)
MAX_STEM = 120


def safe_file_name(text: str) -> str:
    """A file name stem for an example id: kept as it is when it is plain (letters, digits, ``-_.@~``) and short,
    else made plain and cut to :data:`MAX_STEM` characters with a digest of the id after it (two ids never share a
    file; a NUL, a slash or 300 characters never reach the file system).

    >>> safe_file_name("LJ001-0003"), safe_file_name("a/b")
    ('LJ001-0003', 'a_b-3ec69c85')
    >>> len(safe_file_name("x" * 300)) <= MAX_STEM + 9
    True
    """
    import hashlib

    plain = "".join(c if c.isalnum() or c in "-_.@~" else "_" for c in text).strip(".") or "_"
    if plain == text and len(plain) <= MAX_STEM:
        return plain
    return f"{plain[:MAX_STEM]}-{hashlib.sha1(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
