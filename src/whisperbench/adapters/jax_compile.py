"""The jax adapter's compiled programs: openai-whisper's initial tokens, suppressed tokens and timestamp rules,
and one jit-compiled function (encoder, optional language detection, Flax greedy ``generate``) per shape.

Kept apart from :mod:`whisperbench.adapters.jax` (which loads the model, batches audio and reads the
tokens back) so that what is compiled, and for which prompt, is one thing to read.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import OptionError
from ..models.checkpoint import MAX_INITIAL_TIMESTAMP_INDEX
from ..models.timestamps import TimestampRules as WhisperTimestampRules
from .base import FROM_DATASET, DecodingOptions

N_FRAMES = 3000  # log-mel frames in a 30 s window
#: special tokens openai-whisper suppresses besides the generation config's own list
SPECIAL_SUPPRESSED = (
    "<|transcribe|>",
    "<|translate|>",
    "<|startoftranscript|>",
    "<|startofprev|>",
    "<|startoflm|>",
    "<|nospeech|>",
    "<|nocaptions|>",
)


@dataclass
class Program:
    """One compiled program and the initial tokens it was compiled for."""

    key: str  # b<batch>_l<max length>[_timestamps], as in compile_s
    compiled: Any
    prompt: np.ndarray
    language_index: int | None
    max_length: int


class TimestampRules:
    """openai-whisper's ``ApplyTimestampRules`` (:mod:`whisperbench.models.timestamps`) as a Flax logits
    processor (``generate``'s interface).

    transformers' ``FlaxWhisperTimeStampLogitsProcessor`` differs (its first-timestamp index comes
    from ``len(decoder_input_ids)``, the batch size, and it lets timestamps decrease), so the rules
    are applied as openai-whisper applies them. ``sample_begin`` is the prompt length.
    """

    def __init__(self, sample_begin: int, timestamp_begin: int, eot: int, max_initial_index: int):
        self.rules = WhisperTimestampRules(sample_begin, timestamp_begin, eot, max_initial_index)

    def __call__(self, input_ids: Any, scores: Any, cur_len: Any) -> Any:
        import jax.numpy as jnp

        return self.rules.apply(jnp, input_ids, scores, cur_len)


@dataclass
class ProgramBuilder:
    """Compiles the programs of one loaded Flax Whisper model for one decoding configuration."""

    net: Any  # FlaxWhisperForConditionalGeneration
    tokenizer: Any  # WhisperTokenizerFast
    decoding: DecodingOptions
    model: str  # named in messages
    multilingual: bool
    batch_size: int
    max_new_tokens: int

    @property
    def eot(self) -> int:
        """The end-of-text token."""
        return int(self.net.generation_config.eos_token_id)

    @property
    def timestamp_begin(self) -> int:
        """The first timestamp token (<|0.00|>)."""
        return self.token("<|notimestamps|>") + 1

    def token(self, token: str) -> int:
        """A special token's id."""
        return int(self.tokenizer.convert_tokens_to_ids(token))

    def language_token(self, language: str) -> int:
        """The id of ``<|language|>``; an OptionError when the model has no such language."""
        lang_to_id = self.net.generation_config.lang_to_id
        if f"<|{language}|>" not in lang_to_id:
            raise OptionError(f"adapter jax: model {self.model} has no language {language!r}")
        return int(lang_to_id[f"<|{language}|>"])

    def initial_tokens(self, timestamps: bool) -> tuple[np.ndarray, int | None]:
        """openai-whisper's initial tokens and the language token's index (None for English-only models).

        A multilingual model without ``language`` gets -1 there, filled in by detection.
        """
        d = self.decoding
        prefix: list[int] = []
        if d.initial_prompt:
            prompt_ids = self.tokenizer.encode(" " + d.initial_prompt.strip(), add_special_tokens=False)
            prefix = [self.token("<|startofprev|>")] + prompt_ids[-(self.net.config.max_target_positions // 2 - 1) :]
        tokens = [self.token("<|startoftranscript|>")]
        language_index = None
        if self.multilingual:
            language = d.language_for(True)
            language_index = len(prefix) + 1
            tokens += [self.language_token(language) if language else -1, self.token(f"<|{d.task}|>")]
        elif d.language not in (None, "en", FROM_DATASET):
            raise OptionError(f"adapter jax: {self.model} is English-only; language={d.language!r}")
        if not timestamps:
            tokens.append(self.token("<|notimestamps|>"))
        return np.array(prefix + tokens, dtype=np.int32), language_index

    def generation_config(self, max_length: int) -> Any:
        """Greedy, up to ``max_length``, openai-whisper's suppressed tokens; the prompt is passed in."""
        config = copy.deepcopy(self.net.generation_config)
        vocab = self.tokenizer.get_vocab()
        specials = [vocab[t] for t in SPECIAL_SUPPRESSED if t in vocab]
        config.suppress_tokens = sorted(set(config.suppress_tokens or []) | set(specials))
        config.update(
            max_length=max_length,
            max_new_tokens=None,
            num_beams=1,
            do_sample=False,
            return_timestamps=False,
            forced_decoder_ids=None,
            is_multilingual=False,
        )
        return config

    def compile(self, params: Any, timestamps: bool) -> tuple[Program, float]:
        """Compile encoder + [language detection] + greedy ``generate`` for (``batch_size``, max length); the
        program and its compile time in seconds."""
        import jax
        import jax.numpy as jnp
        from transformers.generation.flax_logits_process import FlaxLogitsProcessorList

        prompt, language_index = self.initial_tokens(timestamps)
        max_length = len(prompt) + self.max_new_tokens
        if max_length > (n_ctx := self.net.config.max_target_positions):
            raise OptionError(
                f"adapter jax: {len(prompt)} prompt + {self.max_new_tokens} new tokens "
                f"exceed the decoder's {n_ctx} positions"
            )
        net, config = self.net, self.generation_config(max_length)
        rules = FlaxLogitsProcessorList(
            [TimestampRules(len(prompt), self.timestamp_begin, self.eot, MAX_INITIAL_TIMESTAMP_INDEX)]
            if timestamps
            else []
        )
        detect = self.multilingual and language_index is not None and prompt[language_index] < 0
        sot = self.token("<|startoftranscript|>")
        languages = jnp.array(sorted(getattr(net.generation_config, "lang_to_id", {}).values()), dtype=jnp.int32)

        def transcribe(params: Any, features: Any, prompts: Any) -> tuple[Any, Any]:
            encoded = net.encode(features, params=params)
            if detect:  # openai-whisper's detect_language: argmax over the language tokens after <|sot|>
                start = jnp.full((features.shape[0], 1), sot, dtype=jnp.int32)
                logits = net.decode(start, encoded, params=params).logits[:, -1].astype(jnp.float32)
                prompts = prompts.at[:, language_index].set(languages[jnp.argmax(logits[:, languages], axis=-1)])
            out = net.generate(
                features,
                generation_config=config,
                params=params,
                decoder_input_ids=prompts,
                encoder_outputs=encoded,
                logits_processor=rules,
            )
            return out.sequences, prompts

        batch, n_mels = self.batch_size, net.config.num_mel_bins
        start = time.perf_counter()
        compiled = (
            jax.jit(transcribe)
            .lower(
                params,
                jax.ShapeDtypeStruct((batch, n_mels, N_FRAMES), jnp.float32),
                jax.ShapeDtypeStruct((batch, len(prompt)), jnp.int32),
            )
            .compile()
        )
        key = f"b{batch}_l{max_length}" + ("_timestamps" if timestamps else "")
        return Program(key, compiled, prompt, language_index, max_length), round(time.perf_counter() - start, 3)
