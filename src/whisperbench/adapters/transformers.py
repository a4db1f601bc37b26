"""``transformers``: Hugging Face's WhisperForConditionalGeneration through the ASR pipeline.

Long-form uses the pipeline's sequential long-form generation by default; ``chunk_length_s=30``
switches to its chunked algorithm (overlapping windows, batched by ``batch_size``, merged).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.ranges import Range
from ..datasets.audio import SAMPLE_RATE
from ..types import Example, Segment, Transcript, Word
from .base import SEAMS_FROM_PIPELINE, Adapter, seam_extra
from .options import Option
from .word_timing import words_from_tokens

#: mel frames of a 30 s window (hop 160 at 16 kHz); the encoder's output has half as many positions
_WINDOW_FRAMES = 3000
_SECONDS_PER_POSITION = 0.02


class TransformersAdapter(Adapter):
    """Hugging Face transformers: the automatic-speech-recognition pipeline on the model in transformers' format."""

    name = "transformers"
    prompting = "prompt_ids"  # generate(prompt_ids=tokenizer.get_prompt_ids(text))
    description = "Hugging Face transformers, automatic-speech-recognition pipeline"
    requires = ("transformers", "torch")
    extra = "transformers"
    distributions = ("transformers", "torch")
    options = {
        "dtype": Option("float32", "torch dtype of the model", ("float32", "float16", "bfloat16")),
        "device": Option("cpu", "torch device"),
        "chunk_length_s": Option(0.0, "long-form: 0 = sequential generation, 30 = the pipeline's chunking"),
        "batch_size": Option(1, "clips or chunks per forward pass", range=Range(1, integer=True)),
    }
    variants = {name: {"dtype": name} for name in ("float32", "bfloat16")}
    word_timing = (
        "short-form: DTW over the generation config's alignment heads on the decoded text's tokens (one "
        "forward pass, transformers' own DTW and median filter, rows as openai-whisper's find_alignment "
        "takes them); long-form: the pipeline's return_timestamps='word' pass, which decodes with "
        "timestamps as long-form does anyway"
    )

    def load(self) -> None:
        import torch
        from transformers import WhisperForConditionalGeneration, WhisperProcessor, pipeline
        from transformers.utils import logging as hf_logging

        from ..models import converted, resolve_source

        hf_logging.set_verbosity_error()  # deprecation chatter per call; errors still surface
        torch.set_num_threads(self.decoding.threads)
        self.multilingual = resolve_source(self.model).multilingual
        self.weights_path = converted(self.model, "transformers")
        folder = str(self.weights_path)
        dtype = getattr(torch, self.settings["dtype"])
        model = WhisperForConditionalGeneration.from_pretrained(folder, torch_dtype=dtype, local_files_only=True)
        # Any: its tokenizer and feature_extractor attributes are set at run time, unknown to the stubs
        processor: Any = WhisperProcessor.from_pretrained(folder, local_files_only=True)
        self.pipe: Any = pipeline(  # called on batches of dicts, which its stubs do not list
            "automatic-speech-recognition",
            model=model,
            tokenizer=processor.tokenizer,
            feature_extractor=processor.feature_extractor,
            device=self.settings["device"],
            torch_dtype=dtype,
        )

    def _generate_kwargs(self, long_form: bool, example: Example | None = None) -> dict:
        d = self.decoding
        # the temperature always goes in: with a logprob_threshold and no temperature, transformers' Whisper
        # generate (4.57) fails on every clip (``_retrieve_avg_logprobs``: None > 0.0); 0.0 is its greedy default
        temperatures = d.temperatures()
        generate: dict[str, Any] = {
            "num_beams": d.beam_size,
            "do_sample": False,
            "temperature": temperatures if d.temperature_fallback else temperatures[0],
        }
        if self.multilingual:
            generate.update(task=d.task, language=d.language_for(True, example))
        if long_form:
            generate["condition_on_prev_tokens"] = d.condition_on_previous_text
        for option in ("no_speech_threshold", "logprob_threshold", "compression_ratio_threshold"):
            if getattr(d, option) is not None:
                generate[option] = getattr(d, option)
        prompt = d.prompt_for(example)
        if prompt:
            generate["prompt_ids"] = self.pipe.tokenizer.get_prompt_ids(prompt, return_tensors="pt")
        return generate

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        assert audio is not None  # needs_audio: the harness decodes it
        chunk = float(self.settings["chunk_length_s"])
        kwargs = {"chunk_length_s": chunk, "batch_size": self.batch_size} if chunk > 0 else {}
        segment_times = not self.decoding.timestamps_off(long_form)
        result = self.pipe(
            {"raw": audio, "sampling_rate": SAMPLE_RATE},
            generate_kwargs=self._generate_kwargs(long_form, example),
            return_timestamps=segment_times,
            **kwargs,
        )
        segments = _timed(Segment, result.get("chunks", []), len(audio) / SAMPLE_RATE)
        words = None
        if self.decoding.word_timestamps and not segment_times:
            # the pipeline's word mode decodes with timestamp tokens, which changes the text of a clip decoded
            # without them: align the decoded text instead
            words = self._aligned_words(audio, result["text"].strip(), example)
        elif self.decoding.word_timestamps:  # a second pass: the pipeline returns either segments or words
            timed = self.pipe(
                {"raw": audio, "sampling_rate": SAMPLE_RATE},
                return_timestamps="word",
                generate_kwargs=self._generate_kwargs(long_form, example),
                **kwargs,
            )
            words = _timed(Word, timed.get("chunks", []), len(audio) / SAMPLE_RATE)
        extra = seam_extra(self._chunk_seams(len(audio)), SEAMS_FROM_PIPELINE) if long_form and chunk > 0 else {}
        return Transcript(text=result["text"].strip(), segments=segments, words=words, extra=extra)

    def _aligned_words(self, audio: np.ndarray, text: str, example: Example | None) -> list[Word]:
        """Word times of ``text`` on a clip of <= 30 s: the decoder run once on the prompt, the text's tokens and
        end-of-text; the alignment heads' cross-attention over the clip's frames, normalized per frame and
        median-filtered as transformers' ``_extract_token_timestamps`` does; DTW; token k spans the steps where the
        path enters the row that predicts it and the row that predicts the next token (openai-whisper's rows)."""
        import torch
        from transformers.models.whisper.generation_whisper import _dynamic_time_warping, _median_filter

        model, tokenizer = self.pipe.model, self.pipe.tokenizer
        ids = tokenizer(" " + text, add_special_tokens=False).input_ids if text else []
        if not ids:
            return []
        if self.multilingual:
            language = self.decoding.language_for(True, example) or getattr(example, "language", None)
            tokenizer.set_prefix_tokens(language=language, task=self.decoding.task, predict_timestamps=False)
        prefix = list(tokenizer.prefix_tokens)
        features = self.pipe.feature_extractor(audio, sampling_rate=SAMPLE_RATE, return_tensors="pt").input_features
        frames = min(_WINDOW_FRAMES, int(np.ceil(len(audio) / (SAMPLE_RATE * _SECONDS_PER_POSITION / 2))))
        decoding_attention = model.config._attn_implementation
        model.set_attn_implementation("eager")  # SDPA returns no attention weights; decoding keeps its own
        try:
            with torch.inference_mode():
                out = model(
                    input_features=features.to(model.device, model.dtype),
                    output_attentions=True,
                    decoder_input_ids=torch.tensor([prefix + ids + [tokenizer.eos_token_id]], device=model.device),
                )
        finally:
            model.set_attn_implementation(decoding_attention)
        weights = torch.stack(
            [out.cross_attentions[layer][0, head] for layer, head in model.generation_config.alignment_heads]
        )[:, :, : frames // 2].float()
        std, mean = torch.std_mean(weights, dim=-2, keepdim=True, unbiased=False)
        weights = _median_filter((weights - mean) / std, model.config.median_filter_width).mean(dim=0)
        text_rows, time_steps = _dynamic_time_warping(-weights[len(prefix) - 1 : -1].cpu().double().numpy())
        jumps = np.pad(np.diff(text_rows), (1, 0), constant_values=1).astype(bool)
        times = time_steps[jumps] * _SECONDS_PER_POSITION  # one per row: where the path enters it
        return words_from_tokens(
            (tokenizer.decode([token]), float(times[k]), float(times[k + 1])) for k, token in enumerate(ids)
        )

    def _chunk_seams(self, num_samples: int) -> list[float]:
        """The pipeline's chunk geometry (its ``preprocess``: stride ``chunk_length_s / 6`` each side, aligned to the
        model's ``inputs_to_logits_ratio``) turned into seams, as :func:`pipeline_chunk_seams` says."""
        align = int(getattr(self.pipe.model.config, "inputs_to_logits_ratio", 1) or 1)
        chunk_s = float(self.settings["chunk_length_s"])
        chunk = int(round(chunk_s * SAMPLE_RATE / align) * align)
        stride = int(round(chunk_s / 6 * SAMPLE_RATE / align) * align)
        return pipeline_chunk_seams(num_samples, chunk, stride, stride)

    @property
    def native_seams(self) -> str | None:  # type: ignore[override]
        """Chunked: the pipeline's chunk geometry. Sequential generate keeps its window offsets to itself: not told."""
        return SEAMS_FROM_PIPELINE if float(self.settings["chunk_length_s"]) > 0 else None

    @property
    def batch_size(self) -> int:
        return int(self.settings["batch_size"])

    def transcribe_batch(
        self, audios: list[np.ndarray], examples: list[Example], *, timestamps: bool = False
    ) -> list[Transcript]:
        """The pipeline on a list of short audios, ``batch_size`` per forward pass."""
        results = self.pipe(
            [{"raw": audio, "sampling_rate": SAMPLE_RATE} for audio in audios],
            batch_size=len(audios),
            generate_kwargs=self._generate_kwargs(False, examples[0]),
            return_timestamps=timestamps,
        )
        return [Transcript(text=result["text"].strip()) for result in results]

    @property
    def long_form_algorithm(self) -> str:  # type: ignore[override]
        chunk = float(self.settings["chunk_length_s"])
        if chunk > 0:
            return (
                f"transformers pipeline: chunked {chunk:g} s windows with stride, batch {self.settings['batch_size']}"
            )
        return "transformers: sequential long-form generate (pipeline, no chunking)"


def pipeline_chunk_seams(num_samples: int, chunk: int, stride_left: int, stride_right: int) -> list[float]:
    """Seams (s) of the ASR pipeline's chunking (``chunk_iter``): chunks of ``chunk`` samples start every
    ``chunk - stride_left - stride_right``, the last one reaching the end; a chunk no longer than its left stride is
    dropped. Consecutive chunks' texts are merged inside their overlap: the seam is its middle (as the harness's
    chunked strategy records).

    >>> pipeline_chunk_seams(84 * SAMPLE_RATE, 30 * SAMPLE_RATE, 5 * SAMPLE_RATE, 5 * SAMPLE_RATE)
    [25.0, 45.0, 65.0]
    """
    step, starts = chunk - stride_left - stride_right, []
    for start in range(0, num_samples, step):
        if start == 0 or min(chunk, num_samples - start) > stride_left:
            starts.append(start)
        if start + chunk >= num_samples:
            break
    return [round((start + (stride_left + stride_right) / 2) / SAMPLE_RATE, 3) for start in starts[1:]]


def _timed(kind, chunks: list[dict], audio_s: float) -> list:
    """Segments or words from the pipeline's ``chunks``: a start it left open (None) is the previous end (or 0),
    an end left open (the audio ran out inside it) is the audio's end."""
    items, previous = [], 0.0
    for chunk in chunks:
        start, end = chunk["timestamp"]
        start = previous if start is None else float(start)
        end = audio_s if end is None else float(end)
        text = chunk["text"].strip() if kind is Word else chunk["text"]
        items.append(kind(text, start, end) if kind is Word else kind(start, end, text))
        previous = end
    return items


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = TransformersAdapter
