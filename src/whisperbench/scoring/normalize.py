"""Whisper's text normalizers (English and basic): exactly openai-whisper's, without PyTorch.

The ``whisper-normalizer`` package carries openai-whisper's ``whisper/normalizers`` rules, plus four
English contraction rules of its own ("kinda", "sorta", "dunno" and ``\bcause\b`` -> "because", which
turns "the cause of it" into "the because of it"). Those four are taken out here, so both normalizers
give what openai-whisper's module gives; the tests check that on openai/whisper's normalizer cases, on
real transcripts and hypotheses, and on adversarial strings, against openai-whisper's own module.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Iterable, Optional, cast

NORMALIZERS = ("english", "basic", "none")
#: replacement rules ``whisper-normalizer`` adds to openai-whisper's English normalizer (not in openai/whisper)
NOT_IN_OPENAI_WHISPER = (r"\bkinda\b", r"\bsorta\b", r"\bdunno\b", r"\bcause\b")


@lru_cache(maxsize=None)
def get_normalizer(name: str) -> Callable[[str], str]:
    """Return the normalizing function called ``name`` (one of NORMALIZERS)."""
    if name == "english":
        from whisper_normalizer.english import EnglishTextNormalizer

        english = EnglishTextNormalizer()
        for pattern in NOT_IN_OPENAI_WHISPER:
            english.replacers.pop(pattern, None)
        return cast(Callable[[str], str], english)
    if name == "basic":
        from whisper_normalizer.basic import BasicTextNormalizer

        return cast(Callable[[str], str], BasicTextNormalizer())
    if name == "none":
        return lambda text: " ".join(text.split())
    raise ValueError(f"unknown normalizer {name!r}; choose one of {', '.join(NORMALIZERS)}")


def normalize(text: str, normalizer: str = "english") -> str:
    """Normalize ``text`` and collapse white space (what WER is computed on)."""
    return " ".join(get_normalizer(normalizer)(text).split())


def choose_normalizer(languages: Iterable[Optional[str]], model: str = "") -> str:
    """Whisper's choice: the English normalizer for English (or ``*.en`` models), basic otherwise."""
    langs = {lang.lower() for lang in languages if lang}
    if model.endswith(".en") or not langs or langs == {"en"} or langs == {"english"}:
        return "english"
    return "basic"
