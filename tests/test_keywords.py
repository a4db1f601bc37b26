"""Keywords: the manifest column and the --keywords file (datasets/keywords.py), and the keywords metric
(scoring/keywords.py) checked against OpenBench's counting, by hand on planted cases and against a transliteration of
its loops on random pairs."""

import json
import random

import pytest

import whisperbench as wb
from whisperbench.cli import main
from whisperbench.datasets import load_dataset
from whisperbench.datasets.keywords import read_keywords_file, terms_of
from whisperbench.errors import DatasetError
from whisperbench.reports.keywords import keywords_html
from whisperbench.scoring import keywords as kw
from whisperbench.scoring.metrics import ScoredExample
from whisperbench.types import ColumnMap, Prediction, WordCounts

from .conftest import BUNDLED

RECORDED = BUNDLED / "recorded"


def _manifest(tmp_path, tiny_rows, cells, column="keywords", name="qa.jsonl"):
    """The bundled short-form rows with ``cells`` (by id) in ``column``, audio paths made absolute."""
    base = BUNDLED / "shortform"
    rows = [
        dict(r, audio=str(base / r["audio"])) | ({column: cells[r["id"]]} if r["id"] in cells else {})
        for r in tiny_rows
    ]
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --- keywords in the data ---------------------------------------------------------------------------------------


def test_a_keywords_cell_is_a_list_or_a_string_split_on_semicolons_or_bars():
    assert terms_of("New York; Wojciech|GDPR ;", "row") == ["New York", "Wojciech", "GDPR"]
    assert terms_of(["New York", " GDPR "], "row") == ["New York", "GDPR"]
    with pytest.raises(DatasetError, match=r"qa.jsonl line 2 \(id x\): keywords must be .* not a list holding"):
        terms_of(["ok", 3], "qa.jsonl line 2 (id x)")


def test_the_keywords_column_reaches_each_example_and_its_prediction(tmp_path, tiny_rows):
    path = _manifest(tmp_path, tiny_rows, {"jfk": "Americans; fellow Americans", "1089-134691-0001": ["hour"]})
    examples = {e.id: e for e in load_dataset(str(path)).dataset.examples}
    assert examples["jfk"].extra["keywords"] == ["Americans", "fellow Americans"]
    assert examples["1089-134691-0001"].extra["keywords"] == ["hour"]
    assert "keywords" not in examples["LJ001-0003"].extra
    assert Prediction.for_example(examples["jfk"]).extra["keywords"] == ["Americans", "fellow Americans"]


def test_a_mapped_keywords_column_is_read_and_recorded(tmp_path, tiny_rows):
    path = _manifest(tmp_path, tiny_rows, {"jfk": "Americans"}, column="entities")
    loaded = load_dataset(str(path), columns=ColumnMap(keywords="entities")).dataset
    assert next(e for e in loaded.examples if e.id == "jfk").extra["keywords"] == ["Americans"]
    assert ColumnMap(keywords="entities").to_json() == {"keywords": "entities"}
    with pytest.raises(DatasetError, match="--keywords-column 'terms': no such column"):
        load_dataset(str(path), columns=ColumnMap(keywords="terms"))


def test_a_bad_keywords_cell_names_the_row_and_example(tmp_path, tiny_rows):
    path = _manifest(tmp_path, tiny_rows, {"jfk": 7})
    with pytest.raises(DatasetError, match=r"qa.jsonl line 1 \(id jfk\): keywords must be a list of strings"):
        load_dataset(str(path))


def test_a_keywords_file_one_term_a_line_and_its_errors(tmp_path):
    good = tmp_path / "terms.txt"
    good.write_text("# product names\nWhisperKit\n\nNew York\nWhisperKit\n", encoding="utf-8")
    assert read_keywords_file(str(good)) == ["WhisperKit", "New York"]
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"--keywords .*empty.txt: no term in it"):
        read_keywords_file(str(empty))
    with pytest.raises(DatasetError, match=r"--keywords .*absent.txt: cannot read it"):
        read_keywords_file(str(tmp_path / "absent.txt"))


def test_score_with_a_keywords_file_gives_every_example_its_terms(tmp_path, tiny_rows, capsys):
    path = _manifest(tmp_path, tiny_rows, {"jfk": "Americans"})
    terms = tmp_path / "terms.txt"
    terms.write_text("country\n", encoding="utf-8")
    runs = tmp_path / "runs"
    args = ["score", "--dataset", str(path), "--hypotheses", str(RECORDED / "openai-whisper-tiny.en.jsonl")]
    assert main(args + ["--keywords", str(terms), "--runs-dir", str(runs), "--name", "k"]) == 0
    run = wb.load_run("k", runs)
    by_id = {p.id: p for p in run.predictions}
    assert by_id["jfk"].extra["keywords"] == ["Americans", "country"]
    assert all(p.extra["keywords"][-1] == "country" for p in run.predictions)
    assert run.meta.dataset.extra["keywords_file"] == {"path": str(terms), "terms": 1}
    # "Americans" once and "country" twice in the transcripts, all three written right by tiny.en
    value = run.summary.metrics["keywords"]
    assert (value["occurrences"], value["true_positives"], value["false_positives"]) == (3, 3, 0)
    assert value["recall"] == value["precision"] == value["f1"] == 100.0 and value["span_error_rate"] == 0.0
    assert value["terms"] == 2  # distinct: "country" is given to all six examples, "Americans" to one
    assert main(args + ["--keywords", str(tmp_path / "none.txt"), "--runs-dir", str(runs), "--name", "x"]) == 2
    assert "none.txt: cannot read it" in capsys.readouterr().err and not (runs / "x").exists()


# --- OpenBench's counts, by hand ---------------------------------------------------------------------------------

#: (terms, reference, hypothesis, (tp, gt, fp), (span errors, span words)), each derived by hand from OpenBench's
#: compute_keyword_stats: the 1-gram pass counts gt/tp on reference words that are terms and, elif, fp on hypothesis
#: words that are terms; the n-gram passes count gt/tp on reference windows and fp on hypothesis windows that are a
#: term unlike the reference words aligned with them.
PLANTED = {
    "deleted": (["Wojciech"], "We met Wojciech today.", "we met today", (0, 1, 0), (1, 1)),
    "substituted": (["Wojciech"], "We met Wojciech today.", "we met Voytek today", (0, 1, 0), (1, 1)),
    # "him" is no term and the hypothesis writes one against it: a false positive, nothing to find
    "inserted against a word": (["Wojciech"], "we met him today", "we met Wojciech today", (0, 0, 1), (0, 0)),
    "inserted between words": (["Wojciech"], "we met today", "we met Wojciech today", (0, 0, 1), (0, 0)),
    "two-word term half right": (["New York"], "I love New York.", "i love new work", (0, 1, 0), (1, 2)),
    "two-word term right": (["New York"], "I love New York.", "I love new york!", (1, 1, 0), (0, 2)),
    "term twice, once right": (["Paris"], "Paris is not Paris", "paris is not parish", (1, 2, 0), (1, 2)),
    # a two-word term written where the reference has other words: the hypothesis window is the false positive
    "two-word term inserted": (["New York"], "a new work", "a new york", (0, 0, 1), (0, 0)),
    # a one-word term written for another term: OpenBench's elif counts no false positive
    "term for another term": (["Anna", "Hanna"], "Anna came", "Hanna came", (0, 1, 0), (1, 1)),
    # a deletion inside a two-word reference window: the hypothesis side has <eps> there, no hit
    "inner word deleted": (["New York City"], "in New York City now", "in new city now", (0, 1, 0), (1, 3)),
    # an insertion between a term's words: the reference window's aligned words are still the term (OpenBench looks
    # at the words aligned with the term's words only); the span counts the insertion inside it
    "insertion inside": (["New York"], "New York", "new big york", (1, 1, 0), (1, 2)),
    # an empty hypothesis (a failed example): every occurrence missed, every term word a deletion
    "failed": (["Paris", "New York"], "Paris or New York", "", (0, 2, 0), (3, 3)),
}


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_openbench_counts_on_planted_cases(case):
    terms, reference, hypothesis, (tp, gt, fp), (span_errors, span_words) = PLANTED[case]
    stats = kw.keyword_stats(reference, hypothesis, terms)
    assert (stats.total("tp"), stats.total("gt"), stats.total("fp")) == (tp, gt, fp)
    assert (stats.span_errors, stats.span_words) == (span_errors, span_words)


def test_terms_are_normalized_as_the_texts_are():
    assert kw.normalized_terms(["GDPR.", "gdpr", "  New   York ", "(silence)", "Kraków"]) == [
        "gdpr",
        "new york",
        "kraków",
    ]


def _openbench(pairs, terms):
    """OpenBench's compute_keyword_stats counting loops, transliterated (their structure: the index walks with the
    window reset to its second item), on a given alignment: the independent computation of the counts."""
    stat = {t: [0, 0, 0] for t in terms}
    for ref, hyp in pairs:
        if ref in stat:
            stat[ref][1] += 1
            stat[ref][0] += ref == hyp
        elif hyp in stat:
            stat[hyp][2] += 1
    for order in range(2, max(len(t.split()) for t in terms) + 1):
        for side in (0, 1):
            idx, item = 0, []
            while idx < len(pairs):
                if item:
                    item = [item[1]]
                    idx = item[0][1] + 1
                while len(item) != order and idx < len(pairs):
                    word = pairs[idx][side]
                    idx += 1
                    if word != kw.EPS:
                        item.append((word, idx - 1))
                if len(item) == order:
                    own = " ".join(w for w, _ in item)
                    other = " ".join(pairs[i][1 - side] for _, i in item)
                    if own in stat:
                        if side == 0:
                            stat[own][1] += 1
                            stat[own][0] += own == other
                        elif own != other:
                            stat[own][2] += 1
    return [sum(v[i] for v in stat.values()) for i in range(3)]


def test_openbench_counts_on_random_pairs():
    rng = random.Random(7)
    vocabulary = ["new", "york", "city", "paris", "anna", "the", "a", "of", "met", "in"]
    terms = ["new york", "paris", "anna", "new york city", "the city"]
    for _ in range(500):
        ref = [rng.choice(vocabulary) for _ in range(rng.randint(0, 12))]
        hyp = [rng.choice(vocabulary) for _ in range(rng.randint(0, 12))] if rng.random() < 0.5 else list(ref)
        for _ in range(rng.randint(0, 3)):  # a few edits of a copy: alignments with matches to count on
            if hyp:
                hyp[rng.randrange(len(hyp))] = rng.choice(vocabulary)
        stats = kw.keyword_stats(" ".join(ref), " ".join(hyp), terms)
        expected = _openbench(kw.aligned(ref, hyp), terms)
        assert [stats.total("tp"), stats.total("gt"), stats.total("fp")] == expected, (ref, hyp)


def test_against_texterrors_where_it_is_installed():
    """OpenBench aligns with texterrors (not a dependency here): where it is installed, its alignments of random
    pairs are minimal too (so they differ from rapidfuzz's by ties only), and wherever the two alignments agree the
    counts equal OpenBench's loops on texterrors' alignment. Offline, 2026-11-29 (texterrors 1.1.9): the alignments
    agreed on 1,400 of 2,000 such pairs and the counts on 1,884 (docs/keywords.md)."""
    texterrors = pytest.importorskip("texterrors")
    from rapidfuzz.distance import Levenshtein

    rng = random.Random(11)
    vocabulary = ["new", "york", "city", "paris", "anna", "the", "a", "of", "met", "in"]
    terms = ["new york", "paris", "anna", "new york city", "the city"]
    for _ in range(300):
        ref = [rng.choice(vocabulary) for _ in range(rng.randint(1, 12))]
        hyp = [rng.choice(vocabulary) for _ in range(rng.randint(0, 12))]
        theirs = list(zip(*texterrors.align_texts(ref, hyp, use_chardiff=False)[:2]))
        assert sum(r != h for r, h in theirs) == Levenshtein.distance(ref, hyp)
        if theirs == kw.aligned(ref, hyp):
            stats = kw.keyword_stats(" ".join(ref), " ".join(hyp), terms)
            assert [stats.total("tp"), stats.total("gt"), stats.total("fp")] == _openbench(theirs, terms)


def test_the_alignment_is_a_levenshtein_alignment():
    """Random pairs: the aligned words, read side by side, give back both texts, and the pairs that differ are as
    many as rapidfuzz's word distance (the alignment is minimal)."""
    from rapidfuzz.distance import Levenshtein

    rng = random.Random(3)
    for _ in range(200):
        ref = [rng.choice("abcde") for _ in range(rng.randint(0, 9))]
        hyp = [rng.choice("abcde") for _ in range(rng.randint(0, 9))]
        pairs = kw.aligned(ref, hyp)
        assert [r for r, _ in pairs if r != kw.EPS] == ref and [h for _, h in pairs if h != kw.EPS] == hyp
        assert sum(r != h for r, h in pairs) == Levenshtein.distance(ref, hyp)


# --- the metric ----------------------------------------------------------------------------------------------------


def _example(i, reference, hypothesis, terms):
    return ScoredExample(str(i), "ok", reference, hypothesis, "", "", WordCounts(0, 0, 0, 0), extra={"keywords": terms})


def test_the_run_value_pools_the_counts():
    cases = [
        PLANTED[c] for c in ("deleted", "two-word term right", "inserted against a word", "term twice, once right")
    ]
    examples = [_example(i, ref, hyp, terms) for i, (terms, ref, hyp, _, _) in enumerate(cases)]
    examples.append(ScoredExample("none", "ok", "hi", "hi", "hi", "hi", WordCounts(1, 0, 0, 0)))  # no terms: no value
    value = kw.METRIC.value_of(kw.METRIC.columns_of(examples))
    # tp 0+1+0+1 = 2, gt 1+1+0+2 = 4, fp 0+0+1+0 = 1; span errors 1+0+0+1 over words 1+2+0+2
    assert value["occurrences"] == 4 and value["true_positives"] == 2 and value["false_positives"] == 1
    assert value["recall"] == pytest.approx(50.0) and value["precision"] == pytest.approx(200 / 3)
    assert value["f1"] == pytest.approx(2 * 50 * (200 / 3) / (50 + 200 / 3))
    assert value["span_error_rate"] == pytest.approx(40.0)
    assert kw.METRIC.value_of(kw.METRIC.columns_of(examples[-1:])) is None  # no example with terms: no value


def test_summary_counts_each_distinct_term_once():
    """summary.json's ``terms``: the distinct normalized terms over the run ("New York" and "new york." one term,
    the same term in several examples once), not the sum of each example's count (5 here)."""
    from whisperbench.scoring.figures import summarize

    predictions = [
        Prediction(
            "a",
            "I met Wojciech in New York",
            "i met voy check in new york",
            extra={"keywords": ["Wojciech", "New York"]},
        ),
        Prediction("b", "new york again", "new york again", extra={"keywords": ["new york.", "Kraków"]}),
        Prediction("c", "and Kraków", "and krakow", extra={"keywords": ["Kraków"]}),
        Prediction("d", "nothing here", "nothing here"),
    ]
    value = summarize(predictions, "english", "short").metrics["keywords"]
    assert value["terms"] == 3 and value["occurrences"] == 4 and list(value)[0] == "terms"
    assert summarize(predictions[-1:], "english", "short").metrics["keywords"] is None  # no terms: no value


def test_a_run_without_hits_has_zero_f1_and_without_writings_no_precision():
    value = kw.METRIC.value_of(kw.METRIC.columns_of([_example(0, "we met Wojciech", "we met", ["Wojciech"])]))
    assert value["recall"] == 0.0 and value["precision"] is None and value["f1"] is None
    wrong = _example(1, "we met him", "we met Wojciech", ["Wojciech"])
    value = kw.METRIC.value_of(kw.METRIC.columns_of([wrong]))
    assert value["recall"] is None and value["precision"] == 0.0 and value["f1"] is None


def test_the_term_table_puts_the_worst_terms_first_with_their_misses():
    rows = kw.term_table(
        [
            ("a", "Paris is not Paris", "paris is not parish", ["Paris", "Lyon"]),
            ("b", "I love New York", "i love new work", ["New York"]),
            ("c", "Paris again", "paris again", ["Paris"]),
        ]
    )
    assert [(r.term, r.occurrences, r.hits, r.missed_in) for r in rows] == [
        ("new york", 1, 0, ["b"]),
        ("paris", 3, 2, ["a"]),
        ("lyon", 0, 0, []),
    ]
    assert rows[1].recall == pytest.approx(200 / 3) and rows[2].recall is None


# --- the documented commands ---------------------------------------------------------------------------------------


def _documented(heading, tmp_path, monkeypatch):
    """The exit codes of the first ``bash`` block under ``heading`` in docs/keywords.md, each line run as written
    (``whisperbench`` as :func:`main`) in ``tmp_path``, where ``datasets`` is the repository's; and the page."""
    import re
    import shlex

    from .conftest import REPO

    text = (REPO / "docs" / "keywords.md").read_text(encoding="utf-8")
    block = re.search(rf"## {heading}.*?```bash\n(.*?)```", text, re.S).group(1)
    commands = [shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    (tmp_path / "datasets").symlink_to(REPO / "datasets")
    monkeypatch.chdir(tmp_path)
    codes = []
    for argv in commands:
        assert argv[0] == "whisperbench"
        codes.append(main(argv[1:]))
    return codes, text


def test_the_documented_commands_run_as_written(tmp_path, monkeypatch, capsys):
    """docs/keywords.md's first command block, run as written on the bundled clips: base wrote "poisoning" and "two
    duties" right in 1998-15444-0000, tiny.en did not; the per-term rule fails naming them, the recall limit of 5
    points at 95 % confidence passes (6 examples: the interval reaches 0), the report has both tables."""
    codes, text = _documented("Commands", tmp_path, monkeypatch)
    assert codes == [0, 0, 0, 1, 0, 0]
    out = capsys.readouterr().out
    assert "keywords newly missed: poisoning (1998-15444-0000), two duties (1998-15444-0000)" in out
    assert "[FAIL] keywords kept: newly missed: poisoning (1998-15444-0000), two duties (1998-15444-0000)" in out
    assert "keywords: recall 66.7% → 44.4% (paired -22.2 points, 95% CI [-66.67, 0.00])" in out
    assert "tiny: keywords: recall 66.7% → 44.4% (paired -22.2 points, 95% CI [-66.67, 0.00])" in text
    report = (tmp_path / "kw-runs" / "leaderboard.md").read_text(encoding="utf-8")
    assert "## Keywords" in report and "| poisoning | 1 | 0.0 | 1998-15444-0000 |" in report
    runs = tmp_path / "kw-runs"
    html = keywords_html([wb.load_run("tiny", runs)])
    assert "<h2>Keywords by term</h2>" in html and "<td>poisoning</td>" in html and "1998-15444-0000" in html
    # without --confidence the drop of 22.2 points is judged as it is: past 5, a failure naming both values
    check = next(
        c
        for c in wb.gate("base", "tiny", runs_dir=runs, max_decrease={"keywords.recall": 5}).checks
        if c.name == "keywords.recall decrease"
    )
    assert not check.passed and "keywords.recall 66.6667 → 44.4444" in check.detail


def test_a_qa_set_with_a_keywords_column_runs_reports_and_gates(tmp_path, monkeypatch, capsys):
    """docs/keywords.md's QA-set block, run as written: the `entities` column (lists and `;`/`|` strings) reaches
    every example through `run`, and compare, the gate and the report name the terms tiny.en lost."""
    codes, _ = _documented("A QA set with its own keywords column", tmp_path, monkeypatch)
    assert codes == [0, 0, 0, 1, 0]
    out = capsys.readouterr().out
    assert "[FAIL] keywords kept: newly missed: poisoning (1998-15444-0000), two duties (1998-15444-0000)" in out
    assert "tiny: keywords newly missed: poisoning (1998-15444-0000), two duties (1998-15444-0000)" in out
    runs = tmp_path / "qa-runs"
    run = wb.load_run("base", runs)
    assert run.meta.dataset.columns == {"keywords": "entities"}
    assert {p.id: p.extra.get("keywords") for p in run.predictions}["libritts-5319_84357_000005_000004"] == [
        "Beaton",
        "English",
    ]
    value = run.summary.metrics["keywords"]  # the nine terms of keywords.txt, each in one clip
    assert (value["terms"], value["occurrences"], value["true_positives"]) == (9, 9, 6)
    report = (runs / "leaderboard.md").read_text(encoding="utf-8")
    assert "## Keywords by term" in report and "| poisoning | 1 | 0.0 | 1998-15444-0000 |" in report


def test_must_keep_keywords_cannot_judge_without_keywords(tmp_path):
    runs = tmp_path / "runs"
    for name in ("base", "tiny"):
        hyps = RECORDED / f"openai-whisper-{'base' if name == 'base' else 'tiny.en'}.jsonl"
        assert (
            main(
                [
                    "score",
                    "--dataset",
                    "tiny-shortform",
                    "--hypotheses",
                    str(hyps),
                    "--runs-dir",
                    str(runs),
                    "--name",
                    name,
                ]
            )
            == 0
        )
    result = wb.gate("base", "tiny", runs_dir=runs, must_keep_keywords=True)
    check = next(c for c in result.checks if c.name == "keywords kept")
    assert not check.passed and "no keywords: cannot judge" in check.detail and result.code == 2


def test_must_keep_keywords_is_a_quality_criterion_and_a_zero_limit_stays_one():
    from whisperbench.reports.gate_thresholds import GateThresholds

    assert GateThresholds(must_keep_keywords=True).quality_criteria() == ["must_keep_keywords"]
    assert GateThresholds(max_wer_increase=0.0).quality_criteria() == ["max_wer_increase"]  # 0 is a limit, not off
    assert GateThresholds().quality_criteria() == []
