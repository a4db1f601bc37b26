"""Language labels: what datasets write ("German", "de", "deu", "de-DE") as the code Whisper uses ("de").

A label is read as a BCP 47 / ISO 639 code first (``langcodes.standardize_tag``: "deu" and "ger" are
"de", "de-DE" is "de", "cmn" is Mandarin) and else as an English language name (``langcodes.find``:
"German", "Castilian"). Mandarin ("cmn") is Whisper's "zh"; Cantonese stays "yue". A label that names no
language, or one Whisper does not know, is an error naming it.

>>> [language_code(label) for label in ("German", "de", "deu", "de-DE", "Mandarin Chinese", "Cantonese")]
['de', 'de', 'de', 'de', 'zh', 'yue']
>>> headline_metric("ja"), headline_metric("de")
('cer', 'wer')
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from ..types import storable_text

#: the languages of Whisper's tokenizer (openai-whisper's ``whisper.tokenizer.LANGUAGES``), in its order
WHISPER_LANGUAGES = tuple(
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt la mi "
    "ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd "
    "gu am yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as tt haw ln ha ba jw su yue".split()
)
#: CER (spaces left out) is the headline metric and what QoI compares: languages written without spaces between
#: words, and ko, written with spaces whose use varies between writers (Whisper's multilingual evaluation scores
#: these languages on characters)
CER_LANGUAGES = frozenset({"zh", "ja", "ko", "th", "lo", "my", "yue"})
#: macrolanguage members and old codes -> the code Whisper uses
_WHISPER_ALIASES = {"cmn": "zh", "nb": "no", "jv": "jw", "iw": "he", "in": "id", "ji": "yi"}


class LanguageError(ValueError):
    """A label that is no language Whisper knows."""


@cache
def language_code(label: str) -> str:
    """Whisper's code for ``label`` (a code in any ISO 639 form or BCP 47 tag, or an English name)."""
    import langcodes

    text = str(label).strip()
    if not text:
        raise LanguageError("an empty language label")
    if not text.isascii() and storable_text(text) != text:
        raise LanguageError(f"language {ascii(label)} holds a lone surrogate: no character, no language")
    try:
        code = langcodes.Language.get(langcodes.standardize_tag(text)).language
    except ValueError:
        try:
            code = langcodes.find(text).language
        except LookupError:
            raise LanguageError(f"language {label!r} is neither a language code nor a language name") from None
    code = _WHISPER_ALIASES.get(code or "", code)
    if code not in WHISPER_LANGUAGES:
        raise LanguageError(f"language {label!r} ({code}) is not one of Whisper's {len(WHISPER_LANGUAGES)} languages")
    return code


def headline_metric(language: str | None) -> str:
    """'cer' for languages written without spaces, else 'wer' (unknown languages: 'wer')."""
    return "cer" if language in CER_LANGUAGES else "wer"


def cer_text(normalized: str, language: str | None) -> str:
    """The text CER counts characters of: without spaces for languages written without them (where spaces
    are word segmentation, as AISHELL's transcripts carry), else the normalized text with its spaces."""
    return "".join(normalized.split()) if language in CER_LANGUAGES else normalized


def english_only_model(model: str, multilingual: bool | None = None) -> bool:
    """Whether a model transcribes English only: its weights say so (``multilingual``, when known: the
    vocabulary's size), else its name or path ends in ``.en`` (tiny.en, openai/whisper-base.en,
    ggml-base.en-q5_0.bin).

    >>> [english_only_model(m) for m in ("tiny.en", "models/ggml-base.en-q5_0.bin", "whisper-tiny.en/", "base")]
    [True, True, True, False]
    >>> english_only_model("my-finetune", multilingual=False), english_only_model("tiny.engine")
    (True, False)
    """
    import re

    if multilingual is not None:
        return not multilingual
    name = str(model).rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return re.search(r"\.en($|[-_.@])", name) is not None


def other_than_english(languages: Iterable[str | None]) -> list[str]:
    """The labelled languages that are not English, sorted (what an English-only model cannot transcribe).

    >>> other_than_english(["en", "de", None, "fr", "de"])
    ['de', 'fr']
    """
    return sorted({language for language in languages if language and language != "en"})


def english_only_warning(model: str, languages: list[str | None], multilingual: bool | None = None) -> str:
    """What to say when an English-only model meets examples labelled in other languages, or "" when it does not.

    >>> english_only_warning("tiny.en", ["de", "en", "de"])
    'tiny.en is an English-only model, but 2 of 3 examples are labelled in other languages (de): their WER ...'
    """
    others = other_than_english(languages)
    if not others or not english_only_model(model, multilingual):
        return ""
    count = sum(1 for language in languages if language in others)
    return (
        f"{model} is an English-only model, but {count} of {len(languages)} examples are labelled in other "
        f"languages ({', '.join(others[:8])}{' …' if len(others) > 8 else ''}): their WER measures a model that "
        "cannot transcribe them; use a multilingual model (e.g. tiny, base)"
    )
