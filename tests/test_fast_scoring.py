"""The fast scorer (compiled normalizer, rapidfuzz alignment, cached references, several cores) against the
naive loop it replaced: openai-whisper's normalizer and jiwer's ``process_words``/``process_characters`` per
pair. Counts must be equal to the last digit, figures to 1e-9."""

import random

import jiwer
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whisperbench.core.languages import cer_text, headline_metric
from whisperbench.scoring import engine as engine
from whisperbench.scoring import normalize, qoi, score_prediction, score_predictions, summarize
from whisperbench.scoring.wer import align, align_characters
from whisperbench.types import Prediction

from .conftest import SHARED_DATA, read_manifest_rows

whisper_normalizers = pytest.importorskip("whisper.normalizers", reason="openai-whisper not installed")
THEIRS = {"english": whisper_normalizers.EnglishTextNormalizer(), "basic": whisper_normalizers.BasicTextNormalizer()}


def naive_norm(text: str, normalizer: str) -> str:
    return " ".join(THEIRS[normalizer](text).split())


def jiwer_counts(process, ref: str, hyp: str) -> tuple[int, int, int, int]:
    """The old code path: jiwer, with the empty-side rule it had around it."""
    if not ref:
        return 0, 0, 0, len(hyp.split()) if process is jiwer.process_words else len(hyp)
    if not hyp:
        return 0, 0, len(ref.split()) if process is jiwer.process_words else len(ref), 0
    out = process(ref, hyp)
    return out.hits, out.substitutions, out.deletions, out.insertions


def naive_score(pred: Prediction, normalizer: str) -> dict:
    ref = naive_norm(pred.transcript, normalizer)
    hyp = naive_norm(pred.hypothesis, normalizer) if pred.status == "ok" else ""
    words = jiwer_counts(jiwer.process_words, ref, hyp)
    chars = jiwer_counts(
        jiwer.process_characters, cer_text(ref, pred.language_label), cer_text(hyp, pred.language_label)
    )
    return {"words": words, "chars": chars}


def _tuple(counts) -> tuple[int, int, int, int]:
    return counts.hits, counts.substitutions, counts.deletions, counts.insertions


def _edit(text: str, vocabulary: list[str], rng: random.Random) -> str:
    out = []
    for word in text.split():
        roll = rng.random()
        if roll < 0.08:
            out.append(rng.choice(vocabulary))
        elif roll < 0.16:
            continue
        else:
            out.append(word)
            if roll < 0.24:
                out.append(rng.choice(vocabulary))
    return " ".join(out)


def shared_pairs() -> list[Prediction]:
    """Every shared transcript against edited copies of itself (substitutions, deletions, insertions,
    repeated words: ties for the aligner), a failure and an empty hypothesis, with language labels."""
    rows = []
    for subset in ("shortform", "longform", "multilingual"):
        path = SHARED_DATA / subset / "manifest.jsonl"
        if path.exists():
            rows += read_manifest_rows(path)
    if not rows:
        pytest.skip("no shared data")
    rng = random.Random(7)
    vocabulary = sorted({w for r in rows for w in r["text"].split()})[:400] + ["the", "a", "and", "uh", "two", "2"]
    preds = []
    for i, row in enumerate(rows):
        for k in range(3):
            preds.append(
                Prediction(
                    id=f"{row['id']}-{k}",
                    transcript=row["text"],
                    hypothesis=_edit(row["text"], vocabulary, rng),
                    language_label=row.get("language"),
                )
            )
        preds.append(
            Prediction(
                id=f"{row['id']}-x",
                transcript=row["text"],
                hypothesis="",
                language_label=row.get("language"),
                status="error" if i % 2 else "ok",
                error="boom" if i % 2 else None,
            )
        )
    return preds


def test_scorer_equals_naive_loop_on_shared_data():
    """Per example, words and characters: the same hits/S/D/I as openai-whisper's normalizer + jiwer."""
    preds = shared_pairs()
    for normalizer in ("english", "basic"):
        for pred in preds:
            ours, theirs = score_prediction(pred, normalizer), naive_score(pred, normalizer)
            words, chars = ours.scored().words, ours.scored().chars
            assert (words.hits, words.substitutions, words.deletions, words.insertions) == theirs["words"], pred.id
            assert (chars.hits, chars.substitutions, chars.deletions, chars.insertions) == theirs["chars"], pred.id


def test_summary_and_qoi_equal_the_old_code_path_to_1e9():
    preds = shared_pairs()
    reference = [p for p in preds if p.id.endswith("-0")]
    candidate = [Prediction(**{**p.__dict__, "id": p.id[:-2] + "-0"}) for p in preds if p.id.endswith("-1")]
    summary = summarize(candidate, "english", "short")
    naive = [naive_score(p, "english") for p in candidate]
    words = [sum(n["words"][i] for n in naive) for i in range(4)]
    chars = [sum(n["chars"][i] for n in naive) for i in range(4)]
    assert (summary.hits, summary.substitutions, summary.deletions, summary.insertions) == tuple(words)
    assert summary.wer == pytest.approx(100 * sum(words[1:]) / sum(words[:3]), abs=1e-9)
    assert summary.cer == pytest.approx(100 * sum(chars[1:]) / sum(chars[:3]), abs=1e-9)
    result = qoi(reference, candidate, "english")
    regressed = 0
    for ref, cand in zip(reference, candidate):
        key = "chars" if headline_metric(ref.language_label) == "cer" else "words"
        ref_errors = sum(naive_score(ref, "english")[key][1:])
        regressed += sum(naive_score(cand, "english")[key][1:]) > ref_errors
    assert result.joined == len(reference)
    assert result.qoi == pytest.approx(100 * (len(reference) - regressed) / len(reference), abs=1e-9)


def test_words_only_scoring_skips_characters():
    pred = score_prediction(
        Prediction(id="a", transcript="the cat sat", hypothesis="the bat sat"), "english", characters=False
    )
    words = pred.scored().words
    assert (words.substitutions, words.hits) == (1, 2) and pred.scored().chars is None and pred.cer is None


def test_several_cores_give_the_same_predictions(monkeypatch):
    preds = shared_pairs()[:200]
    monkeypatch.setattr(engine, "PARALLEL_MIN", 10)
    assert score_predictions(preds, "english", workers=2) == [score_prediction(p, "english") for p in preds]


def test_a_score_table_built_on_several_cores_is_the_one_built_in_this_process(monkeypatch):
    """Each worker scores its part and builds its part of the table (per-example metrics included): joined in
    order, the same table and scores as in one process, to the bit."""
    from whisperbench.scoring.table import scored_table

    formatted = [Prediction(f"f{i}", "He said: no, thanks.", "he said no thanks" * (i % 3)) for i in range(20)]
    preds = shared_pairs()[:180] + formatted
    one_scored, one_table = scored_table(preds, "english", workers=1)
    monkeypatch.setattr(engine, "PARALLEL_MIN", 10)
    many_scored, many_table = scored_table(preds, "english", workers=2)
    assert list(many_scored) == list(one_scored) and many_table.equals(one_table)
    assert many_table.num_rows == 200 and "formatting.f_errors" in many_table.column_names


#: few words, so random sentences repeat words and the aligner meets ties (several shortest alignments)
TOKENS = st.sampled_from(["a", "b", "c", "the", "uh", "cat"])


@settings(max_examples=400, deadline=None)
@given(st.lists(TOKENS, max_size=12), st.lists(TOKENS, max_size=12))
def test_word_alignment_equals_jiwer_on_random_pairs(ref, hyp):
    ref, hyp = " ".join(ref), " ".join(hyp)
    assert _tuple(align(ref, hyp)) == jiwer_counts(jiwer.process_words, ref, hyp)


@settings(max_examples=400, deadline=None)
@given(st.text("abc 你好", max_size=20), st.text("abc 你好", max_size=20))
def test_character_alignment_equals_jiwer_on_random_pairs(ref, hyp):
    ref, hyp = " ".join(ref.split()), " ".join(hyp.split())
    assert _tuple(align_characters(ref, hyp)) == jiwer_counts(jiwer.process_characters, ref, hyp)


ADVERSARIAL_PAIRS = [
    ("a a a a", "a a"),
    ("a b a b a b", "b a b a"),
    ("the the the", "the cat the"),
    ("x y z", "z y x"),
    ("one two three four", "four three two one"),
    ("a", "b b b b"),
    ("a b c d e", "a x c y e z"),
]


@pytest.mark.parametrize("ref,hyp", ADVERSARIAL_PAIRS)
def test_adversarial_alignments_equal_jiwer(ref, hyp):
    assert _tuple(align(ref, hyp)) == jiwer_counts(jiwer.process_words, ref, hyp)
    assert _tuple(align(hyp, ref)) == jiwer_counts(jiwer.process_words, hyp, ref)
    assert _tuple(align_characters(ref, hyp)) == jiwer_counts(jiwer.process_characters, ref, hyp)


NUMBERISH = [
    "one",
    "two",
    "and",
    "a",
    "half",
    "point",
    "five",
    "double",
    "o",
    "oh",
    "per",
    "cent",
    "percent",
    "minus",
    "plus",
    "dollars",
    "cents",
    "thousand",
    "million",
    "hundred",
    "first",
    "twenties",
    "$",
    "£",
    "3",
    "1",
    "10th",
    "3.14",
    "1,000",
    "2nd",
    "'s",
    "won't",
    "mr.",
    "st",
    "colour",
    "the",
    "um",
    "[x]",
    "(y)",
    "café",
    "ﬁ",
    "½",
    "%",
    ".",
    ",",
    "-",
    "km",
    "10km",
    "i'm",
    "cause",
    "Ö",
    "ł",
    "\u200b",
]


def test_compiled_normalizer_equals_openai_whisper_on_a_random_corpus():
    """3,000 random sentences of number words, digits, symbols, contractions and marks (the paths the
    compiled normalizer takes short cuts on), both normalizers."""
    rng = random.Random(11)
    for _ in range(3000):
        text = " ".join(rng.choice(NUMBERISH) for _ in range(rng.randint(0, 10)))
        text = text if rng.random() < 0.7 else text.replace(" ", rng.choice(["", "  ", "\t", ", "]))
        for name in THEIRS:
            assert normalize(text, name) == naive_norm(text, name), (name, text)


# --- score tables: columnar QoI equals the per-object QoI; stale tables are rebuilt ------------------------
def _write_run(path, preds, normalizer="english"):
    import json

    from whisperbench.store.runs import PREDICTIONS, RunStore

    store = RunStore(path)
    path.mkdir(parents=True, exist_ok=True)
    store.write_info(
        {
            "adapter": "synthetic",
            "model": "none",
            "normalizer": normalizer,
            "label": path.name,
            "status": "finished",
            "dataset": {"name": "s", "form": "short", "content_hash": "h"},
        }
    )
    (path / PREDICTIONS).write_text("".join(json.dumps(p.to_json()) + "\n" for p in preds), encoding="utf-8")


def _awkward_runs():
    """Two runs with every case the join meets: ids on one side only, failures on both sides, a changed
    transcript, language labels that differ (None, "", zh, ja, de), empty references, stored and raw counts."""
    base = [p for p in shared_pairs() if p.id.endswith("-0")][:120]
    ref, cand = [], []
    for i, p in enumerate(base):
        r = Prediction(**{**p.__dict__, "id": f"u{i:03d}"})
        c = Prediction(
            **{**p.__dict__, "id": f"u{i:03d}", "hypothesis": _edit(p.transcript, ["x", "the"], random.Random(i))}
        )
        if i % 17 == 0:
            r.status, r.error = "error", "boom"
        if i % 13 == 0:
            c.status, c.error, c.hypothesis = "error", "boom", ""
        if i % 11 == 0:
            c.transcript = p.transcript + " extra words"
        if i % 7 == 0:
            r.language_label, c.language_label = [("zh", None), (None, "ja"), ("", "zh"), ("de", "zh"), (None, None)][
                i % 5
            ]
        if i % 19 == 0:
            r.transcript = c.transcript = "[noise]"
        ref.append(score_prediction(r, "english") if i % 2 else r)
        cand.append(score_prediction(c, "english") if i % 3 else c)
    ref.append(Prediction(id="only-ref", transcript="a b", hypothesis="a b"))
    cand.append(Prediction(id="only-cand", transcript="a b", hypothesis="a"))
    return ref, cand


def test_columnar_qoi_equals_per_object_qoi(tmp_path):
    from whisperbench.reports import compare_runs
    from whisperbench.store.runs import open_run

    ref, cand = _awkward_runs()
    _write_run(tmp_path / "ref", ref)
    _write_run(tmp_path / "cand", cand)
    comparison = compare_runs(open_run(str(tmp_path / "ref")), open_run(str(tmp_path / "cand")))
    expected = qoi(ref, cand, "english")
    got = comparison.result
    assert got.text_mismatch and got.reference_failed and got.candidate_failed and got.only_in_reference
    assert list(got.examples) == expected.examples
    assert got.to_json() == expected.to_json()
    assert got.worst(8) == expected.worst(8) and got.by_language() == expected.by_language()
    assert comparison.reference_wer == summarize(ref, "english", "short").wer
    assert comparison.candidate_wer == summarize(cand, "english", "short").wer


def test_stale_score_table_is_detected_and_rebuilt(tmp_path):
    import json

    from whisperbench.reports import compare_runs
    from whisperbench.store.runs import PREDICTIONS, open_run

    ref, cand = _awkward_runs()
    _write_run(tmp_path / "ref", ref)
    _write_run(tmp_path / "cand", cand)
    compare_runs(open_run(str(tmp_path / "ref")), open_run(str(tmp_path / "cand")))
    table = tmp_path / "cand" / "scores-english.arrow"
    assert table.exists()
    fresh = open_run(str(tmp_path / "cand"))
    assert fresh._predictions is None  # a fresh table: predictions.jsonl is not read
    extra = Prediction(id="only-ref", transcript="a b", hypothesis="c d e")
    with open(tmp_path / "cand" / PREDICTIONS, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(extra.to_json()) + "\n")  # appended after the table was built: stale
    before = table.stat().st_mtime_ns
    stale = open_run(str(tmp_path / "cand"))  # stale: rebuilt on opening, from every line
    assert table.stat().st_mtime_ns != before and stale.num_predictions == len(cand) + 1
    again = compare_runs(open_run(str(tmp_path / "ref")), stale)
    assert again.result.to_json() == qoi(ref, cand + [extra], "english").to_json()
    assert again.candidate_wer == summarize(cand + [extra], "english", "short").wer
    table.write_bytes(b"not an arrow file")  # unreadable: rebuilt, never an error
    assert (
        compare_runs(open_run(str(tmp_path / "ref")), open_run(str(tmp_path / "cand"))).result.qoi == again.result.qoi
    )
    assert open_run(str(tmp_path / "cand"))._predictions is None


def test_score_table_keeps_the_last_line_per_id_in_bounded_chunks(tmp_path):
    """Built a chunk at a time, the table has the run store's rows: one per id, the last line, first order."""
    from whisperbench.scoring.table import score_table, score_table_of_chunks
    from whisperbench.store.runs import RunStore

    preds = [Prediction(id=f"u{i % 7}", transcript="a b c", hypothesis="a " * (i % 4)) for i in range(20)]
    _write_run(tmp_path / "r", preds)
    store = RunStore(tmp_path / "r")
    with open(store.predictions_path, "a", encoding="utf-8") as fh:
        fh.write('{"id": "cut sh')  # a write cut short: ignored
    chunked = score_table_of_chunks(store.prediction_chunks(size=3), "english")
    assert chunked.equals(score_table(store.read_predictions(), "english"))
    assert chunked["id"].to_pylist() == [f"u{i}" for i in range(7)]


def test_html_explorer_shows_the_worst_rows_of_a_large_comparison(tmp_path):
    from whisperbench.reports import compare_runs
    from whisperbench.reports.html import EXPLORER_ROWS, _explorer
    from whisperbench.store.runs import open_run

    n = EXPLORER_ROWS + 100
    _write_run(
        tmp_path / "ref", [Prediction(id=f"u{i:04d}", transcript="a b c d", hypothesis="a b c d") for i in range(n)]
    )
    _write_run(
        tmp_path / "cand",
        [Prediction(id=f"u{i:04d}", transcript="a b c d", hypothesis="a" if i % 2 else "x b c d") for i in range(n)],
    )
    html = _explorer(compare_runs(open_run(str(tmp_path / "ref")), open_run(str(tmp_path / "cand"))))
    assert f"{n} regressed of {n} (the {EXPLORER_ROWS} worst shown)" in html
    assert html.count('<tr class="regressed"') == EXPLORER_ROWS
    assert html.count('data-value="3"') == n // 2 and html.index('data-value="3"') < html.index('data-value="1"')


def test_worst_regressions_from_columns_equal_the_sorted_records(tmp_path):
    """``worst(n)`` picks its rows from the columns (ties broken by id, ids stored out of order): the same
    examples, in the same order, as sorting every regressed record."""
    from whisperbench.reports import compare_runs
    from whisperbench.store.runs import open_run

    rng = np.random.default_rng(3)
    ids = [f"u{i:04d}" for i in rng.permutation(300)]
    hyps = ["a b c d", "a b c", "a b", "a", "x b c d", "x y c d", ""]
    _write_run(
        tmp_path / "ref", [Prediction(id=i, transcript="a b c d", hypothesis=hyps[rng.integers(0, 3)]) for i in ids]
    )
    _write_run(
        tmp_path / "cand", [Prediction(id=i, transcript="a b c d", hypothesis=hyps[rng.integers(0, 7)]) for i in ids]
    )
    result = compare_runs(open_run(str(tmp_path / "ref")), open_run(str(tmp_path / "cand"))).result
    everything = sorted((e for e in result.examples if e.regressed), key=lambda e: (-e.delta_errors, e.id))
    assert len(everything) > 50 and len({e.delta_errors for e in everything}) > 2
    for n in (0, 1, 7, 50, len(everything), len(everything) + 5):
        assert result.worst(n) == everything[:n], n


def _fails_at_six(items, start, stop):
    if 6 in items[start:stop]:
        raise ValueError("range with 6")
    return list(items[start:stop])


def test_the_workers_end_after_the_ranges_whether_they_all_succeed_or_one_fails():
    """map_ranges returns once every result is in and its workers have ended (it leaves no worker behind); a
    range that raises raises in the caller, the ranges not started are dropped, the workers waited for."""
    import multiprocessing

    from whisperbench.scoring.engine import map_ranges

    parts = map_ranges(_fails_at_six, list(range(6)), 6, workers=2, minimum=1)
    assert [x for part in parts for x in part] == list(range(6))
    with pytest.raises(ValueError, match="range with 6"):
        map_ranges(_fails_at_six, list(range(40)), 40, workers=2, minimum=1)
    assert not multiprocessing.active_children()
