"""The formatting metric (punctuation, casing, numbers): each figure against an independent computation (jiwer on
the raw texts, a PER worked by hand), and planted formatting changes that leave normalized WER and QoI as they
are while every formatting figure moves by exactly what was planted, and the gate catches them."""

from __future__ import annotations

import json
import re

import jiwer
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import BUNDLED

TRANSCRIPTS = {
    "a": "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.",
    "b": "The lady who had spoken English approached the table, as if looking for something.",
    "c": "He was born in nineteen ninety, not two thousand.",
    "d": "FOR A FULL HOUR HE HAD PACED UP AND DOWN",  # LibriSpeech style: not formatted
}
PLANTED = {  # a: punctuation stripped; b: case folded; c: numbers written as digits; d: untouched
    "a": "And so my fellow Americans ask not what your country can do for you ask what you can do for your country",
    "b": "the lady who had spoken english approached the table, as if looking for something.",
    "c": "He was born in 1990, not 2000.",
    "d": "FOR A FULL HOUR HE HAD PACED UP AND DOWN",
}


def _write(tmp_path, name: str, rows: dict[str, str]):
    path = tmp_path / f"{name}.jsonl"
    path.write_text(
        "".join(json.dumps({"id": i, "hypothesis": text}) + "\n" for i, text in rows.items()), encoding="utf-8"
    )
    return path


@pytest.fixture
def runs(tmp_path):
    """A manifest of the transcripts above (the bundled jfk audio: these runs score hypotheses, no model runs),
    the reference run writing them exactly, the planted candidate and an untouched copy of the reference."""
    from whisperbench import score

    audio = BUNDLED / "shortform" / "audio"
    clip = next(p for p in audio.iterdir() if p.stem == "jfk")
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(
        "".join(json.dumps({"id": i, "audio": str(clip), "text": t}) + "\n" for i, t in TRANSCRIPTS.items()),
        encoding="utf-8",
    )
    store = tmp_path / "runs"
    made = {
        name: score(_write(tmp_path, name, rows), manifest, runs_dir=store, name=name)
        for name, rows in (("ref", TRANSCRIPTS), ("planted", PLANTED), ("copy", dict(TRANSCRIPTS)))
    }
    return store, made


def test_planted_formatting_moves_each_figure_by_what_was_planted_and_nothing_else(runs):
    from whisperbench import compare

    store, made = runs
    ref, planted = made["ref"].summary, made["planted"].summary
    assert ref.wer == planted.wer == 0.0  # the normalizer erases all three changes
    assert compare(made["ref"], made["planted"]).qoi == 100.0
    formatted = [i for i in TRANSCRIPTS if i != "d"]
    assert ref.metrics["formatting"] == {
        "examples": 3,
        "f_wer": 0.0,
        "wer_c": 0.0,
        "wer_pc": 0.0,
        "per": 0.0,
        "per_by_mark": {".": 0.0, ",": 0.0, **{m: None for m in "?!\u3002\uff0c\u3001\uff1f\uff01"}},
        "per_operations": {"substitutions": 0.0, "deletions": 0.0, "insertions": 0.0},
        "casing_error_rate": 0.0,
        "itn_examples": 0,
    }
    got = planted.metrics["formatting"]
    refs, hyps = [TRANSCRIPTS[i] for i in formatted], [PLANTED[i] for i in formatted]
    assert got["f_wer"] == pytest.approx(100 * jiwer.wer(refs, hyps))  # jiwer on the raw texts, whitespace split
    no_punct = jiwer.Compose(
        [jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(), jiwer.Strip(), jiwer.ReduceToListOfListOfWords()]
    )
    assert got["wer_c"] == pytest.approx(
        100 * jiwer.wer(refs, hyps, reference_transform=no_punct, hypothesis_transform=no_punct)
    )

    def spaced(texts):  # every mark its own token (these texts hold no mark inside a word)
        return [re.sub(r"([.,])", r" \1 ", t) for t in texts]

    assert got["wer_pc"] == pytest.approx(100 * jiwer.wer(spaced(refs), spaced(hyps)))
    marks = sum(t.count(",") + t.count(".") for t in refs)  # 7 marks; the 3 of "a" stripped
    assert got["per"] == pytest.approx(100 * 3 / marks)
    assert got["per_by_mark"]["."] == pytest.approx(100 * 1 / 3) and got["per_by_mark"][","] == pytest.approx(50.0)
    words_right = (
        len(TRANSCRIPTS["a"].split()) + len(TRANSCRIPTS["b"].split()) + 5
    )  # c: its 9 words but the 4 number words
    assert got["casing_error_rate"] == pytest.approx(100 * 2 / words_right)  # "The", "English" folded
    assert got["itn_examples"] == 1 and got["examples"] == 3


def test_the_gate_fails_on_planted_formatting_and_passes_an_untouched_copy(runs):
    from whisperbench import gate

    store, made = runs
    limits = {"max_increase": {"formatting.per": 0.0, "formatting.casing_error_rate": 0.0}}
    planted = gate(made["ref"], made["planted"], min_qoi=100.0, allow_self_comparison=True, **limits)
    assert planted.code == 1
    failed = {c.name for c in planted.checks if not c.passed}
    assert failed == {"formatting.per increase", "formatting.casing_error_rate increase"}
    assert gate(made["ref"], made["copy"], min_qoi=100.0, allow_self_comparison=True, **limits).code == 0


def test_per_worked_by_hand():
    """NeMo's PER: a mark against another mark a substitution, a transcript mark left unmatched a deletion, a
    hypothesis mark an insertion, all four operations (correct ones included) the denominator."""
    from whisperbench.scoring.formatting import punctuation_counts, tokens

    # "," -> "." (a substitution); "?" after "it" moved to "!" after "Yes": a deletion and an insertion
    counts = punctuation_counts(tokens("Well, is it? Yes"), tokens("Well. is it Yes!"))
    assert (counts["errors"], counts["operations"]) == (3, 3)
    assert counts[","] == (1, 1) and counts["?"] == (1, 1) and counts["!"] == (1, 1) and counts["."] == (0, 0)


def test_nemo_test_case_gives_nemos_figures():
    """NVIDIA NeMo's own case (tests/collections/common/test_metrics.py::TestPunctuationErrorRate and the
    docstring of nemo/collections/common/metrics/punct_er.py): "Hi, dear! Nice to see you. What's" against "Hi
    dear! Nice to see you! What's?" has PER 0.75 (correct, deletion, insertion and substitution rates 0.25 each)
    and per mark: "." substituted (1.0), "," deleted (1.0), "!" correct (0.0), "?" inserted (1.0)."""
    from whisperbench.scoring.formatting import formatting_columns, formatting_value
    from whisperbench.scoring.metrics import ScoredExample
    from whisperbench.types import WordCounts

    example = ScoredExample(
        "a", "ok", "Hi, dear! Nice to see you. What's", "Hi dear! Nice to see you! What's?", "x", "x", WordCounts(1)
    )
    got = formatting_value(formatting_columns(example))
    assert got["per"] == 75.0
    assert got["per_operations"] == {"substitutions": 25.0, "deletions": 25.0, "insertions": 25.0}
    assert {m: got["per_by_mark"][m] for m in ".,!?"} == {".": 100.0, ",": 100.0, "!": 0.0, "?": 100.0}


@pytest.mark.parametrize(
    "transcript, hypothesis",
    [
        ("Yes, I know.", "Yes I, know."),
        ("Yes I, know.", "Yes, I know."),
        ("Well, I think so.", "Well I, think so."),
        ("Well I, think so.", "Well, I think so."),
        ("No, thanks.", "No thanks,."),
        ("No thanks,.", "No, thanks."),
        ("你好，世界。", "你好 世界，。"),
    ],
)
def test_a_mark_moved_to_another_word_is_a_deletion_and_an_insertion_whichever_way_it_moves(transcript, hypothesis):
    from whisperbench.scoring.formatting import punctuation_counts, tokens

    counts = punctuation_counts(tokens(transcript), tokens(hypothesis))
    assert (counts["deletions"], counts["insertions"], counts["substitutions"], counts["correct"]) == (1, 1, 0, 1)


def _nemo_counts(reference: str, hypothesis: str, marks: str) -> dict[str, dict[str, int]]:
    """NeMo's ``OccurancePunctuationErrorRate.compute_operation_amounts`` written out plainly, for the test: its
    tokenizer (words ``[\\w']+``, each mark of ``marks`` a token), the tokens with every mark masked, the full
    Levenshtein cost matrix, the backtrace from the end preferring a match, a substitution, an insertion, then
    a deletion; a match of two masks is a correct mark or a substitution, and the other marks deletions and
    insertions. Per mark: Correct, Substitutions (under the transcript's mark), Deletions, Insertions."""
    pattern = "[\\w']+|[" + re.escape(marks) + "]"
    ref, hyp = re.findall(pattern, reference), re.findall(pattern, hypothesis)
    r = ["<P>" if t in marks else t for t in ref]
    h = ["<P>" if t in marks else t for t in hyp]
    cost = [[0] * (len(h) + 1) for _ in range(len(r) + 1)]
    back = [[""] * (len(h) + 1) for _ in range(len(r) + 1)]
    for i in range(1, len(r) + 1):
        cost[i][0], back[i][0] = i, "D"
    for j in range(1, len(h) + 1):
        cost[0][j], back[0][j] = j, "I"
    for i in range(1, len(r) + 1):
        for j in range(1, len(h) + 1):
            if r[i - 1] == h[j - 1]:
                cost[i][j], back[i][j] = cost[i - 1][j - 1], "C"
                continue
            options = [(cost[i - 1][j - 1] + 1, "S"), (cost[i][j - 1] + 1, "I"), (cost[i - 1][j] + 1, "D")]
            best = min(c for c, _ in options)
            cost[i][j], back[i][j] = best, next(step for c, step in options if c == best)
    amounts = {m: {"C": 0, "S": 0, "D": 0, "I": 0} for m in marks}
    subs_to = {m: 0 for m in marks}
    i, j = len(r), len(h)
    while i > 0 or j > 0:
        step = back[i][j]
        if step == "C" and r[i - 1] == "<P>":
            if ref[i - 1] == hyp[j - 1]:
                amounts[ref[i - 1]]["C"] += 1
            else:
                amounts[ref[i - 1]]["S"] += 1
                subs_to[hyp[j - 1]] += 1
        i, j = i - (step in "CSD"), j - (step in "CSI")
    for m in marks:
        amounts[m]["D"] = ref.count(m) - amounts[m]["C"] - amounts[m]["S"]
        amounts[m]["I"] = hyp.count(m) - amounts[m]["C"] - subs_to[m]
    return amounts


_WORDS = ["yes", "I", "know", "Well", "so", "你好", "世界", "it's", "5"]
_LATIN_CJK_MARKS = ".,?!;:\u3002\uff0c\u3001\uff1f\uff01\u300c\u300d"


@st.composite
def _pair(draw):
    """A text of words and marks (Latin and CJK), and the same text with marks moved left or right, swapped,
    inserted or deleted, and now and then a word changed."""
    tokens = draw(st.lists(st.sampled_from(_WORDS + list(_LATIN_CJK_MARKS)), min_size=1, max_size=14))
    edited = list(tokens)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(edited)))
        kind = draw(st.sampled_from(["move_left", "move_right", "swap", "insert", "delete", "word"]))
        if kind == "insert":
            edited.insert(at, draw(st.sampled_from(list(_LATIN_CJK_MARKS))))
        elif at < len(edited) and kind == "delete":
            del edited[at]
        elif at < len(edited) and kind == "swap":
            edited[at] = draw(st.sampled_from(list(_LATIN_CJK_MARKS)))
        elif at < len(edited) and kind == "word":
            edited[at] = draw(st.sampled_from(_WORDS))
        elif 0 < at < len(edited) - 1:
            other = at - 1 if kind == "move_left" else at + 1
            edited[at], edited[other] = edited[other], edited[at]
    return " ".join(tokens), " ".join(edited)


@settings(max_examples=400, deadline=None)
@given(_pair())
def test_per_equals_nemos_on_random_pairs_of_latin_and_cjk_marks(pair):
    """Every count of :func:`punctuation_counts` equals NeMo's definition, written out plainly above: total, per
    operation and per mark (errors and operations), with the band of the matrix aligned in Python and with whole
    rows aligned by vector operations (the path large alignments take)."""
    from whisperbench.scoring import formatting
    from whisperbench.scoring.formatting import punctuation_counts, tokens

    transcript, hypothesis = pair
    got = punctuation_counts(tokens(transcript), tokens(hypothesis))
    banded_width = formatting._BANDED_MAX_WIDTH
    formatting._BANDED_MAX_WIDTH = 0
    try:
        assert punctuation_counts(tokens(transcript), tokens(hypothesis)) == got
    finally:
        formatting._BANDED_MAX_WIDTH = banded_width
    _assert_nemos(got, _nemo_counts(transcript, hypothesis, _LATIN_CJK_MARKS))


def _assert_nemos(got: dict, nemo: dict) -> None:
    from whisperbench.scoring.formatting import MARKS

    totals = {op: sum(m[op] for m in nemo.values()) for op in "CSDI"}
    assert (got["correct"], got["substitutions"], got["deletions"], got["insertions"]) == tuple(
        totals[op] for op in "CSDI"
    )
    assert got["operations"] == sum(totals.values()) and got["errors"] == totals["S"] + totals["D"] + totals["I"]
    for mark in MARKS:
        ops = sum(nemo[mark].values())
        assert got[mark] == (ops - nemo[mark]["C"], ops), mark


def test_per_equals_nemos_on_longer_pairs_with_many_edits():
    """300 seeded pairs of up to 60 tokens and up to 12 edits (wide bands, words changed around the marks): the
    counts equal NeMo's definition on both alignment paths."""
    import random

    from whisperbench.scoring import formatting
    from whisperbench.scoring.formatting import punctuation_counts, tokens

    rng = random.Random(66)
    vocabulary = _WORDS + list(_LATIN_CJK_MARKS)
    for _ in range(300):
        ref = rng.choices(vocabulary, k=rng.randint(1, 60))
        hyp = list(ref)
        for _ in range(rng.randint(0, 12)):
            at = rng.randrange(len(hyp) + 1)
            choice = rng.random()
            if choice < 0.3 or not hyp:
                hyp.insert(at, rng.choice(vocabulary))
            elif choice < 0.6 and at < len(hyp):
                del hyp[at]
            elif at < len(hyp):
                hyp[at] = rng.choice(vocabulary)
        transcript, hypothesis = " ".join(ref), " ".join(hyp)
        got = punctuation_counts(tokens(transcript), tokens(hypothesis))
        _assert_nemos(got, _nemo_counts(transcript, hypothesis, _LATIN_CJK_MARKS))
        banded_width, formatting._BANDED_MAX_WIDTH = formatting._BANDED_MAX_WIDTH, 0
        try:
            assert punctuation_counts(tokens(transcript), tokens(hypothesis)) == got
        finally:
            formatting._BANDED_MAX_WIDTH = banded_width


def test_chinese_marks_dropped_are_formatting_drift_and_raise_per():
    """A candidate that drops every full-width mark from Chinese output: the transcript is formatted (its marks
    are punctuation), every mark a deletion, and the parity's PER sees them."""
    from whisperbench.scoring.formatting import formatting_parity, is_formatted

    reference = ["你好，世界。", "「是的」，我知道！", "今天天气很好、对吗？"]
    stripped = ["你好世界", "是的我知道", "今天天气很好对吗"]
    assert all(is_formatted(text) for text in reference)
    parity = formatting_parity([(str(i), r, c, True) for i, (r, c) in enumerate(zip(reference, stripped))])
    assert parity["per"] == 100.0 and parity["drift_examples"] == 3


def test_a_chinese_candidate_dropping_every_mark_fails_the_drift_and_per_limits(tmp_path):
    """Scored runs in Chinese: the normalizer turns each dropped mark into a missing space ("你好 世界" against
    "你好世界"), which is still the same words (formatting.same_words), so the drift counts all three examples,
    from the score tables and from the records alike; the formatting metric measures the transcripts' marks, so
    --max-increase formatting.per has values to judge."""
    from whisperbench import compare, gate, score

    texts = {"z1": "你好，世界。", "z2": "「是的」，我知道！", "z3": "今天天气很好、对吗？"}
    clip = next(p for p in (BUNDLED / "shortform" / "audio").iterdir() if p.stem == "jfk")
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(
        "".join(
            json.dumps({"id": i, "audio": str(clip), "text": t, "language": "zh"}) + "\n" for i, t in texts.items()
        ),
        encoding="utf-8",
    )
    stripped = {i: re.sub(r"[，。「」！、？]", "", t) for i, t in texts.items()}
    ref = score(_write(tmp_path, "ref", texts), manifest, runs_dir=tmp_path / "runs", name="ref")
    cand = score(_write(tmp_path, "cand", stripped), manifest, runs_dir=tmp_path / "runs", name="cand")
    assert ref.summary.metrics["formatting"]["per"] == 0.0 and cand.summary.metrics["formatting"]["per"] == 100.0
    comparison = compare(ref, cand)
    assert comparison.formatting_drift["drift_examples"] == 3 and comparison.formatting_parity["per"] == 100.0
    records = _drifted_records(comparison.result.examples, comparison.reference.normalizer)
    assert len(records[1]) == 3
    assert gate(ref, cand, max_formatting_drift=0.0, allow_self_comparison=True).code == 1
    assert gate(ref, cand, max_increase={"formatting.per": 0.0}, allow_self_comparison=True).code == 1


@pytest.mark.parametrize(
    "text, formatted",
    [
        ("FOR A FULL HOUR HE HAD PACED", False),  # LibriSpeech
        ("you know montreal forced aligner", False),  # lower case, no punctuation
        ("For although the Chinese took impressions", True),  # mixed case
        ("it was late; we left", True),  # punctuation
    ],
)
def test_which_transcripts_count_as_formatted(text, formatted):
    from whisperbench.scoring.formatting import is_formatted

    assert is_formatted(text) is formatted
    assert is_formatted(text, override=not formatted) is (not formatted)  # the manifest's column decides


def test_a_run_without_formatted_transcripts_has_formatting_null(tmp_path):
    from whisperbench import score

    run = score(
        BUNDLED / "recorded" / "openai-whisper-base.jsonl", _librispeech_only(tmp_path), runs_dir=tmp_path / "runs"
    )
    assert "formatting" in run.summary.metrics and run.summary.metrics["formatting"] is None


def _librispeech_only(tmp_path):
    rows = [json.loads(line) for line in (BUNDLED / "shortform" / "manifest.jsonl").read_text().splitlines()]
    kept = [dict(r, audio=str((BUNDLED / "shortform" / r["audio"]).resolve())) for r in rows if r["text"].isupper()]
    path = tmp_path / "librispeech.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    return path


def test_formatting_parity_against_the_reference_run_needs_no_formatted_transcript(runs):
    """The reference run's output stands for the transcript: the planted changes are drift on 3 of 4 examples (the
    normalized words agree on all), one of them in numbers only; the gate's --max-formatting-drift reads it."""
    from whisperbench import compare, gate

    store, made = runs
    parity = compare(made["ref"], made["planted"]).formatting_parity
    assert parity.pop("drift_ids") == ["a", "b", "c"]
    marks = sum(t.count(",") + t.count(".") for t in TRANSCRIPTS.values())
    words_right = len(TRANSCRIPTS["a"].split()) + len(TRANSCRIPTS["b"].split()) + 5 + len(TRANSCRIPTS["d"].split())
    assert parity == pytest.approx(
        {
            "examples": 4,
            "drift_examples": 3,
            "drift_pct": 75.0,
            "number_drift_examples": 1,
            "per": 100 * 3 / marks,
            "casing_error_rate": 100 * 2 / words_right,
        }
    )
    assert compare(made["ref"], made["copy"]).formatting_parity["drift_examples"] == 0
    drifted = gate(made["ref"], made["planted"], max_formatting_drift=50.0, allow_self_comparison=True)
    assert drifted.code == 1 and "3 of 4 examples" in next(
        c.detail for c in drifted.checks if c.name == "formatting drift"
    )
    assert gate(made["ref"], made["copy"], max_formatting_drift=0.0, allow_self_comparison=True).code == 0


def test_parity_from_the_score_tables_and_on_several_cores_equals_the_per_object_one(runs, monkeypatch):
    """``compare`` reads the normalized outputs from the runs' score tables, and splits a large set among the
    cores: the same parity as the per-example records (each output normalized again) in one process."""
    import random

    from whisperbench import compare
    from whisperbench.scoring import engine as engine
    from whisperbench.scoring.formatting import formatting_parity

    store, made = runs
    comparison = compare(made["ref"], made["planted"])
    by_records = list(_record_pairs(comparison.result.examples, comparison.reference.normalizer))
    assert list(comparison.result.examples.output_pairs("english")) == list(by_records)
    rng = random.Random(1)
    words = "He said: no, thanks. It was 20 twenty Dollars $5 OK".split()
    pairs = [
        (f"e{i}", " ".join(rng.choices(words, k=8)), " ".join(rng.choices(words, k=8)), rng.random() < 0.3)
        for i in range(300)
    ]
    alone = formatting_parity(pairs)
    from_tables = comparison.result.examples.formatting_parity("english")
    assert from_tables == formatting_parity(_record_pairs(comparison.result.examples, "english"))
    monkeypatch.setattr(engine, "PARALLEL_MIN", 2)  # row ranges read by pool workers from the tables
    monkeypatch.setattr(engine, "idle_cpus", lambda since=None: 2)  # a pool even beside a busy test worker
    assert comparison.result.examples.formatting_parity("english") == from_tables and from_tables["drift_examples"]
    monkeypatch.setattr(engine, "PARALLEL_MIN", 10)
    assert formatting_parity(pairs) == alone and alone["drift_examples"] > 0


def test_the_drift_alone_equals_the_paritys_drift_part(runs):
    """``compare``'s table, the leaderboard and the HTML report read the drift without aligning every pair
    (``Comparison.formatting_drift``): the same figures as the full parity, from the tables and from records."""
    from whisperbench import compare
    from whisperbench.scoring.formatting import formatting_drift

    _, made = runs
    for candidate in ("planted", "copy"):
        fresh = compare(made["ref"], made[candidate])
        drift = fresh.formatting_drift  # first: computed on its own, not cut from the parity
        parity = compare(made["ref"], made[candidate]).formatting_parity
        assert drift == {k: parity[k] for k in drift} and set(drift) < set(parity)
        records = _drifted_records(fresh.result.examples, "english")
        assert formatting_drift(*records) == drift
    assert fresh.formatting_drift["drift_examples"] == 0 and drift is not None


def test_with_confidence_the_per_limit_is_judged_on_its_paired_interval(runs):
    """PER is a pooled rate over transcript marks, like WER over words: under --confidence the gate judges its
    increase on a paired bootstrap over the examples, as it does WER's. Three of seven marks lost on 3 examples: the
    point estimate exceeds 0, but the interval on so few examples reaches 0, so --max-increase formatting.per=0
    passes at 95 % and fails without --confidence."""
    from whisperbench import gate

    store, made = runs
    limits = {"max_increase": {"formatting.per": 0.0}}
    point = gate(made["ref"], made["planted"], allow_self_comparison=True, **limits)
    paired = gate(made["ref"], made["planted"], allow_self_comparison=True, confidence=0.95, **limits)
    check = next(c for c in paired.checks if c.name == "formatting.per increase")
    assert point.code == 1 and "paired 95% CI [0.00," in check.detail and check.passed and paired.code == 0
    bigger = gate(
        made["ref"],
        made["planted"],
        allow_self_comparison=True,
        confidence=0.95,
        max_increase={"formatting.per": -50.0},
    )  # a limit the whole interval lies above: fails
    assert bigger.code == 1


def test_the_html_report_shows_each_formatting_drift_with_its_differences_marked(runs):
    from whisperbench.reports.html import formatting_diff_html, render_html
    from whisperbench.reports.leaderboard import leaderboard_frame
    from whisperbench.store.runs import list_runs

    store, made = runs
    assert formatting_diff_html("He was born in nineteen ninety.", "He was born in 1990.") == (
        'He was born in <span class="sub">1990</span> <span class="del">ninety</span>.'
    )
    runs_ = [r for r in list_runs(store) if r.name in ("ref", "planted")]
    references = {made["ref"].dataset_hash: next(r for r in runs_ if r.name == "ref")}
    page = render_html(leaderboard_frame(runs_, references), runs_, references)
    drift = page.split("<h2>Formatting drift</h2>")[1]
    assert "formatting differs on 3 of 4 examples" in drift and '<span class="sub">1990</span>' in drift


def _tokens_by_hand(text: str) -> list[str]:
    """The tokenization spelled out a character at a time: a character that is neither a word character nor a
    space is a token of its own, unless it is an apostrophe, hyphen or full stop between two word characters."""
    import unicodedata

    text = unicodedata.normalize("NFC", text)
    out, current = [], ""
    for i, char in enumerate(text):
        inner = char in "'’-." and 0 < i < len(text) - 1 and _word(text[i - 1]) and _word(text[i + 1])
        if char.isspace() or not (_word(char) or inner):
            if current:
                out.append(current)
            current = ""
            if not char.isspace():
                out.append(char)
        else:
            current += char
    return out + ([current] if current else [])


def _word(char: str) -> bool:
    return re.match(r"\w", char) is not None


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(list("aZ9_ .,?!;:'’-—\"()é你$\u200b\u0301\t") + ["it's", "p.m.", "..."]), max_size=30))
def test_tokens_are_the_tokenization_spelled_out_a_character_at_a_time(parts):
    from whisperbench.scoring.formatting import tokens

    text = "".join(parts)
    assert tokens(text) == _tokens_by_hand(text)


def test_a_hypothesis_written_exactly_as_its_transcript_has_the_columns_of_the_full_alignment():
    """formatting_columns skips tokenizing and aligning a hypothesis equal to its transcript: the columns it gives
    then are those of the full alignment of the text against itself, on every formatted transcript of the bundled
    and shared sets and on texts with every mark, digits, apostrophes and non-ASCII punctuation."""
    from whisperbench.scoring import formatting
    from whisperbench.scoring.metrics import ScoredExample
    from whisperbench.types import WordCounts

    from .conftest import BUNDLED, SHARED_DATA, read_manifest_rows

    texts = ["Yes, sir. No? Yes! Well; ok: 5 p.m. isn't — “quoted” ¿qué? «non»", "A", "Hi .", "'tis 20%, $5."]
    for manifest in [BUNDLED / "shortform" / "manifest.jsonl", SHARED_DATA / "shortform" / "manifest.jsonl"]:
        if manifest.exists():
            texts += [row["text"] for row in read_manifest_rows(manifest)]
    checked = 0
    for text in texts:
        example = ScoredExample("a", "ok", text, text, "x", "x", WordCounts(1, 0, 0, 0))
        if not formatting.is_formatted(text):
            continue
        ref = formatting._Side.of(formatting.tokens(text))
        again = formatting._Side.of(formatting.tokens(text))
        assert formatting.formatting_columns(example) == formatting._aligned_columns(example, ref, again), text
        checked += 1
    assert checked >= 4


def _record_pairs(examples, normalizer: str):
    """The oracle of the tables' output pairs, from the examples' records: each output normalized again here
    (id, the reference run's output, the candidate's, whether their normalized words agree)."""
    from whisperbench.scoring import normalize
    from whisperbench.scoring.formatting import same_words

    for e in examples:
        if not e.candidate_failed:
            ref, cand = e.reference_hypothesis, e.candidate_hypothesis
            same = ref == cand or same_words(normalize(ref, normalizer), normalize(cand, normalizer))
            yield e.id, ref, cand, same


def _drifted_records(examples, normalizer: str):
    """The examples the candidate transcribed (a count) and those differing in formatting only, from records."""
    pairs = list(_record_pairs(examples, normalizer))
    return len(pairs), [(i, ref, cand) for i, ref, cand, same in pairs if same and ref != cand]
