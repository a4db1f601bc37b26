"""Outputs stay valid and harmless whatever a manifest's ids and a run's texts hold: JUnit XML with control
characters in an id still parses, and no CSV cell can run as a spreadsheet formula."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET

from tests.conftest import record_run, write_jsonl


def _rows(tiny_rows, ids):
    from tests.conftest import BUNDLED

    return [dict(r, id=new, audio=str(BUNDLED / "shortform" / r["audio"])) for r, new in zip(tiny_rows, ids)]


def test_junit_stays_valid_xml_with_control_characters_in_ids(tmp_path, tiny_rows):
    from whisperbench.cli import main

    rows = _rows(tiny_rows, ["esc\x1bid", "bell\x07id", *[r["id"] for r in tiny_rows[2:]]])
    manifest = write_jsonl(tmp_path / "manifest.jsonl", rows)
    runs = tmp_path / "runs"
    record_run(runs, manifest, rows, "ref", lambda r: r["text"])
    record_run(runs, manifest, rows, "cut", lambda r: " ".join(r["text"].split()[:2]))
    junit = tmp_path / "gate.xml"
    assert (
        main(
            [
                "gate",
                "--reference",
                "ref",
                "--candidate",
                "cut",
                "--min-qoi",
                "95",
                "--runs-dir",
                str(runs),
                "--junit",
                str(junit),
            ]
        )
        == 1
    )
    names = {case.get("name") for case in ET.parse(junit).getroot().iter("testcase")}  # parses: valid XML 1.0
    assert "esc\\x1bid" in names and "bell\\x07id" in names


def test_csv_exports_neutralize_formulas(tmp_path, tiny_rows):
    from whisperbench.cli import main

    rows = _rows(tiny_rows, ["=cmd|' /C calc'!A0", "+SUM(1,2)", "@x", "-2", *[r["id"] for r in tiny_rows[4:]]])
    manifest = write_jsonl(tmp_path / "manifest.jsonl", rows)
    runs = tmp_path / "runs"
    record_run(runs, manifest, rows, "ref", lambda r: '=HYPERLINK("http://x")' if r["id"] == "@x" else r["text"])
    out = tmp_path / "rows.csv"
    assert main(["export", "ref", "--out", str(out), "--runs-dir", str(runs)]) == 0
    cells = [cell for row in csv.reader(out.open(encoding="utf-8")) for cell in row]
    assert not any(cell.startswith(("=", "+", "@")) for cell in cells), cells
    assert "'=cmd|' /C calc'!A0" in cells and "'+SUM(1,2)" in cells and '\'=HYPERLINK("http://x")' in cells
    board = tmp_path / "board.csv"
    assert main(["report", "--runs-dir", str(runs), "--out", str(board), "--quiet"]) == 0
    assert not any(cell.startswith(("=", "+", "@")) for row in csv.reader(board.open()) for cell in row)


def test_a_lone_surrogate_is_stored_as_a_replacement_character_not_a_crash(tmp_path, tiny_rows, tiny_short):
    """Valid JSON, no character: "\\ud83d" in a hypotheses file (or from an OpenAI-compatible server) once stopped the
    store mid-line and left the run empty for good; in a manifest's transcript it stopped the load."""
    from whisperbench.cli import main
    from whisperbench.store.runs import open_run

    def ascii_jsonl(path, rows):  # JSON's own escapes: the file is valid UTF-8 holding "\ud83d"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        return path

    hyp = ascii_jsonl(
        tmp_path / "h.jsonl",
        [{"id": r["id"], "hypothesis": r["text"] + (" \ud83d" if i == 0 else "")} for i, r in enumerate(tiny_rows)],
    )
    runs = tmp_path / "runs"
    assert (
        main(["score", "--dataset", str(tiny_short), "--hypotheses", str(hyp), "--name", "s", "--runs-dir", str(runs)])
        == 0
    )
    run = open_run("s", runs)
    assert run.info.get("status", "finished") != "empty" and len(run.predictions) == len(tiny_rows)
    assert run.predictions[0].hypothesis.endswith("\ufffd")
    rows = _rows(tiny_rows, [r["id"] for r in tiny_rows])
    rows[0] = dict(rows[0], text=rows[0]["text"] + " \ud83d")
    manifest = ascii_jsonl(tmp_path / "manifest.jsonl", rows)
    assert (
        main(["score", "--dataset", str(manifest), "--hypotheses", str(hyp), "--name", "m", "--runs-dir", str(runs)])
        == 0
    )


def test_a_token_in_the_tracking_uri_never_reaches_the_output(tmp_path, capsys):
    """MLflow's client quotes the failed request's path and query without its URL (``url: /?token=…/api/…``): that
    token is redacted too. A real export to a refused port, exit 2."""
    import pytest

    pytest.importorskip("mlflow", reason="pip install 'whisperbench[mlflow]'")
    from whisperbench.cli import main

    from .conftest import BUNDLED

    args = [
        "score",
        "--dataset",
        "tiny-shortform",
        "--hypotheses",
        str(BUNDLED / "recorded" / "openai-whisper-base.jsonl"),
    ]
    assert main(args + ["--name", "b", "--runs-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    code = main(
        [
            "export",
            "b",
            "--runs-dir",
            str(tmp_path),
            "--to",
            "mlflow",
            "--tracking-uri",
            "http://127.0.0.1:9/?token=s3cret-value",
        ]
    )
    captured = capsys.readouterr()
    assert code == 2 and "REDACTED" in captured.err
    assert "s3cret-value" not in captured.out + captured.err


def test_small_trust_holes_stay_closed(tmp_path):
    """A hard-linked predictions.jsonl is one run; ``runs remove`` of a symlinked run removes the link only; a
    summary.json whose schema_version is "2" or null is malformed, not "newer"; a raw ``<script>`` label is text in
    the markdown leaderboard."""
    import os

    import pytest

    import whisperbench as wb
    from whisperbench.errors import RunStoreError
    from whisperbench.reports.escape import md_cell
    from whisperbench.store.runs import open_run, same_run_reason

    from .conftest import BUNDLED

    hyp = BUNDLED / "recorded" / "openai-whisper-base.jsonl"
    runs = tmp_path / "runs"
    a = wb.score(hyp, "tiny-shortform", runs_dir=runs, name="a")
    b = wb.score(BUNDLED / "recorded" / "openai-whisper-tiny.en.jsonl", "tiny-shortform", runs_dir=runs, name="b")
    os.unlink(b.store.predictions_path)
    os.link(a.store.predictions_path, b.store.predictions_path)
    assert "one file, however linked" in same_run_reason(open_run(str(runs / "a")), open_run(str(runs / "b")))

    elsewhere = tmp_path / "elsewhere"
    wb.score(hyp, "tiny-shortform", runs_dir=elsewhere, name="kept")
    os.symlink(elsewhere / "kept", runs / "linked")
    wb.remove_runs(["linked"], runs_dir=runs)
    assert not (runs / "linked").exists() and (elsewhere / "kept" / "predictions.jsonl").exists()

    path = runs / "a" / "summary.json"
    good = json.loads(path.read_text())
    for bad in ("2", None):
        path.write_text(json.dumps(dict(good, schema_version=bad)))
        with pytest.raises(RunStoreError, match=r"schema_version must be a whole number"):
            open_run(str(runs / "a"))
    path.write_text(json.dumps(good))
    # backslash escapes (CommonMark): text wherever rendered, and no HTML entity where pasted as plain text
    assert md_cell("<script>alert(1)</script>") == "\\<script\\>alert(1)\\</script\\>"


def test_ids_with_a_nul_or_300_characters_make_files_not_crashes(tmp_path):
    """Subtitles (and derived audio) are files named by example id: a NUL, a slash or 300 characters become a plain
    name cut short with a digest of the id, one file per example."""
    from whisperbench.reports.timing import write_subtitles
    from whisperbench.store.runs import open_run

    from .conftest import BUNDLED

    clip = next(p for p in (BUNDLED / "shortform" / "audio").iterdir() if p.stem == "jfk")
    ids = ["nul\x00id", "x" * 300, "a/b", "plain"]
    manifest = write_jsonl(tmp_path / "m.jsonl", [{"id": i, "audio": str(clip), "text": "hello"} for i in ids])
    from whisperbench import score

    run = score(
        write_jsonl(tmp_path / "h.jsonl", [{"id": i, "hypothesis": "hello"} for i in ids]),
        manifest,
        runs_dir=tmp_path / "runs",
        name="r",
    )
    lines = [json.loads(line) for line in run.store.predictions_path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        line["segments"] = [{"start": 0.0, "end": 1.0, "text": "hello"}]
    run.store.predictions_path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    written, untimed = write_subtitles(open_run(str(run.store.path)), tmp_path / "subs", "srt")
    assert not untimed and len({p.name for p in written}) == 4
    assert all(len(p.name) < 140 and "\x00" not in p.name for p in written)
    assert (tmp_path / "subs" / "plain.srt").exists()
