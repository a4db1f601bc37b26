"""A metric from another installed package (the entry-point group ``whisperbench.metrics``) shows everywhere a
built-in figure does: summary.json, compare (terminal and JSON), report (markdown, HTML, CSV), the per-example
export, the trackers and the gate. The package is docs/metrics.md's own example, installed as a separate
distribution (a ``.dist-info`` with ``entry_points.txt`` on the path); every figure is checked against a count
of the letter z made here from the hypotheses files, without whisperbench."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import BUNDLED, REPO

RECORDED = BUNDLED / "recorded" / "openai-whisper-base.jsonl"


def _docs_example() -> str:
    """The toy metric's code as docs/metrics.md gives it (the test runs the documented contract)."""
    text = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(# toy_metric\.py.*?)```", text, re.S)
    assert block, "docs/metrics.md lost its toy_metric.py example"
    return block.group(1)


@pytest.fixture
def toy_site(tmp_path, monkeypatch):
    """A folder on sys.path holding the package ``toy_metric`` and its distribution's entry point."""
    site = tmp_path / "site"
    dist = site / "toy_metric-1.0.dist-info"
    dist.mkdir(parents=True)
    (site / "toy_metric.py").write_text(_docs_example(), encoding="utf-8")
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-metric\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[whisperbench.metrics]\nzcount = toy_metric:METRIC\n", encoding="utf-8")
    from whisperbench.scoring.metrics import METRICS

    monkeypatch.syspath_prepend(str(site))
    METRICS.reload()
    yield site
    sys.modules.pop("toy_metric", None)
    METRICS.reload()


def _hypotheses(tmp_path: Path) -> tuple[Path, Path, dict[str, int], dict[str, int]]:
    """The reference's hypotheses (the recorded base run, one z added to its first line) and the candidate's
    (every s of the first three lines made z), with their z counts per id, counted here."""
    rows = [json.loads(line) for line in RECORDED.read_text(encoding="utf-8").splitlines()]
    ref_rows = [dict(r, hypothesis=r["hypothesis"] + (" Oz." if i == 0 else "")) for i, r in enumerate(rows)]
    cand_rows = [
        dict(r, hypothesis=r["hypothesis"].replace("s", "z") if i < 3 else r["hypothesis"]) for i, r in enumerate(rows)
    ]
    paths = []
    for name, data in (("ref", ref_rows), ("cand", cand_rows)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
        paths.append(path)
    counts = [{r["id"]: r["hypothesis"].count("z") for r in data} for data in (ref_rows, cand_rows)]
    return paths[0], paths[1], counts[0], counts[1]


def _cli(args: list[str], site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "whisperbench", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_an_installed_metric_shows_in_every_output_and_gates(toy_site, tmp_path):
    ref_path, cand_path, ref_z, cand_z = _hypotheses(tmp_path)
    runs = tmp_path / "runs"
    for name, path in (("ref", ref_path), ("cand", cand_path)):
        done = _cli(
            [
                "score",
                "--dataset",
                str(BUNDLED / "shortform" / "manifest.jsonl"),
                "--hypotheses",
                str(path),
                "--name",
                name,
                "--runs-dir",
                str(runs),
            ],
            toy_site,
            tmp_path,
        )
        assert done.returncode == 0, done.stderr
    ref_sum, cand_sum = sum(ref_z.values()), sum(cand_z.values())
    assert cand_sum > ref_sum > 0  # the check below can fail both ways

    summary = json.loads((runs / "cand" / "summary.json").read_text(encoding="utf-8"))
    value = summary.get("zcount") or summary.get("metrics", {}).get("zcount")
    assert value == {"z_letters": float(cand_sum)}

    compared = _cli(
        ["compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--json"], toy_site, tmp_path
    )
    assert compared.returncode == 0, compared.stderr
    zcount = json.loads(compared.stdout)[0]["metrics"]["zcount"]
    assert zcount["candidate"] == {"z_letters": cand_sum} and zcount["reference"] == {"z_letters": ref_sum}
    terminal = _cli(
        ["compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs)], toy_site, tmp_path
    )
    row = next(line for line in terminal.stdout.splitlines() if line.startswith("| zcount "))  # one row per figure
    assert f"{cand_sum:.2f}" in row

    for fmt, out in (("md", "board.md"), ("html", "board.html"), ("csv", "board.csv")):
        done = _cli(
            ["report", "--runs-dir", str(runs), "--reference", "ref", "--format", fmt, "--out", out, "--quiet"],
            toy_site,
            tmp_path,
        )
        assert done.returncode == 0, done.stderr
        # the markdown is the compact leaderboard (a pull request's, docs/reports.md): every figure is in the HTML
        # and the CSV, and the markdown says where
        text = (tmp_path / out).read_text(encoding="utf-8")
        assert ("zcount" in text) if fmt != "md" else ("HTML" in text and "CSV" in text), fmt
    with open(tmp_path / "board.csv", encoding="utf-8") as f:
        board = {row["Run"]: row for row in csv.DictReader(f)}
    assert float(board["cand"]["zcount"]) == cand_sum and float(board["ref"]["zcount"]) == ref_sum

    done = _cli(
        ["export", "cand", "--reference", "ref", "--out", "rows.csv", "--runs-dir", str(runs)], toy_site, tmp_path
    )
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "rows.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {row["id"]: float(row["z_letters"]) for row in rows} == {i: float(n) for i, n in cand_z.items()}

    gate = ["gate", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--max-failed-pct", "100"]
    _its_pairings_show_and_gate(compared.stdout, terminal.stdout, board, gate, ref_z, cand_z, toy_site, tmp_path)
    exceeded = _cli(gate + ["--max-increase", f"zcount.z_letters={cand_sum - ref_sum - 1}"], toy_site, tmp_path)
    assert exceeded.returncode == 1, exceeded.stdout + exceeded.stderr
    assert "zcount.z_letters" in exceeded.stdout
    held = _cli(gate + ["--max-increase", f"zcount.z_letters={cand_sum - ref_sum}"], toy_site, tmp_path)
    assert held.returncode == 0, held.stdout + held.stderr
    unknown = _cli(gate + ["--max-increase", "nosuch.x=1"], toy_site, tmp_path)
    assert unknown.returncode == 2 and "unknown metric 'nosuch'" in unknown.stderr

    from whisperbench import load_run
    from whisperbench.reports.tracking import tracked_run

    tracked = tracked_run(load_run(runs / "cand"), load_run(runs / "ref"))  # what MLflow and W&B are given
    assert tracked.metrics["zcount.z_letters"] == cand_sum
    assert dict(zip(tracked.examples["id"], tracked.examples["z_letters"])) == cand_z


def _its_pairings_show_and_gate(compared, terminal, board, gate, ref_z, cand_z, site, cwd) -> None:
    """The docs example's two pairings (``zcount.no_more_z``: % of examples with no more z than the reference's;
    ``zcount.more_z``: the change of the run's count) in compare (JSON and table), the leaderboard's CSV and the
    gate's ``--min`` / ``--max``, each equal to the counts made here."""
    no_more = 100.0 * sum(cand_z[i] <= ref_z[i] for i in ref_z) / len(ref_z)
    more = float(sum(cand_z.values()) - sum(ref_z.values()))
    assert 0 < no_more < 100 and more > 0  # each check below can fail both ways
    paired = json.loads(compared)[0]["paired"]
    assert paired["zcount.no_more_z"]["value"] == pytest.approx(no_more)
    assert paired["zcount.no_more_z"]["examples"] == len(ref_z)
    assert paired["zcount.more_z"]["value"] == more and paired["zcount.more_z"]["candidate"] == sum(cand_z.values())
    for key, figure in (("zcount.no_more_z", no_more), ("zcount.more_z", more)):
        row = next(line for line in terminal.splitlines() if line.startswith(f"| {key} "))
        assert f"{figure:.2f}" in row, row
    assert float(board["cand"]["zcount.no_more_z"]) == pytest.approx(no_more)
    assert float(board["cand"]["zcount.more_z"]) == more and float(board["ref"]["zcount.no_more_z"]) == 100.0
    assert board["ref"]["zcount.more_z"] == ""  # a run's difference from itself is left empty
    for option, code in ((f"zcount.no_more_z={no_more + 0.01}", 1), (f"zcount.no_more_z={no_more - 0.01}", 0)):
        done = _cli(gate + ["--min", option], site, cwd)
        assert done.returncode == code and "zcount.no_more_z min" in done.stdout, done.stdout + done.stderr
    done = _cli(gate + ["--max", f"zcount.more_z={more - 1}"], site, cwd)
    assert done.returncode == 1 and f"zcount.more_z {more:g} (≤ {more - 1:g} needed)" in done.stdout, done.stdout


def test_a_metric_installed_after_the_run_shows_for_it(toy_site, tmp_path):
    """The score table records its metrics: one built before the plug-in is rebuilt with its columns."""
    from whisperbench import load_run, score
    from whisperbench.scoring.metrics import METRICS, registered
    from whisperbench.scoring.table import metric_values

    ref_path, _, ref_z, _ = _hypotheses(tmp_path)
    sys.path.remove(str(toy_site))
    METRICS.reload()
    assert "zcount" not in [m.name for m in registered()]
    run = score(ref_path, BUNDLED / "shortform" / "manifest.jsonl", runs_dir=tmp_path / "runs", name="before")
    assert "zcount" not in metric_values(run.score_table())
    sys.path.insert(0, str(toy_site))
    METRICS.reload()
    assert metric_values(load_run(run.store.path).score_table())["zcount"] == {"z_letters": sum(ref_z.values())}


def test_a_kernel_that_raises_fails_that_example_value_not_the_run(caplog):
    from whisperbench import Metric, ScoredExample
    from whisperbench.types import WordCounts

    def fragile(example: ScoredExample) -> dict[str, float]:
        if example.id == "b":
            raise RuntimeError("cannot read this one")
        return {"words": float(example.transcript_words)}

    metric = Metric("fragile", "raises on b", per_example=fragile, aggregate="sum")
    examples = [ScoredExample(i, "ok", "a b", "a b", "a b", "a b", WordCounts(2, 0, 0, 0)) for i in "abc"]
    columns = metric.columns_of(examples)
    assert columns == {"words": [2.0, None, 2.0], "errors": [0.0, 1.0, 0.0]}
    assert metric.value_of(columns) == {"words": 4.0, "errors": 1}
    assert "fragile" in caplog.text and "b" in caplog.text and "cannot read this one" in caplog.text


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"per_example": None}, "give per_example or summarize"),
        ({"aggregate": "mode"}, "aggregate 'mode'"),
        ({"better": "up"}, "better must be"),
        ({"name": "z.count"}, "letters, digits"),
    ],
)
def test_a_malformed_metric_is_refused_naming_it(kwargs, message):
    from whisperbench import Metric

    settings = dict(name="zcount", description="z", per_example=lambda e: {}, aggregate="sum") | kwargs
    with pytest.raises(ValueError, match=re.escape(message)):
        Metric(**settings)


def test_a_broken_entry_point_is_left_out_with_a_warning(tmp_path, monkeypatch, caplog):
    from whisperbench.scoring.metrics import METRICS, registered

    dist = tmp_path / "broken-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[whisperbench.metrics]\nbroken = no_such_module:METRIC\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    METRICS.reload()
    try:
        names = [m.name for m in registered()]
    finally:
        METRICS.reload()
    assert "hallucination" in names and "broken" not in names
    assert "broken = no_such_module:METRIC" in caplog.text


def test_gate_thresholds_as_a_record_or_as_keywords_judge_alike(tmp_path):
    """``GateThresholds`` is the gate's one definition: the record and the keywords give the same checks, an unknown
    keyword or an out-of-range value is refused naming it, and a per-metric limit alone is a quality criterion."""
    from whisperbench import gate, score
    from whisperbench.errors import OptionError, WhisperbenchError
    from whisperbench.reports.gate_thresholds import GateThresholds

    ref_path, cand_path, _, _ = _hypotheses(tmp_path)
    manifest = BUNDLED / "shortform" / "manifest.jsonl"
    ref = score(ref_path, manifest, runs_dir=tmp_path / "runs", name="ref")
    cand = score(cand_path, manifest, runs_dir=tmp_path / "runs", name="cand")
    by_record = gate(ref, cand, thresholds=GateThresholds(min_qoi=50.0, max_wer_increase=0.0, confidence=0.9))
    by_keywords = gate(ref, cand, min_qoi=50.0, max_wer_increase=0.0, confidence=0.9)
    assert [(c.name, c.passed, c.detail) for c in by_record.checks] == [
        (c.name, c.passed, c.detail) for c in by_keywords.checks
    ]
    with pytest.raises(OptionError, match="unknown gate threshold.*min_qio"):
        gate(ref, cand, min_qio=50.0)
    with pytest.raises(OptionError, match="--min-qoi"):
        gate(ref, cand, min_qoi=150.0)
    with pytest.raises(WhisperbenchError, match="needs a quality criterion"):
        gate(ref, cand, min_coverage=50.0)
    wer_delta = by_record.comparison.candidate_wer - by_record.comparison.reference_wer
    assert by_record.code == by_keywords.code == 0  # six examples: not significant at 90 %
    assert wer_delta > 0 and gate(ref, cand, thresholds=GateThresholds(max_wer_increase=0.0)).code == 1


LONGEST = '''
from whisperbench.scoring.metrics import Display, Metric


def longest(scored, context):
    """Run level: the longest hypothesis in words, and how many hypotheses end with a question mark."""
    ok = [p for p in scored if p.status == "ok"]
    words = max(len(p.hypothesis.split()) for p in ok)
    return {"words": words, "questions": sum(p.hypothesis.endswith("?") for p in ok)}


METRIC = Metric("longest", "the longest output", summarize=longest,
                display=Display("Longest outputs", {"Longest (words)": "words", "Questions": "questions"}, "a note"))
'''


def test_an_installed_run_level_metric_gets_its_own_report_section(tmp_path, monkeypatch):
    """A run-level metric that declares a ``Display`` gets a section in the markdown and HTML reports, columns in the
    CSV and its figures in the trackers' metrics — from the registry alone, like hallucination and timing."""
    from whisperbench.reports.tracking import tracked_run
    from whisperbench.scoring.metrics import METRICS
    from whisperbench.store.runs import open_run

    site = tmp_path / "site"
    dist = site / "longest-1.0.dist-info"
    dist.mkdir(parents=True)
    (site / "longest_metric.py").write_text(LONGEST, encoding="utf-8")
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: longest\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[whisperbench.metrics]\nlongest = longest_metric:METRIC\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(site))
    METRICS.reload()
    try:
        rows = [json.loads(line) for line in RECORDED.read_text(encoding="utf-8").splitlines()]
        words = max(len(r["hypothesis"].split()) for r in rows)  # counted here, without whisperbench
        questions = sum(r["hypothesis"].endswith("?") for r in rows)
        runs = tmp_path / "runs"
        args = ["--dataset", str(BUNDLED / "shortform" / "manifest.jsonl"), "--runs-dir", str(runs)]
        assert _cli(["score", *args, "--hypotheses", str(RECORDED), "--name", "b"], site, tmp_path).returncode == 0
        for suffix in ("md", "html", "csv"):
            done = _cli(["report", "--runs-dir", str(runs), "--out", str(tmp_path / f"r.{suffix}")], site, tmp_path)
            assert done.returncode == 0, done.stderr
        section = (tmp_path / "r.md").read_text(encoding="utf-8").split("## Longest outputs")[1]
        row = next(line for line in section.splitlines() if line.endswith("| b |"))
        # a figure that is zero in every run is said once above the table (the report's rule), not in a column
        assert [c.strip() for c in row.split("|")[3:4]] == [str(words)] and "a note" in section
        assert f"In every run: Questions: {questions}." in section and questions == 0
        page = (tmp_path / "r.html").read_text(encoding="utf-8")
        assert "<h2>Longest outputs</h2>" in page and 'class="sortable longest"' in page
        table = list(csv.DictReader((tmp_path / "r.csv").open(encoding="utf-8")))
        assert float(table[0]["longest.words"]) == words and float(table[0]["longest.questions"]) == questions
        tracked = tracked_run(open_run("b", runs)).metrics
        assert (tracked["longest.words"], tracked["longest.questions"]) == (words, questions)
        assert tracked["hallucination.loops"] == 0  # the built-in sections' figures still reach the trackers
    finally:
        sys.modules.pop("longest_metric", None)
        METRICS.reload()


def test_kernel_values_are_taken_as_floats_nan_as_missing_and_infinity_as_that_example_s_failure(caplog):
    """A kernel's values as the columns hold them, whether every value is already a finite float (taken at once)
    or not (each converted): an integer becomes a float, NaN an empty value, infinity fails that example only."""
    from whisperbench import Metric, ScoredExample
    from whisperbench.types import WordCounts

    given = {"a": {"x": 1.5}, "b": {"x": 2}, "c": {"x": float("nan"), "y": 0.5}, "d": {"x": float("inf")}}
    metric = Metric("odd", "odd values", per_example=lambda e: given[e.id], aggregate="sum")
    examples = [ScoredExample(i, "ok", "a", "a", "a", "a", WordCounts(1, 0, 0, 0)) for i in "abcd"]
    assert metric.columns_of(examples[:1]) == {"x": [1.5]}
    columns = metric.columns_of(examples)
    assert columns == {"x": [1.5, 2.0, None, None], "y": [None, None, 0.5, None], "errors": [0.0, 0.0, 0.0, 1.0]}
    assert "odd" in caplog.text and "example d" in caplog.text


LONGER = '''
import whisperbench as wb


def words(scored, context):
    """Run level: the words of every successful hypothesis."""
    return {"words": sum(len(p.hypothesis.split()) for p in scored if p.status == "ok")}


METRIC = wb.Metric("longer", "words written", summarize=words, pairings=(wb.Pairing("growth", "ratio", "words"),))
'''


def _row(table: str) -> dict[str, str]:
    """The one candidate's row of compare's ``--wide`` table, by heading."""
    head, _, row = table.strip().splitlines()[:3]
    return dict(zip((c.strip() for c in head.split("|")), (c.strip() for c in row.split("|"))))


def test_an_installed_run_level_metric_with_a_pairing_reaches_compare_the_leaderboard_and_the_gate(
    tmp_path, monkeypatch, capsys
):
    """A run-level plug-in that declares a ``ratio`` pairing: its headline and its paired figure in compare (table
    and JSON), the leaderboard's CSV, and the gate's ``--max longer.growth=N``, from the declaration alone; every
    figure against a count of words made here."""
    from whisperbench.cli import main
    from whisperbench.scoring.metrics import METRICS

    site = tmp_path / "site"
    (site / "longer-1.0.dist-info").mkdir(parents=True)
    (site / "longer_metric.py").write_text(LONGER, encoding="utf-8")
    (site / "longer-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: longer\nVersion: 1.0\n")
    (site / "longer-1.0.dist-info" / "entry_points.txt").write_text(
        "[whisperbench.metrics]\nlonger = longer_metric:METRIC\n"
    )
    monkeypatch.syspath_prepend(str(site))
    METRICS.reload()
    try:
        rows = [json.loads(line) for line in RECORDED.read_text(encoding="utf-8").splitlines()]
        doubled = [
            dict(r, hypothesis=f"{r['hypothesis']} {r['hypothesis']}" if i == 0 else r["hypothesis"])
            for i, r in enumerate(rows)
        ]
        runs, counts = tmp_path / "runs", {}
        for name, data in (("ref", rows), ("cand", doubled)):
            path = tmp_path / f"{name}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
            counts[name] = sum(len(r["hypothesis"].split()) for r in data)  # counted here, without whisperbench
            args = ["score", "--dataset", "tiny-shortform", "--hypotheses", str(path), "--name", name]
            assert main(args + ["--runs-dir", str(runs)]) == 0
        growth = 100.0 * (counts["cand"] / counts["ref"] - 1.0)
        assert growth > 0
        pair = ["--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs)]
        capsys.readouterr()
        assert main(["compare", *pair, "--json"]) == 0
        compared = json.loads(capsys.readouterr().out)[0]
        assert compared["paired"]["longer.growth"]["value"] == pytest.approx(growth)
        assert compared["metrics"]["longer"]["candidate"] == {"words": counts["cand"]}
        assert main(["compare", *pair, "--wide"]) == 0
        row = _row(capsys.readouterr().out)
        assert row["longer.growth"] == f"{growth:.2f}" and row["longer.words"] == f"{float(counts['cand']):.2f}"
        out = tmp_path / "board.csv"
        assert main(["report", "--runs-dir", str(runs), "--reference", "ref", "--out", str(out), "--quiet"]) == 0
        with open(out, encoding="utf-8") as f:
            board = {r["Run"]: r for r in csv.DictReader(f)}
        assert float(board["cand"]["longer.growth"]) == pytest.approx(growth) and board["ref"]["longer.growth"] == ""
        assert (float(board["ref"]["longer.words"]), float(board["cand"]["longer.words"])) == (
            counts["ref"],
            counts["cand"],
        )
        gate = ["gate", *pair, "--max-failed-pct", "100"]
        assert main(gate + ["--max", f"longer.growth={growth - 0.5}"]) == 1
        assert main(gate + ["--max", f"longer.growth={growth + 0.5}"]) == 0
        assert "[ok] longer.growth max: longer.growth" in capsys.readouterr().out
    finally:
        sys.modules.pop("longer_metric", None)
        METRICS.reload()


@pytest.mark.parametrize(
    "named, generic",
    [
        ({"min_qoi": 90.0}, {"min": {"wer.qoi": 90.0}}),
        ({"min_qoi": 80.0, "confidence": 0.9}, {"min": {"wer.qoi": 80.0}, "confidence": 0.9}),
        ({"max_wer_increase": 5.0}, {"max": {"wer.increase": 5.0}}),
        ({"max_wer_increase": 1.0, "confidence": 0.9}, {"max": {"wer.increase": 1.0}, "confidence": 0.9}),
        ({"max_formatting_drift": 50.0}, {"max": {"formatting.drift": 50.0}}),
        ({"max_slowdown": 10.0}, {"max": {"speed.slowdown": 10.0}}),
    ],
)
def test_a_named_gate_flag_is_an_alias_of_its_pairing_s_bound(tmp_path, named, generic):
    """``--min-qoi N`` is ``--min wer.qoi=N`` (and so for each named flag a built-in pairing declares): the same
    check, the same words, the same exit code, through one mechanism."""
    from whisperbench import gate, score

    manifest = BUNDLED / "shortform" / "manifest.jsonl"
    runs = [
        score(BUNDLED / "recorded" / f"{name}.jsonl", manifest, runs_dir=tmp_path / "runs", name=name)
        for name in ("openai-whisper-base", "openai-whisper-tiny.en")
    ]
    by_flag, by_key = (gate(*runs, max_failed_pct=100.0, **limits) for limits in (named, generic))
    judged = [[(c.name, c.passed, c.detail, c.blocking) for c in r.checks] for r in (by_flag, by_key)]
    assert judged[0] == judged[1] and by_flag.code == by_key.code
    assert len(judged[0]) == 6  # the five comparability checks and the one limit
