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
    ("score --dataset {tmp}/nope.jsonl --hypotheses {tmp}/nope.jsonl --runs-dir {runs}", "nope.jsonl"),
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
    ("align --dataset {tmp}/nope.jsonl --out {tmp}/words.jsonl", "not found"),
    # nonsense limits: every numeric option is a finite number in its documented range (whisperbench.core.ranges)
    ("gate --reference ref --candidate bad --min-qoi nan --runs-dir {runs}", "expected a finite number"),
    (
        "gate --reference ref --candidate bad --min-qoi 150 --runs-dir {runs}",
        "--min-qoi must be a finite number from 0",
    ),
    (
        "gate --reference ref --candidate bad --non-inferiority-margin nan --inconclusive pass --runs-dir {runs}",
        "expected a finite number",
    ),
    (
        "gate --reference ref --candidate bad --non-inferiority-margin -1 --runs-dir {runs}",
        "--non-inferiority-margin must be",
    ),
    ("gate --reference ref --candidate bad --max-wer-increase inf --runs-dir {runs}", "expected a finite number"),
    (
        "gate --reference ref --candidate bad --min-qoi 95 --confidence 0.95 --runs-dir {runs}",
        "--confidence must be a finite number from 50 to 99.9 %",
    ),
    ("gate --reference ref --candidate bad --min-qoi 95 --max-new-loops -1 --runs-dir {runs}", "whole number"),
    ("compare --reference ref --candidate bad --confidence 150 --runs-dir {runs}", "--confidence must be"),
    ("rescore ref --threshold hallucination.burst_words=-5 --runs-dir {runs}", "burst_words must be"),
    ("rescore ref --threshold hallucination.catastrophic_wer=-1 --runs-dir {runs}", "catastrophic_wer must be"),
    ("rescore ref --threshold hallucination.compression_ratio=nan --runs-dir {runs}", "compression_ratio must be"),
    ("rescore ref --threshold hallucination.loop_repeats=0 --runs-dir {runs}", "loop_repeats must be"),
    ("perturb --dataset {dataset} --noise white --snr nan --out {tmp}/p", "--snr must be"),
    ("perturb --dataset {dataset} --noise white --snr 1e9 --out {tmp}/p", "--snr must be"),
    ("perturb --dataset {dataset} --gain 1e9 --out {tmp}/p", "--gain must be"),
    ("perturb --dataset {dataset} --silence insert:1e9 --out {tmp}/p", "--silence must be"),
    ("perturb --dataset {dataset} --nonspeech all --nonspeech-s -1 --out {tmp}/p", "--nonspeech-s must be"),
    ("perturb --dataset {dataset} --nonspeech all --nonspeech-s 0 --out {tmp}/p", "--nonspeech-s must be"),
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
    import whisperbench.harness.demo as demo

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


def test_random_numbers_at_every_gate_limit_judge_or_refuse_never_crash(recorded_runs, capsys):
    """Property: any number (finite, NaN, infinite, huge, negative) given to any numeric gate option ends in a
    verdict (exit 0 or 1) only when it lies in that option's documented range, else in one refusal line, exit 2."""
    import math

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from whisperbench.core.ranges import CONFIDENCE_PERCENT, GATE_LIMITS

    options = {key.replace("_", "-"): limit for key, limit in GATE_LIMITS.items() if key not in ("resamples", "seed")}
    options["confidence"] = CONFIDENCE_PERCENT
    numbers = st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-(10**6), 10**6),
        st.sampled_from([0, 50, 99.9, 100, 150, -1e-9, 1e300]),
    )

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(option=st.sampled_from(sorted(options)), value=numbers)
    def check(option, value):
        base = ["gate", "--reference", "ref", "--candidate", "good", "--runs-dir", str(recorded_runs)]
        quality = (
            []
            if option in ("min-qoi", "max-wer-increase", "non-inferiority-margin", "non-inferiority-qoi-margin")
            else ["--min-qoi", "50"]
        )
        try:
            code = main(base + quality + [f"--{option}", repr(value) if isinstance(value, float) else str(value)])
        except SystemExit as exc:  # argparse: not a number of the option's kind
            code = exc.code
        err = capsys.readouterr().err
        assert "Traceback" not in err
        limit = options[option]
        inside = (
            isinstance(value, (int, float))
            and math.isfinite(value)
            and limit.low <= value <= limit.high
            and (not limit.integer or float(value).is_integer())  # a count written 0.0 or 1e3 is that count
        )
        if inside:
            assert code in (0, 1, 2), err  # 2 only for a reason other than the limit (e.g. the set is too small)
            assert "must be" not in err and "expected a" not in err, err
        else:
            assert code == 2, (option, value, err)

    check()
