"""Whisper's text normalizers (English and basic), from the ``whisper-normalizer`` package.

That package carries openai-whisper's ``whisper/normalizers`` rules without PyTorch; the tests check
it against openai-whisper's own module and against the normalizer cases of openai/whisper.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Iterable, Optional

NORMALIZERS = ("english", "basic", "none")


@lru_cache(maxsize=None)
def get_normalizer(name: str) -> Callable[[str], str]:
    """Return the normalizing function called ``name`` (one of NORMALIZERS)."""
    if name == "english":
        from whisper_normalizer.english import EnglishTextNormalizer

        return EnglishTextNormalizer()
    if name == "basic":
        from whisper_normalizer.basic import BasicTextNormalizer

        return BasicTextNormalizer()
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
