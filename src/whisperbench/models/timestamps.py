"""Whisper's timestamp rules (openai-whisper's ``ApplyTimestampRules``), once, for NumPy and JAX alike.

Batched and branch-free (``where`` on masks, no Python ``if`` on values), so the same function runs
eagerly on NumPy arrays (:mod:`whisperbench.models.greedy`, the Core ML and ANE loops) and traced
inside a jitted JAX ``generate`` (:mod:`whisperbench.adapters.jax`). The rules: no
``<|notimestamps|>``; timestamps in pairs except before EOT; never decreasing, and a segment never
empty; the first sampled token a timestamp of at most ``max_initial_index``; a timestamp whenever the
timestamps' summed probability beats every text token (log-softmax in float32, as openai-whisper).

>>> import numpy as np
>>> tb = 6  # a toy vocabulary: text 0-3, EOT 4, <|notimestamps|> 5, timestamps 6-9
>>> rules = TimestampRules(sample_begin=1, timestamp_begin=tb, eot=4, max_initial_index=1)
>>> out = rules.apply(np, np.array([[0]]), np.zeros((1, 10)), cur_len=1)  # first token: a timestamp <= 1
>>> np.isfinite(out[0]).nonzero()[0].tolist()
[6, 7]
>>> text_likelier = np.where(np.arange(10) < tb, 2.0, 0.0)[None]
>>> out = rules.apply(np, np.array([[0, 7, 2]]), text_likelier, cur_len=3)  # after <|t1|> text: no t0, t1
>>> np.isfinite(out[0]).nonzero()[0].tolist()
[0, 1, 2, 3, 4, 8, 9]
>>> out = rules.apply(np, np.array([[0, 7, 2]]), np.zeros((1, 10)), cur_len=3)  # timestamps outweigh text
>>> np.isfinite(out[0]).nonzero()[0].tolist()
[8, 9]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def _logsumexp(xp: Any, x: Any, axis: int = -1) -> Any:
    top = xp.max(x, axis=axis, keepdims=True)
    top = xp.where(xp.isfinite(top), top, 0.0)
    return xp.log(xp.sum(xp.exp(x - top), axis=axis)) + xp.squeeze(top, axis=axis)


@dataclass(frozen=True)
class TimestampRules:
    """The rules for one prompt: ``sample_begin`` is the prompt length (the first sampled position)."""

    sample_begin: int
    timestamp_begin: int  # the first timestamp token; <|notimestamps|> is the one before it
    eot: int
    max_initial_index: int

    def apply(self, xp: Any, input_ids: Any, scores: Any, cur_len: Any) -> Any:
        """``scores`` (batch, vocab) with what the rules forbid set to -inf, for sequences ``input_ids``
        (batch, >= cur_len) of which the first ``cur_len`` tokens are filled; ``xp``: numpy or jax.numpy."""
        begin, tb = self.sample_begin, self.timestamp_begin
        vocab = xp.arange(scores.shape[-1])[None]
        is_timestamp, is_text = vocab >= tb, vocab < tb
        scores = xp.where(vocab == tb - 1, -xp.inf, scores)  # <|notimestamps|>
        sampled = cur_len - begin
        last_was = (sampled >= 1) & (input_ids[:, cur_len - 1] >= tb)
        penultimate_was = (sampled < 2) | (input_ids[:, cur_len - 2] >= tb)
        scores = xp.where((last_was & penultimate_was)[:, None] & is_timestamp, -xp.inf, scores)
        scores = xp.where((last_was & ~penultimate_was)[:, None] & (vocab < self.eot), -xp.inf, scores)
        positions = xp.arange(input_ids.shape[1])[None]
        stamped = (input_ids >= tb) & (positions >= begin) & (positions < cur_len)
        last_index = xp.max(xp.where(stamped, positions, 0), axis=1, keepdims=True)
        last_stamp = xp.take_along_axis(input_ids, last_index, axis=1)
        floor = xp.where((last_was & ~penultimate_was)[:, None], last_stamp, last_stamp + 1)
        forbidden = stamped.any(axis=1, keepdims=True) & is_timestamp & (vocab < floor)
        scores = xp.where(forbidden, -xp.inf, scores)
        first = cur_len == begin
        scores = xp.where(first & (is_text | (vocab > tb + self.max_initial_index)), -xp.inf, scores)
        logits = scores.astype(xp.float32)
        logprobs = logits - _logsumexp(xp, logits)[:, None]
        timestamp_logprob = _logsumexp(xp, xp.where(is_timestamp, logprobs, -xp.inf))
        max_text_logprob = xp.max(xp.where(is_text, logprobs, -xp.inf), axis=-1)
        return xp.where((timestamp_logprob > max_text_logprob)[:, None] & is_text, -xp.inf, scores)
