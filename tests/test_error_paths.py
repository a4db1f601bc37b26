"""Every command's error paths, as a user meets them: missing files, unknown names, a run that is not there,
an option out of range. Each must end in one line (``error: ...``, or the gate's ``CANNOT JUDGE``) and exit 2,
never a traceback and never exit 0 or 1. Run in-process: an exception escaping ``main`` fails the test."""

from __future__ import annotations

import pytest

from whisperbench.cli import build_parser, main

from .conftest import BUNDLED

#: (command line, a word the one line must hold); {runs} {tmp} {dataset} are filled in
CASES = [
    ("run --adapter nope --model tiny.en --dataset {dataset} --runs-dir {runs}", "unknown adapter"),
    ("run --adapter recorded --model {tmp}/nope.jsonl --dataset {dataset} --runs-dir {runs}", "nope.jsonl"),
    ("run --adapter recorded --model {tmp}/nope.jsonl --dataset {tmp}/nope.jsonl --runs-dir {runs}", "not found"),
    ("run --adapter recorded --model {tmp}/nope.jsonl --dataset {dataset} -o nope=1 --runs-dir {runs}", "nope"),
    ("run --adapter recorded --model {tmp}/h.jsonl --dataset {dataset} --workers 0 --runs-dir {runs}", "workers"),
    ("score --dataset {tmp}/nope.jsonl --hypotheses {tmp}/nope.jsonl --runs-dir {runs}", "not found"),
    ("score --dataset {dataset} --hypotheses {tmp}/nope.jsonl --runs-dir {runs}", "nope.jsonl"),
    ("score --dataset {dataset} --hypotheses {tmp}/junk.jsonl --runs-dir {runs}", "junk.jsonl"),
    ("rescore nope --runs-dir {runs}", "not found"),
    ("compare --reference nope --candidate ref --runs-dir {runs}", "not found"),
    ("compare --reference ref --candidate nope --runs-dir {runs}", "not found"),
    ("report --runs-dir {tmp}/no-runs-here", "no runs"),
    ("report --reference nope --runs-dir {runs} --quiet", "nope"),
    ("report --runs-dir {runs} --out {tmp}/report.xyz --quiet", "format"),
    ("export nope --out {tmp}/x.csv --runs-dir {runs}", "not found"),
    ("export ref --out {tmp}/x.txt --runs-dir {runs}", ".csv"),
    ("export ref bad --out {tmp}/x.csv --runs-dir {runs}", "exactly one"),
    ("export nope --to mlflow --runs-dir {runs}", "not found"),
    ("export --all --to mlflow --runs-dir {tmp}/no-runs-here", "none in"),
    ("gate --reference nope --candidate ref --min-qoi 99 --runs-dir {runs}", "not found"),
    ("plan --reference nope --runs-dir {runs}", "not found"),
    ("plan --reference ref --alpha 0 --runs-dir {runs}", "alpha 0"),
    ("noise ref --runs-dir {runs}", "at least two runs"),
    ("runs remove nope --yes --runs-dir {runs}", "not found"),
    ("noise ref nope --runs-dir {runs}", "not found"),
    ("rescore ref --threshold hallucination.nope=1 --runs-dir {runs}", "nope"),
    ("gate --reference ref --candidate nope --min-qoi 99 --runs-dir {runs}", "not found"),
    ("subtitles nope --out {tmp}/subs --runs-dir {runs}", "not found"),
    ("adapters nope", "unknown adapter"),
    ("models info {tmp}/no-model", "unknown model"),
    ("models info no-such-model-name", "unknown model"),
    ("models convert {tmp}/no-model --to ct2 --out {tmp}/out", "unknown model"),
    ("datasets {tmp}/nope.jsonl", "not found"),
    ("perturb --dataset {tmp}/nope.jsonl --out {tmp}/p", "not found"),
    ("perturb --dataset {dataset} --noise bogus --out {tmp}/p", "bogus"),
    ("sweep --model tiny.en --dataset {tmp}/nope.jsonl --runs-dir {runs}", "not found"),
    ("sweep --model tiny.en --dataset {dataset} --implementations nope --runs-dir {runs}", "unknown adapter"),
    ("sweep --model {tmp}/no-model --dataset {dataset} --runs-dir {runs}", "unknown model"),
    ("demo --implementations nope --runs-dir {tmp}/demo", "nope"),
    ("demo --model {tmp}/no-model --runs-dir {tmp}/demo", "unknown model"),
]


def test_every_command_has_an_error_case():
    commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert commands == {line.split()[0] for line, _ in CASES}


@pytest.mark.parametrize("line,said", CASES, ids=[" ".join(c[0].split()[:3]) for c in CASES])
def test_a_bad_input_is_one_line_and_exit_2(line, said, recorded_runs, tmp_path, capsys):
    (tmp_path / "junk.jsonl").write_text("{not json\n", encoding="utf-8")
    (tmp_path / "h.jsonl").write_text('{"id": "x", "hypothesis": "y"}\n', encoding="utf-8")
    argv = line.format(runs=recorded_runs, tmp=tmp_path, dataset=BUNDLED / "shortform" / "manifest.jsonl").split()
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusals: usage and one line, exit 2
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(("error:", "gate: CANNOT JUDGE:", "whisperbench")) and said in err, err


def test_a_demo_with_nothing_installed_is_an_error_not_an_empty_leaderboard(tmp_path, monkeypatch, capsys):
    import whisperbench.demo as demo

    class NotHere:
        extra = "local"

        @staticmethod
        def missing():
            return ["its-package"]

    monkeypatch.setattr(demo, "get_adapter", lambda name: NotHere)
    monkeypatch.setattr(demo, "resolve_source", lambda model: None)  # the model is there
    assert main(["demo", "--short-only", "--runs-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert "no implementation can run here" in err and "Traceback" not in err
    assert not (tmp_path / "runs" / "leaderboard.md").exists()
