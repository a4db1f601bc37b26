"""Word timing as the harness owns it: the implementation's own aligner, run on the tokens it decoded.

openai-whisper, mlx-whisper and faster-whisper align words inside ``transcribe`` when asked
(``word_timestamps=True``) and then move the next window's start to the last word's end whenever the window did
not end on a single timestamp token. A short clip decoded without timestamp tokens never does: the loop decodes
the clip's own tail again and Whisper fills it with invented words ("… for your country. Thank you. Thank you.").
So the harness decodes exactly as it would without word timing, then runs the implementation's own aligner (DTW
over its alignment heads' cross-attention, ``add_word_timestamps``) on each decoding window's tokens: the text
is, by construction, the text of the same run without word timing.

whisper.cpp aligns inside ``whisper_full`` (DTW over its alignment-head preset) and gives one time per token, the
token's end; :func:`words_from_tokens` joins its tokens into words.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence

from ..types import Word

#: Whisper's defaults (``transcribe``'s ``prepend_punctuations`` / ``append_punctuations``): marks merged into the
#: next / previous word by ``add_word_timestamps``
PREPEND_PUNCTUATIONS = "\"'“¿([{-"
APPEND_PUNCTUATIONS = "\"'.。,，!！?？:：”)]}、"

#: ``align(window_segments, seek, num_frames, last_speech_s) -> last_speech_s``: one decoding window's aligner
WindowAligner = Callable[[list[dict], int, int, float], float]


def decoding_windows(segments: Sequence[dict]) -> list[list[dict]]:
    """A transcript's segments grouped by the decoding window they came from (``seek``, in mel frames), in order.

    >>> [[s["text"] for s in w] for w in decoding_windows([{"seek": 0, "text": "a"}, {"seek": 0, "text": "b"},
    ...                                                    {"seek": 2896, "text": "c"}])]
    [['a', 'b'], ['c']]
    """
    return [list(group) for _, group in itertools.groupby(segments, key=lambda s: int(s["seek"]))]


def align_windows(segments: Sequence[dict], content_frames: int, window_frames: int, align: WindowAligner) -> None:
    """Run ``align`` on each decoding window's segments (adding their ``words``), with the frames that window
    covered (``min(window_frames, content_frames - seek)``, as the decoding loop sliced them)."""
    last_speech_s = 0.0
    for window in decoding_windows(segments):
        seek = int(window[0]["seek"])
        last_speech_s = align(window, seek, max(1, min(window_frames, content_frames - seek)), last_speech_s)


def last_word_end(window: Sequence[dict], default: float) -> float:
    """The end (s) of the last word the aligner put in ``window``, else ``default``."""
    ends = [float(w["end"]) for segment in window for w in segment.get("words") or []]
    return ends[-1] if ends else default


def words_from_tokens(tokens: Iterable[tuple[str, float, float]]) -> list[Word]:
    """Tokens ``(text, start s, end s)`` joined into words: a token that begins with a space begins a word; a word
    runs from its first token's start to its last token's end, where a token of punctuation alone (``","``)
    leaves the end where it was (Whisper's aligner merges such marks into the word without moving its end).

    >>> words_from_tokens([(" And", 0.0, 0.76), (" Amer", 0.76, 1.9), ("icans", 1.9, 2.26), (",", 2.26, 2.3)])
    [Word(word='And', start=0.0, end=0.76), Word(word='Americans,', start=0.76, end=2.26)]
    """
    words: list[list] = []
    for text, start, end in tokens:
        if not words or text.startswith(" "):
            words.append([text.strip(), start, end])
            continue
        words[-1][0] += text
        if any(ch.isalnum() for ch in text):
            words[-1][2] = end
    return [Word(text, start, max(start, end)) for text, start, end in words if text]


def dtw_token_spans(ends: Sequence[float], first_start: float = 0.0) -> list[tuple[float, float]]:
    """Token spans from whisper.cpp's DTW times (``t_dtw``: each token's *end*, the step where the alignment
    moves to the next token): a token starts where the previous one ended, the first at ``first_start``.

    >>> dtw_token_spans([0.76, 1.06, 1.46])
    [(0.0, 0.76), (0.76, 1.06), (1.06, 1.46)]
    """
    starts = [first_start, *ends[:-1]]
    return [(min(start, end), end) for start, end in zip(starts, ends)]
