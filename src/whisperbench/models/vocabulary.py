"""Whisper's tokenizer and generation settings for a checkpoint that does not carry them.

An openai-whisper ``.pt``, a ggml file or an MLX folder holds no ``tokenizer.json``: the vocabulary
is implied by the vocabulary size (51,864 English-only, 51,865 multilingual with 99 languages,
51,866 with 100 languages as in large-v3). openai-whisper ships the BPE ranks (``gpt2.tiktoken``,
``multilingual.tiktoken``); transformers' own ``TikTokenConverter`` turns them into a fast tokenizer,
with the special tokens in openai-whisper's order, so token ids agree with every implementation.

>>> num_languages(51865), num_languages(51866), num_languages(51864)
(99, 100, 99)
"""

from __future__ import annotations

import os
from pathlib import Path

from whisperbench.errors import ModelError
from whisperbench.models.checkpoint import is_multilingual

WHISPER_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def num_languages(n_vocab: int) -> int:
    """Language tokens of a vocabulary size (English-only models keep all 99 in their vocabulary)."""
    return 99 if n_vocab <= 51865 else n_vocab - 51765 - 1


def _openai_tokenizer(n_vocab: int):
    from whisper.tokenizer import get_tokenizer

    return get_tokenizer(is_multilingual(n_vocab), num_languages=num_languages(n_vocab))


def tokenizer_json(n_vocab: int, cache: Path) -> Path:
    """A ``tokenizer.json`` (BPE plus Whisper's special tokens, no timestamps) for a vocabulary size."""
    target = cache / "tokenizers" / f"whisper-{n_vocab}.json"
    if target.is_file():
        return target
    try:
        from transformers.convert_slow_tokenizer import TikTokenConverter
        from whisper.tokenizer import get_encoding
    except ImportError as exc:
        raise ModelError(f"building Whisper's tokenizer needs openai-whisper and transformers: {exc}") from exc
    multilingual = is_multilingual(n_vocab)
    encoding = get_encoding("multilingual" if multilingual else "gpt2", num_languages(n_vocab))
    specials = [
        t
        for t, _ in sorted(encoding._special_tokens.items(), key=lambda item: item[1])
        if not t.startswith("<|") or not t[2:3].isdigit()
    ]
    ranks_file = (
        Path(str(__import__("whisper").__file__)).parent
        / "assets"
        / ("multilingual.tiktoken" if multilingual else "gpt2.tiktoken")
    )
    tokenizer = TikTokenConverter(
        vocab_file=str(ranks_file), pattern=WHISPER_PATTERN, additional_special_tokens=specials
    ).converted()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tokenizer.save(str(tmp))
    os.replace(tmp, target)
    return target


def generation_settings(n_vocab: int) -> dict:
    """``suppress_ids``, ``suppress_ids_begin`` and ``lang_ids`` as a CTranslate2 config.json holds them:
    openai-whisper's suppressed tokens (non-speech symbols and the task/control tokens), a blank and
    end-of-text at the first step, and the language tokens."""
    tokenizer = _openai_tokenizer(n_vocab)
    control = {
        tokenizer.transcribe,
        tokenizer.translate,
        tokenizer.sot,
        tokenizer.sot_prev,
        tokenizer.sot_lm,
        tokenizer.no_speech,
    }
    return {
        "suppress_ids": sorted(set(tokenizer.non_speech_tokens) | control),
        "suppress_ids_begin": [tokenizer.encode(" ")[0], tokenizer.eot],
        "lang_ids": sorted(tokenizer.all_language_tokens),
    }
