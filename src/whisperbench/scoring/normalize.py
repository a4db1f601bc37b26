"""Whisper's text normalizers (English and basic): exactly openai-whisper's, without PyTorch, compiled.

The rules are openai-whisper's ``whisper/normalizers`` (the number normalizer and the British-American
spelling table come from the ``whisper-normalizer`` package, which carries them). What differs is only
how they run, never what they give:

- every regular expression is compiled once; the title rules (``mr``, ``st``…) are screened by one look-up of the
  text's whole words in the set of theirs, the contraction rules by the apostrophe they all need, and a rule left
  is tried only when a literal it needs (``n't``…) is in the text (a rule whose literal is absent cannot match);
- dropping symbols and diacritics is one ``str.translate`` over a table built lazily per character
  (``unicodedata.category`` once per distinct character instead of once per character per call);
- the number normalizer's word loop is skipped when no word can start or extend a number (no digit and
  no number word, or one number word that comes back as it is when alone, such as "and", and is never next to
  itself), where it gives its input back unchanged, and runs only over the runs of number words, each
  run's result kept (a pure function of the run: "and", "one", "twenty five" come back again and again);
- the spelling table is looked up word by word only when one of its words is in the text;
- the filler, symbol and white-space rules run only when a character they need is in the text;
- normalized texts are cached by content (a bounded LRU keyed by normalizer and text), so a transcript
  scored against many hypotheses is normalized once.

``whisper-normalizer`` adds four English rules of its own ("kinda", "sorta", "dunno" and ``\\bcause\\b`` ->
"because", which turns "the cause of it" into "the because of it"); they are not openai-whisper's and not
applied here. The tests check the output against openai-whisper's own module on its test cases, the real
transcripts and hypotheses, adversarial strings and generated text.

A normalizer name may end in a script fold, ``+FOLD``, applied after the rules (off unless asked for, and
part of the name every score records): ``basic+zh-hans`` also writes traditional Chinese characters as simplified
ones (OpenCC's ``t2s``), so that a model answering in traditional characters is not charged for the script alone.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import groupby

from ..core.registry import Registry

#: script folds (``NAME+FOLD``): the OpenCC configuration each applies
FOLDS = {"zh-hans": "t2s"}
#: replacement rules ``whisper-normalizer`` adds to openai-whisper's English normalizer (not in openai/whisper)
NOT_IN_OPENAI_WHISPER = (r"\bkinda\b", r"\bsorta\b", r"\bdunno\b", r"\bcause\b")
#: distinct texts kept per normalizer in the normalized-text cache
CACHE_SIZE = 1 << 18

# non-ASCII letters that NFKD does not separate (openai-whisper's ADDITIONAL_DIACRITICS)
ADDITIONAL_DIACRITICS = {
    "œ": "oe",
    "Œ": "OE",
    "ø": "o",
    "Ø": "O",
    "æ": "ae",
    "Æ": "AE",
    "ß": "ss",
    "ẞ": "SS",
    "đ": "d",
    "Đ": "D",
    "ð": "d",
    "Ð": "D",
    "þ": "th",
    "Þ": "th",
    "ł": "l",
    "Ł": "L",
}

_BRACKETS = re.compile(r"[<\[][^>\]]*[>\]]")
_PARENTHESES = re.compile(r"\(([^)]+?)\)")
_SPACES = re.compile(r"\s+")
_IGNORE = re.compile(r"\b(hmm|mm|mhm|mmm|uh|um)\b")
_SPACE_APOSTROPHE = re.compile(r"\s+'")
_DIGIT_COMMA = re.compile(r"(\d),(\d)")
_PERIOD = re.compile(r"\.([^0-9]|$)")
_PREFIX_SYMBOL = re.compile(r"[.$¢€£]([^0-9])")
_SUFFIX_SYMBOL = re.compile(r"([^0-9])%")
_ANY_DIGIT = re.compile(r"\d")
_HALF = re.compile(r"\band\s+a\s+half\b")
_LETTER_DIGIT = re.compile(r"([a-z])([0-9])")
_DIGIT_LETTER = re.compile(r"([0-9])([a-z])")
_DIGIT_SUFFIX = re.compile(r"([0-9])\s+(st|nd|rd|th|s)\b")
_ENGLISH_KEEP = ".%$¢€£"


class _SymbolTable(dict[int, str | None]):
    """A ``str.translate`` table filled on first sight of each character (a pure function of it)."""

    def __init__(self, rule: Callable[[str], str | None]):
        super().__init__()
        self.rule = rule

    def __missing__(self, code: int) -> str | None:
        value = self[code] = self.rule(chr(code))
        return value


def _without_symbols_and_diacritics(char: str) -> str | None:
    if char in _ENGLISH_KEEP:
        return char
    if char in ADDITIONAL_DIACRITICS:
        return ADDITIONAL_DIACRITICS[char]
    category = unicodedata.category(char)
    if category == "Mn":
        return None
    return " " if category[0] in "MSP" else char


def _without_symbols(char: str) -> str:
    return " " if unicodedata.category(char)[0] in "MSP" else char


_ENGLISH_TABLE = _SymbolTable(_without_symbols_and_diacritics)
_BASIC_TABLE = _SymbolTable(_without_symbols)


def _literal(pattern: str) -> str:
    """The longest run of plain characters ``pattern`` needs (``\\bwon't\\b`` -> ``won't``)."""
    return max(re.sub(r"\\b|\$", "\0", pattern).split("\0"), key=len)


_WORD_RULE = re.compile(r"\\b(\w+)\\b")
#: a rule that replaces whole words with whole words: ``\b`` at both ends of the pattern and of its literal
_BOUNDED_RULE = re.compile(r"\\b\w.*\w\\b")

Rule = tuple[str, "re.Pattern[str]", str]  # (a literal the pattern needs, the pattern, its replacement)


def _word_character(char: str) -> str:
    """``char`` where ``re`` takes it as a word character (``\\w``: ``str.isalnum()`` or ``_``), else a space."""
    return char if char.isalnum() or char == "_" else " "


#: ``str.translate`` table that turns every character ``\b`` sees as a word boundary into a space
_WORD_BREAKS = _SymbolTable(_word_character)


def whole_words(text: str) -> list[str]:
    """The runs of word characters of ``text`` (what ``\\b\\w+\\b`` finds): ``word`` is among them exactly where
    ``\\bword\\b`` matches (a word of word characters only).

    >>> whole_words("Mr. O'Neil's st_ar, 2nd")
    ['Mr', 'O', 'Neil', 's', 'st_ar', '2nd']
    """
    return text.translate(_WORD_BREAKS).split()


@dataclass(frozen=True)
class _RuleScreen:
    """Which replacement rules can fire on a text, found with one look-up instead of one test per rule.

    The whole-word rules (``\\bmr\\b``) are screened together by their words: when none of them is among the text's
    whole words (:func:`whole_words`), none of them can fire, provided that no other rule before the last of them
    can make one (checked when the screen is built: each such rule replaces whole words by whole words, none of them
    a screened word; where that does not hold, every rule is tried). The other rules are tried only when the text
    holds the apostrophe when each of their literals does (openai-whisper's contractions).
    """

    rules: tuple[Rule, ...]
    words: frozenset[str] | None  # the whole-word rules' words; None: not screened (try every rule)
    others: tuple[Rule, ...]
    needs_apostrophe: bool

    @classmethod
    def of(cls, rules: list[Rule]) -> _RuleScreen:
        """The screen of ``rules`` (applied in their order)."""
        whole = [_WORD_RULE.fullmatch(rule[1].pattern) is not None for rule in rules]
        words = {rule[0] for rule, is_whole in zip(rules, whole) if is_whole}
        last = max((i for i, is_whole in enumerate(whole) if is_whole), default=-1)
        safe = all(
            _BOUNDED_RULE.fullmatch(pattern.pattern) is not None
            and re.fullmatch(r"\w(.*\w)?", replacement) is not None
            and words.isdisjoint(re.findall(r"\w+", replacement))
            for (_, pattern, replacement), is_whole in zip(rules[:last], whole)
            if not is_whole
        )
        screen = frozenset(words) if safe and words else None
        others = tuple(rule for rule, is_whole in zip(rules, whole) if not is_whole)
        return cls(tuple(rules), screen, others, all("'" in literal for literal, _, _ in others))

    def rules_for(self, text: str) -> tuple[Rule, ...]:
        """The rules worth trying on ``text``, in their order (every one when a whole-word rule may fire)."""
        if self.words is None or not self.words.isdisjoint(whole_words(text)):
            return self.rules
        if self.needs_apostrophe and "'" not in text:
            return ()
        return self.others


class EnglishNormalizer:
    """openai-whisper's ``EnglishTextNormalizer``, compiled (see the module doc)."""

    def __init__(self) -> None:
        from whisper_normalizer.english import EnglishNumberNormalizer, EnglishSpellingNormalizer, EnglishTextNormalizer

        rules = EnglishTextNormalizer().replacers
        self.replacers = [
            (_literal(pattern), re.compile(pattern), replacement)
            for pattern, replacement in rules.items()
            if pattern not in NOT_IN_OPENAI_WHISPER
        ]
        self._screen = _RuleScreen.of(self.replacers)
        self.numbers = EnglishNumberNormalizer()
        self.number_words = frozenset(self.numbers.words)
        #: number words that, alone between two other words, come back as they are ("and")
        self.inert_words = frozenset(w for w in self.number_words if self._number_run((w,)) == (w,))
        #: a run of number words as the number normalizer writes it (a pure function of the run; runs repeat:
        #: "and", "one", "twenty five")
        self._run = lru_cache(maxsize=8192)(self._number_run)
        self.spellings = EnglishSpellingNormalizer().mapping

    def __call__(self, s: str) -> str:
        """Normalize ``s`` exactly as openai-whisper's English normalizer does."""
        s = s.lower()
        if "<" in s or "[" in s:
            s = _BRACKETS.sub("", s)
        if "(" in s:
            s = _PARENTHESES.sub("", s)
        if "mm" in s or "mh" in s or "uh" in s or "um" in s:  # each filler holds one of them
            s = _IGNORE.sub("", s)
        if "'" in s:
            s = _SPACE_APOSTROPHE.sub("'", s)
        for literal, pattern, replacement in self._screen.rules_for(s):
            if literal in s:
                s = pattern.sub(replacement, s)
        if "," in s:
            s = _DIGIT_COMMA.sub(r"\1\2", s)
        if "." in s:
            s = _PERIOD.sub(r" \1", s)
        s = unicodedata.normalize("NFKD", s).translate(_ENGLISH_TABLE)
        words = self._numbers(s)
        if not self.spellings.keys().isdisjoint(words):
            words = [self.spellings.get(word, word) for word in words]
        s = " ".join(words)
        if "." in s or "$" in s or "¢" in s or "€" in s or "£" in s:
            s = _PREFIX_SYMBOL.sub(r" \1", s)
        if "%" in s:
            s = _SUFFIX_SYMBOL.sub(r"\1 ", s)
        if s.isascii() and s.isprintable() and "  " not in s:  # no tab, newline or double space: single-spaced
            return s
        return _SPACES.sub(" ", s)

    def _numbers(self, s: str) -> list[str]:
        """openai-whisper's ``EnglishNumberNormalizer`` (its output's words), run only on the runs of words that
        can be numbers.

        A word that is no number word and holds no digit is yielded as it is, ends any number before it,
        and, as a neighbour, acts like the start or end of the text; so the words between such words
        are normalized on their own with the same result as in the whole text. Without digits, a text whose
        only number word is an inert one ("and") that never follows itself comes back as it is.
        """
        s, digits = self._preprocess(s)
        words = s.split()
        if not digits:
            found = self.number_words.intersection(words)
            if not found or (len(found) == 1 and found <= self.inert_words and self._alone(next(iter(found)), words)):
                return words
        out: list[str] = []
        for numeric, run in groupby(words, self._may_be_number if digits else self.number_words.__contains__):
            group = tuple(run)
            out += self._run(group) if numeric else group
        s = " ".join(out)
        if "1" in s or "$" in s or "€" in s or "£" in s:  # what its postprocess's three rules each need
            s = self.numbers.postprocess(s)
        return s.split()

    def _may_be_number(self, word: str) -> bool:
        """Whether ``word`` is a number word or holds a digit (it starts or extends a run of them)."""
        return word in self.number_words or _ANY_DIGIT.search(word) is not None

    @staticmethod
    def _alone(word: str, words: list[str]) -> bool:
        """Whether ``word`` never directly follows itself in ``words`` (a cheap test that may say no wrongly)."""
        return f"{word} {word}" not in " ".join(words)

    def _number_run(self, run: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(w for w in self.numbers.process_words(list(run)) if w is not None)

    def _preprocess(self, s: str) -> tuple[str, bool]:
        """The number normalizer's ``preprocess`` of ``s``, and whether the result holds a digit (found once)."""
        if "half" in s:
            s = str(self.numbers.preprocess(s))
            return s, _ANY_DIGIT.search(s) is not None
        if not s.strip():
            return "", False
        if _ANY_DIGIT.search(s) is None:
            return s, False
        s = _LETTER_DIGIT.sub(r"\1 \2", s)  # these move digits, never remove one
        s = _DIGIT_LETTER.sub(r"\1 \2", s)
        return _DIGIT_SUFFIX.sub(r"\1\2", s), True


class BasicNormalizer:
    """openai-whisper's ``BasicTextNormalizer()`` (symbols dropped, diacritics kept), compiled."""

    def __call__(self, s: str) -> str:
        """Normalize ``s`` exactly as openai-whisper's basic normalizer does."""
        s = s.lower()
        if "<" in s or "[" in s:
            s = _BRACKETS.sub("", s)
        if "(" in s:
            s = _PARENTHESES.sub("", s)
        s = unicodedata.normalize("NFKC", s).translate(_BASIC_TABLE).lower()
        return _SPACES.sub(" ", s)


def _collapse(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Normalizer:
    """A text normalizer (``--normalizer NAME``): its name, a one-line description, ``make`` (builds the function,
    once per process) and whether a script fold (``NAME+FOLD``) may follow it."""

    name: str
    description: str
    make: Callable[[], Callable[[str], str]]
    foldable: bool = True


#: every normalizer; installed packages add theirs in the entry-point group whisperbench.normalizers
NORMALIZERS: Registry[Normalizer] = Registry(
    "normalizer",
    builtin=lambda: [
        Normalizer("english", "openai-whisper's English normalizer", EnglishNormalizer, foldable=False),
        Normalizer("basic", "openai-whisper's basic normalizer (any language)", BasicNormalizer),
        Normalizer("none", "white space collapsed only", lambda: _collapse),
    ],
    kind=Normalizer,
    group="whisperbench.normalizers",
    error=ValueError,
)


def normalizer_names() -> list[str]:
    """Every normalizer name the command line takes: each normalizer, then each foldable one with each fold."""
    found = NORMALIZERS.items()
    return [n.name for n in found] + [f"{n.name}+{fold}" for n in found if n.foldable for fold in FOLDS]


@cache
def get_normalizer(name: str) -> Callable[[str], str]:
    """Return the normalizing function called ``name`` (a name in NORMALIZERS, or ``NAME+FOLD``: see FOLDS).

    >>> get_normalizer("basic+zh-hans")("語言識別，準確率")
    '语言识别 准确率'
    """
    base, plus, fold = name.partition("+")
    if plus:
        return _folded(get_normalizer(base), fold)
    return NORMALIZERS.get(name).make()


def _folded(rule: Callable[[str], str], fold: str) -> Callable[[str], str]:
    """``rule``, then the script fold ``fold`` (OpenCC, the ``chinese`` extra)."""
    if fold not in FOLDS:
        raise ValueError(f"unknown script fold {fold!r}; choose one of {', '.join(FOLDS)}")
    try:
        import opencc
    except ImportError as exc:
        raise ValueError(f"the script fold {fold!r} needs OpenCC: pip install 'whisperbench[chinese]'") from exc
    converter = opencc.OpenCC(FOLDS[fold])

    def folded(text: str) -> str:
        return str(converter.convert(rule(text)))

    return folded


@cache
def _cached(name: str) -> Callable[[str], str]:
    rule = get_normalizer(name)

    @lru_cache(maxsize=CACHE_SIZE)
    def normalized(text: str) -> str:
        return " ".join(rule(text).split())

    return normalized


def normalize(text: str, normalizer: str = "english") -> str:
    """Normalize ``text`` and collapse white space (what WER is computed on); cached by content."""
    return _cached(normalizer)(text)


def choose_normalizer(languages: Iterable[str | None], model: str = "") -> str:
    """Whisper's choice: the English normalizer for English (or ``*.en`` models), basic otherwise."""
    langs = {lang.lower() for lang in languages if lang}
    if model.endswith(".en") or not langs or langs == {"en"} or langs == {"english"}:
        return "english"
    return "basic"
