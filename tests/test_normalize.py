"""Whisper's normalizers: openai/whisper's own test cases, and agreement with openai-whisper's module."""

import importlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whisperbench.scoring import choose_normalizer, normalize

from .conftest import SHARED_DATA, read_manifest_rows

normalize_module = importlib.import_module("whisperbench.scoring.normalize")  # the module, not the function

# Cases from openai/whisper tests/test_normalizer.py (commit 1241061), run through the full
# EnglishTextNormalizer as that file does for the number normalizer.
OPENAI_WHISPER_CASES = [
    ("two", "2"),
    ("thirty one", "31"),
    ("five twenty four", "524"),
    ("nineteen ninety nine", "1999"),
    ("twenty nineteen", "2019"),
    ("two point five million", "2500000"),
    ("four point two billions", "4200000000s"),
    ("200 thousand", "200000"),
    ("200 thousand dollars", "$200000"),
    ("$20 million", "$20000000"),
    ("€52.4 million", "€52400000"),
    ("£77 thousands", "£77000s"),
    ("two double o eight", "2008"),
    ("three thousand twenty nine", "3029"),
    ("forty three thousand two hundred sixty", "43260"),
    ("forty three thousand two hundred and sixty", "43260"),
    ("nineteen fifties", "1950s"),
    ("thirty first", "31st"),
    ("thirty three thousand and three hundred and thirty third", "33333rd"),
    ("three billion", "3000000000"),
    ("millions", "1000000s"),
    ("july third twenty twenty", "july 3rd 2020"),
    ("august twenty sixth twenty twenty one", "august 26th 2021"),
    ("3 14", "3 14"),
    ("3.14", "3.14"),
    ("3 point 2", "3.2"),
    ("3 point 14", "3.14"),
    ("fourteen point 4", "14.4"),
    ("two point two five dollars", "$2.25"),
    ("two hundred million dollars", "$200000000"),
    ("$20.1 million", "$20100000"),
    ("ninety percent", "90%"),
    ("seventy six per cent", "76%"),
    ("double oh seven", "007"),
    ("double zero seven", "007"),
    ("nine one one", "911"),
    ("nine double one", "911"),
    ("one triple oh one", "10001"),
    ("two thousandth", "2000th"),
    ("thirty two thousandth", "32000th"),
    ("minus 500", "-500"),
    ("positive twenty thousand", "+20000"),
    ("two dollars and seventy cents", "$2.70"),
    ("3 cents", "¢3"),
    ("$0.36", "¢36"),
    ("three euros and sixty five cents", "€3.65"),
    ("three and a half million", "3500000"),
    ("forty eight and a half dollars", "$48.5"),
    ("b747", "b 747"),
    ("10 th", "10th"),
    ("10th", "10th"),
    ("mobilisation", "mobilization"),
    ("cancelation", "cancellation"),
    ("Let's", "let us"),
    ("he's like", "he is like"),
    ("she's been like", "she has been like"),
    ("10km", "10 km"),
    ("10mm", "10 mm"),
    ("RC232", "rc 232"),
    ("Mr. Park visited Assoc. Prof. Kim Jr.", "mister park visited associate professor kim junior"),
]


@pytest.mark.parametrize("text,expected", OPENAI_WHISPER_CASES)
def test_openai_whisper_cases(text, expected):
    assert normalize(text, "english") == expected


def test_basic_normalizer_drops_symbols_and_case():
    assert normalize("Héllo, World! (aside) [noise]", "basic") == "héllo world"
    assert normalize("  a   b ", "none") == "a b"


def test_choose_normalizer():
    assert choose_normalizer([None, "en"]) == "english"
    assert choose_normalizer(["de"]) == "basic"
    assert choose_normalizer(["de"], model="tiny.en") == "english"
    with pytest.raises(ValueError):
        normalize("x", "klingon")


def _all_shared_texts() -> list[str]:
    texts = []
    for subset in ("shortform", "longform"):
        path = SHARED_DATA / subset / "manifest.jsonl"
        if path.exists():
            texts += [row["text"] for row in read_manifest_rows(path)]
    return texts


def _openai_whisper_normalizers():
    pytest.importorskip("whisper", reason="openai-whisper not installed (pip install 'whisperbench[openai-whisper]')")
    from whisper.normalizers import BasicTextNormalizer, EnglishTextNormalizer

    return {"english": EnglishTextNormalizer(), "basic": BasicTextNormalizer()}


def _differences(texts) -> list[tuple[str, str, str, str]]:
    """(normalizer, text, ours, openai-whisper's) wherever the two differ."""
    theirs = _openai_whisper_normalizers()
    return [
        (name, text, normalize(text, name), " ".join(theirs[name](text).split()))
        for text in texts
        for name in theirs
        if normalize(text, name) != " ".join(theirs[name](text).split())
    ]


#: words and forms where normalizers disagree: contractions (incl. whisper-normalizer's own four additions),
#: numbers, currencies, units, ordinals, British spellings, titles, fillers, brackets, marks and scripts
ADVERSARIAL = [
    "the cause of it",
    "'cause I said so",
    "because cause",
    "I kinda like it",
    "sorta true",
    "I dunno",
    "Cause",
    "gonna wanna gotta gimme lemme y'all ma'am won't can't ain't he's she'd've I'm you're it's o'clock",
    "$1,000.50",
    "£3.2 million",
    "€52.4 thousand",
    "one hundred and twenty three",
    "1st 2nd 3rd 4th 21st",
    "twenty-five percent",
    "3:45 pm",
    "the 1990s",
    "5¢",
    "¢5",
    "a 10km run",
    "RC232",
    "b747",
    "two double o seven",
    "colour organisation theatre analyse travelling",
    "Mr. Smith Jr. and Dr. Who, St. Louis",
    "hmm uh um mm mhm",
    "[music] hello (laughs) <i>world</i>",
    "naïve café Ångström ﬁnance",
    "½ ² Ⅻ",
    "hello 👋 world",
    "mañana, señor!",
    "straße groß",
    "Привет, мир",
    "你好，世界",
    "こんにちは、世界",
    "नमस्ते दुनिया",
    "مرحبا بالعالم",
    "zero\u200bwidth",
    "it's 3.14 not 3,14",
    "minus 5 plus six",
    "double oh seven",
    "nine one one",
    "two thousand and twenty-one",
]


def test_same_as_openai_whisper_module_on_transcripts_and_adversarial_strings(tiny_rows):
    """Exactly openai-whisper's English and basic normalizers: on openai/whisper's test cases, the real
    transcripts of the bundled and shared sets, and strings chosen where normalizers disagree."""
    texts = [r["text"] for r in tiny_rows] + _all_shared_texts() + [t for t, _ in OPENAI_WHISPER_CASES] + ADVERSARIAL
    assert len(texts) >= 6 + len(ADVERSARIAL)
    assert not _differences(texts)
    assert normalize("the cause of it", "english") == "the cause of it"  # whisper-normalizer says "the because of it"


def test_same_as_openai_whisper_module_on_real_hypotheses(tiny_short, shared_runs):
    """The texts models produce (the session's openai-whisper run on the bundled set), not only transcripts."""
    hypotheses = [p.hypothesis for p in shared_runs.reference(tiny_short).predictions]
    assert len(hypotheses) == 6 and all(hypotheses)
    assert not _differences(hypotheses)


WORDS = sorted({w for text in ADVERSARIAL + [t for t, _ in OPENAI_WHISPER_CASES] for w in text.split()})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS) | st.text(max_size=6), max_size=12).map(" ".join))
def test_same_as_openai_whisper_module_on_generated_sentences(text):
    assert not _differences([text])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_normalizer_fuzz_never_crashes_and_is_idempotent_on_whitespace(text):
    for name in ("english", "basic", "none"):
        out = normalize(text, name)
        assert out == out.strip() and "  " not in out


def _rules(*triples):
    return [(literal, re.compile(pattern), replacement) for literal, pattern, replacement in triples]


def test_the_rule_screen_skips_only_rules_that_cannot_fire():
    """openai-whisper's rules are screened; a rule set where a contraction rule could write a title word before the
    title rule runs, or could create a word boundary, is not (every rule is tried), so its output stays right."""
    screen = normalize_module.EnglishNormalizer()._screen
    assert screen.words is not None and screen.needs_apostrophe
    assert screen.rules_for("the cat sat") == ()  # no title word, no apostrophe
    assert len(screen.rules_for("it's here")) == len(screen.others)
    assert len(screen.rules_for("ask mr smith")) == len(screen.rules)
    writes_title = _rules(("'s", r"'s\b", "mr"), ("mr", r"\bmr\b", "mister"))
    makes_boundary = _rules(("won't", r"\bwon't\b", "will not "), ("st", r"\bst\b", "saint"))
    for rules in (writes_title, makes_boundary):
        assert normalize_module._RuleScreen.of(rules).words is None
        assert normalize_module._RuleScreen.of(rules).rules_for("plain text") == tuple(rules)
    assert normalize_module._RuleScreen.of(_rules(("st", r"\bst\b", "saint"), ("'s", r"'s\b", " mr"))).words


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(alphabet="abm_2é", min_size=1, max_size=4), min_size=1, max_size=8, unique=True),
    st.lists(st.text(alphabet="abm_2é' .,-\u00a0\u2019\u0301", max_size=12), min_size=1, max_size=20),
)
def test_the_screen_finds_a_whole_word_exactly_where_the_rules_pattern_does(words, texts):
    """The rule screen's look-up (a rule word among the text's whole words: ``normalize.whole_words``) against
    ``re``'s ``\\b(?:word|…)\\b`` on texts of word characters (letters, a digit, ``_``, a combining accent, which
    ``re`` does not take as one), apostrophes, spaces and punctuation."""
    plain = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, words), key=len, reverse=True)) + r")\b")
    for text in texts:
        found = not frozenset(words).isdisjoint(normalize_module.whole_words(text))
        assert found == (plain.search(text) is not None), (words, text)
