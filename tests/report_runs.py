"""Stored runs for the report tests, made without running a model: hypotheses files scored by ``whisperbench
score`` (the ``recorded`` adapter), with per-example device times (``infer_s``), a recorded stream and the
languages the datasets label.

``demo_like_runs``: the demo's shape (the bundled short- and long-form sets, openai-whisper the reference, five
other implementations). ``many_runs``: about twenty runs over four datasets (English short and long form, a
multilingual set, a copy of the short set under utterance times), a streaming run and speed comparisons.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

BUNDLED = Path(__file__).resolve().parents[1] / "datasets" / "tiny"
MULTILINGUAL = (
    Path(os.environ.get("WHISPERBENCH_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    / "multilingual"
    / "manifest.jsonl"
)

#: (implementation label, how far its outputs drift from the transcript, its time per audio second)
IMPLEMENTATIONS = [
    ("openai-whisper", 0.00, 0.20),
    ("faster-whisper-int8", 0.06, 0.05),
    ("faster-whisper-fp32", 0.02, 0.08),
    ("whisper.cpp", 0.04, 0.06),
    ("transformers", 0.10, 0.25),
    ("openai-whisper-batch8-chunked", 0.03, 0.12),
]


def _rows(manifest: Path) -> list[dict]:
    base = manifest.parent
    rows = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [dict(r, audio=str(base / r["audio"])) for r in rows]


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def _edited(text: str, drift: float, rng: np.random.Generator) -> str:
    """``text`` with about ``drift`` of its words dropped or misspelt (seeded: the same runs every time)."""
    words = text.split()
    out = []
    for word in words:
        draw = rng.random()
        if draw < drift / 2:
            continue
        out.append(word[::-1] if draw < drift else word)
    return " ".join(out)


def _score(runs: Path, manifest: Path, name: str, lines: list[dict], label: str) -> None:
    from whisperbench import api

    hypotheses = _write(runs.parent / f"{name}.jsonl", lines)
    api.score(hypotheses, manifest, runs_dir=runs, name=name, label=label)


def _implementation_runs(runs: Path, manifest: Path, dataset: str, implementations, seed: int) -> list[str]:
    rows = _rows(manifest)
    names = []
    for number, (label, drift, cost) in enumerate(implementations):
        rng = np.random.default_rng(seed + number)
        lines = [{"device": {"name": "bench-phone"}}] + [  # one device times every run: their speeds compare
            {
                "id": r["id"],
                "hypothesis": r["text"] if drift == 0 else _edited(r["text"], drift, rng),
                "infer_s": round(float(r["duration_s"]) * cost * rng.lognormal(0, 0.05), 4),
            }
            for r in rows
        ]
        name = f"{label}-{dataset}"
        _score(runs, manifest, name, lines, label)
        names.append(name)
    return names


def demo_like_runs(tmp_path: Path) -> tuple[Path, list[str]]:
    """The demo's runs, recorded: six implementations on the bundled short-form set, four on the long-form one;
    openai-whisper the reference of each (returned with the runs folder)."""
    runs = tmp_path / "runs"
    short = _implementation_runs(runs, BUNDLED / "shortform" / "manifest.jsonl", "tiny-shortform", IMPLEMENTATIONS, 1)
    long = _implementation_runs(runs, BUNDLED / "longform" / "manifest.jsonl", "tiny-longform", IMPLEMENTATIONS[:4], 9)
    return runs, [short[0], long[0]]


def _timed_copy(tmp_path: Path) -> Path:
    """The short-form set under another name with one planted utterance per example (0.5 s to 3 s): what the
    streaming latency is measured against."""
    rows = _rows(BUNDLED / "shortform" / "manifest.jsonl")[:4]  # four examples: a dataset of its own
    rows = [dict(r, segments=[{"start": 0.5, "end": 3.0, "text": r["text"]}]) for r in rows]
    return _write(tmp_path / "timed-set.jsonl", rows)


def _multilingual(tmp_path: Path) -> Path:
    """The shared multilingual set (eight languages) where it is here, else the bundled short-form set labelled
    in two (English and German: the labels are what the report breaks down by)."""
    if MULTILINGUAL.exists():
        return MULTILINGUAL
    rows = _rows(BUNDLED / "shortform" / "manifest.jsonl")
    labelled = [
        dict(r, id=f"{r['id']}-l", language=lang) for r, lang in zip(rows, ["en", "en", "en", "de", "de", "de"])
    ]
    return _write(tmp_path / "labelled-set.jsonl", labelled)


def _stream_run(runs: Path, manifest: Path, name: str, lag_s: float) -> None:
    lines = []
    for r in _rows(manifest):
        words = r["text"].split()
        stream = [
            {"audio_s": 2.0, "wall_s": 0.4, "committed": "", "interim": " ".join(words[:2])},
            {"audio_s": 3.0 + lag_s, "wall_s": 0.9, "committed": r["text"], "interim": ""},
        ]
        lines.append(
            {"id": r["id"], "hypothesis": r["text"], "stream": stream, "streaming": {"policy": "local-agreement"}}
        )
    _score(runs, manifest, name, lines, "whisperlivekit")


def many_runs(tmp_path: Path) -> tuple[Path, list[str]]:
    """Twenty runs: six on the short-form set, four long-form, six on the multilingual set (eight languages where
    the shared data is here, else two), two batch runs and two streaming runs on a copy of the short set with
    utterance times; batch runs carry device times (speed comparisons). Returns the runs folder and the references."""
    runs, references = demo_like_runs(tmp_path)
    names = _implementation_runs(runs, _multilingual(tmp_path), "multilingual", IMPLEMENTATIONS, 20)
    references.append(names[0])
    timed = _timed_copy(tmp_path)
    references += _implementation_runs(runs, timed, "timed", IMPLEMENTATIONS[:2], 30)[:1]
    _stream_run(runs, timed, "whisperlivekit-1s", 1.0)
    _stream_run(runs, timed, "whisperlivekit-2s", 2.0)
    return runs, references
