"""The one implementation of Whisper's timestamp rules (models/timestamps.py) against openai-whisper's own
``ApplyTimestampRules``, step by step on real logits (tiny.en decoding jfk.flac with timestamps), run with
NumPy (the greedy loop of the Core ML / ANE adapters) and with JAX (the jax adapter's logits processor)."""

from __future__ import annotations

import numpy as np
import pytest

from whisperbench.models.checkpoint import MAX_INITIAL_TIMESTAMP_INDEX
from whisperbench.models.greedy import GreedyDecoder
from whisperbench.models.timestamps import TimestampRules

from .conftest import BUNDLED

whisper = pytest.importorskip("whisper")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def steps():
    """(tokens so far, raw logits, logits after openai-whisper's rules) for each step of a greedy decode."""
    from whisper.decoding import ApplyTimestampRules

    from whisperbench.datasets.audio import load_audio
    from whisperbench.models import converted
    from whisperbench.models.convert import load_openai_whisper

    model = load_openai_whisper(converted("tiny.en", "openai-whisper")).eval()
    tokenizer = whisper.tokenizer.get_tokenizer(False)
    audio = load_audio(str(BUNDLED / "shortform" / "audio" / "jfk.flac"))
    mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(audio)))
    tokens = list(tokenizer.sot_sequence)
    rules = ApplyTimestampRules(tokenizer, len(tokens), MAX_INITIAL_TIMESTAMP_INDEX)
    found = []
    with torch.no_grad():
        features = model.embed_audio(mel[None])
        for _ in range(60):
            logits = model.logits(torch.tensor([tokens]), features)[:, -1].float()
            ruled = logits.clone()
            rules.apply(ruled, torch.tensor([tokens]))
            found.append((list(tokens), logits.numpy(), ruled.numpy()))
            token = int(ruled.argmax())
            if token == tokenizer.eot:
                break
            tokens.append(token)
    return tokenizer, found


def _ours(tokenizer, prompt_len):
    return TimestampRules(prompt_len, tokenizer.timestamp_begin, tokenizer.eot, MAX_INITIAL_TIMESTAMP_INDEX)


def test_the_decode_exercises_every_rule(steps):
    tokenizer, found = steps
    final = found[-1][0]
    stamps = [t for t in final if t >= tokenizer.timestamp_begin]
    assert len(stamps) >= 4 and final[len(tokenizer.sot_sequence)] >= tokenizer.timestamp_begin  # opens with one
    assert any(a >= tokenizer.timestamp_begin and b >= tokenizer.timestamp_begin for a, b in zip(final, final[1:]))


def test_numpy_rules_equal_openai_whispers_at_every_step(steps):
    tokenizer, found = steps
    prompt = len(tokenizer.sot_sequence)
    for tokens, logits, expected in found:
        with np.errstate(divide="ignore", invalid="ignore"):
            got = _ours(tokenizer, prompt).apply(np, np.array([tokens + [0, 0]]), logits, len(tokens))
        np.testing.assert_array_equal(got, expected, err_msg=f"after {len(tokens) - prompt} sampled tokens")


def test_the_greedy_loop_applies_the_same_rules(steps):
    tokenizer, found = steps
    prompt = len(tokenizer.sot_sequence)
    for tokens, logits, expected in found:
        row = logits[0].copy()
        GreedyDecoder._apply_timestamp_rules(None, row, tokens[prompt:], tokenizer)  # type: ignore[arg-type]
        np.testing.assert_array_equal(row, expected[0])


def test_jax_rules_equal_openai_whispers_at_every_step(steps):
    jnp = pytest.importorskip("jax.numpy")
    tokenizer, found = steps
    prompt = len(tokenizer.sot_sequence)
    width = len(found[-1][0]) + 2  # one fixed-size buffer, as generate's: cur_len says how much is filled
    for tokens, logits, expected in found:
        buffer = np.zeros((1, width), dtype=np.int32)
        buffer[0, : len(tokens)] = tokens
        got = np.asarray(_ours(tokenizer, prompt).apply(jnp, jnp.asarray(buffer), jnp.asarray(logits), len(tokens)))
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(expected))
