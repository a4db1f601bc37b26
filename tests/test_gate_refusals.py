"""What the gate refuses to judge (issue 33): one run on both sides, and a language with nothing judged.

Each case is a `whisperbench score` run on the bundled clips (no model: the runs are recorded hypotheses).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from whisperbench.cli import main

from .conftest import record_run, write_jsonl


def _gate(runs, reference, candidate, *extra):
    return main(
        [
            "gate",
            "--reference",
            str(reference),
            "--candidate",
            str(candidate),
            "--runs-dir",
            str(runs),
            "--min-qoi",
            "99",
            *extra,
        ]
    )


@pytest.fixture
def two_runs(tmp_path, tiny_rows, tiny_short):
    runs = tmp_path / "runs"
    record_run(runs, tiny_short, tiny_rows, "ref", lambda r: r["text"])
    record_run(runs, tiny_short, tiny_rows, "other", lambda r: r["text"].lower())
    return runs


def test_gate_refuses_a_run_compared_with_itself_however_it_is_reached(two_runs, tmp_path, capsys):
    runs = two_runs
    (runs / "alias").symlink_to(runs / "ref", target_is_directory=True)  # the same folder through a symlink
    shutil.copytree(runs / "ref", runs / "copy")  # a copied folder: the same run id
    shutil.copytree(runs / "other", runs / "linked")  # another run whose predictions file is the reference's
    (runs / "linked" / "predictions.jsonl").unlink()
    os.symlink(runs / "ref" / "predictions.jsonl", runs / "linked" / "predictions.jsonl")
    capsys.readouterr()
    cases = {
        "ref": "both name the run folder",
        str(runs / "ref"): "both name the run folder",
        "alias": "both name the run folder",
        "copy": "both carry run id",
        "linked": "both read the predictions file",
    }
    for candidate, why in cases.items():
        assert _gate(runs, "ref", candidate) == 2, candidate
        out = capsys.readouterr().out
        assert "gate: CANNOT JUDGE" in out and "[CANNOT JUDGE] different runs" in out and why in out, (candidate, out)
    # a deliberate self-check passes with the flag (and says it was one)
    assert _gate(runs, "ref", "ref", "--allow-self-comparison") == 0
    assert "self-check allowed" in capsys.readouterr().out
    # two different runs are judged as before
    assert _gate(runs, "ref", "other") == 0
    assert "[ok] different runs" in capsys.readouterr().out
    # compare still compares, but warns
    assert main(["compare", "--reference", "ref", "--candidate", "alias", "--runs-dir", str(runs)]) == 0
    assert "is the reference run itself" in capsys.readouterr().err


def test_gate_refuses_byte_identical_predictions_of_the_same_model_and_settings(
    tmp_path, tiny_rows, tiny_short, capsys
):
    """The same hypotheses scored twice under two names: two run ids, one result."""
    runs = tmp_path / "runs"
    hyp = write_jsonl(tmp_path / "h.jsonl", [{"id": r["id"], "hypothesis": r["text"]} for r in tiny_rows])
    for name in ("first", "second"):
        assert (
            main(
                [
                    "score",
                    "--dataset",
                    str(tiny_short),
                    "--hypotheses",
                    str(hyp),
                    "--name",
                    name,
                    "--runs-dir",
                    str(runs),
                ]
            )
            == 0
        )
    ids = [json.loads((runs / n / "run.json").read_text())["run_id"] for n in ("first", "second")]
    assert ids[0] != ids[1] and all(ids)
    assert (
        main(
            [
                "score",
                "--dataset",
                str(tiny_short),
                "--hypotheses",
                str(hyp),
                "--name",
                "first",
                "--runs-dir",
                str(runs),
            ]
        )
        == 0
    )  # a resume keeps the run's id
    assert json.loads((runs / "first" / "run.json").read_text())["run_id"] == ids[0]
    assert (runs / "first" / "predictions.jsonl").read_bytes() == (runs / "second" / "predictions.jsonl").read_bytes()
    capsys.readouterr()
    assert _gate(runs, "first", "second") == 2
    assert "byte-identical predictions from the same model and settings" in capsys.readouterr().out
    # the same size, one byte apart (hashed in blocks, not read whole): two results, judged
    path = runs / "second" / "predictions.jsonl"
    data = bytearray(path.read_bytes())
    at = data.index(b'"hypothesis": "') + len(b'"hypothesis": "')
    data[at] = ord("Q") if data[at] != ord("Q") else ord("Z")
    path.write_bytes(bytes(data))
    assert _gate(runs, "first", "second") in (0, 1)
    assert "[ok] different runs" in capsys.readouterr().out


def _labelled(local_manifest, tiny_rows):
    labels = ["en", "en", "en", "de", "de", "de"]
    return local_manifest([dict(r, language=label) for r, label in zip(tiny_rows, labels)])


def test_gate_cannot_judge_a_language_with_nothing_judged(tmp_path, tiny_rows, local_manifest, capsys):
    """Every German example failed in the reference: German cannot be judged, never a silent pass."""
    manifest, runs = _labelled(local_manifest, tiny_rows), tmp_path / "runs"
    english = [r for r in tiny_rows[:3]]
    hyp = write_jsonl(tmp_path / "ref.jsonl", [{"id": r["id"], "hypothesis": r["text"]} for r in english])
    assert (
        main(["score", "--dataset", str(manifest), "--hypotheses", str(hyp), "--name", "ref", "--runs-dir", str(runs)])
        == 0
    )  # the German ids have no hypothesis: recorded as failed
    record_run(runs, manifest, tiny_rows, "cand", lambda r: r["text"])
    capsys.readouterr()
    code = _gate(runs, "ref", "cand", "--min-coverage", "0", "--min-qoi-per-language", "90")
    out = capsys.readouterr().out
    assert code == 2, out
    assert "[CANNOT JUDGE] languages judged: no example judged in de" in out
    assert "[ok] QoI per language: en 100.0% of 3" in out


def test_gate_per_language_uses_the_confidence_asked_for(tmp_path, tiny_rows, local_manifest, capsys):
    """One of three English examples regresses: QoI 66.7 % < 90, but with --confidence 95 the per-language
    check fails only when the language's own CI lies wholly below 90. Worked by hand: with 3 examples, 2 not
    regressed, a resample keeps all 3 with probability (2/3)^3 = 29.6 % and none with (1/3)^3 = 3.7 %, both
    above 2.5 %: the 95 % interval is [0, 100], so the check passes."""
    manifest, runs = _labelled(local_manifest, tiny_rows), tmp_path / "runs"
    record_run(runs, manifest, tiny_rows, "ref", lambda r: r["text"])
    record_run(runs, manifest, tiny_rows, "cand", lambda r: "" if r is tiny_rows[0] else r["text"])
    capsys.readouterr()
    assert _gate(runs, "ref", "cand", "--min-qoi", "0", "--min-qoi-per-language", "90") == 1  # without: fails
    assert "below: en" in capsys.readouterr().out
    code = _gate(runs, "ref", "cand", "--min-qoi", "0", "--min-qoi-per-language", "90", "--confidence", "95")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "en 66.7% of 3 (95% CI [0.00, 100.00])" in out and "de 100.0% of 3 (95% CI [100.00, 100.00])" in out


def test_a_wer_limit_on_a_non_speech_set_cannot_judge(tmp_path, capsys):
    """Every transcript empty (non-speech audio): WER is n/a on both sides, so --max-wer-increase cannot say
    "regression" (exit 1); it cannot judge (exit 2) and says what gates such a set."""
    from .conftest import BUNDLED

    clip = next(p for p in (BUNDLED / "shortform" / "audio").iterdir() if p.stem == "jfk")
    manifest = write_jsonl(
        tmp_path / "silence.jsonl",
        [{"id": f"n{i}", "audio": str(clip), "text": "", "nonspeech": True} for i in range(3)],
    )
    runs = tmp_path / "runs"
    for name, text in (("quiet", ""), ("talks", "thank you")):
        hyp = write_jsonl(tmp_path / f"{name}.jsonl", [{"id": f"n{i}", "hypothesis": text} for i in range(3)])
        args = ["score", "--dataset", str(manifest), "--hypotheses", str(hyp), "--name", name, "--runs-dir", str(runs)]
        assert main(args) == 0
    capsys.readouterr()
    code = main(
        ["gate", "--reference", "quiet", "--candidate", "talks", "--runs-dir", str(runs), "--max-wer-increase", "0"]
    )
    out = capsys.readouterr().out
    assert code == 2 and "cannot be judged" in out and "--max-nonspeech-output-rate" in out
