"""The subtitle formats ``whisperbench subtitles`` writes (:data:`SUBTITLE_FORMATS`): SRT and WebVTT built in,
others from installed packages (entry-point group ``whisperbench.subtitles``, pointing at a
:class:`SubtitleFormat`). A format is what sets its text apart: a header, the mark between seconds and
milliseconds, numbered cues or not; listing them imports no run store.

>>> SUBTITLE_FORMATS.names()
['srt', 'vtt']
>>> print(SUBTITLE_FORMATS.get("vtt").render([{"start": 1.5, "end": 62.25, "text": " Hi there"}]))
WEBVTT
<BLANKLINE>
00:00:01.500 --> 00:01:02.250
Hi there
<BLANKLINE>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.registry import Registry
from ..errors import WhisperbenchError


def _stamp(seconds: float, separator: str) -> str:
    millis = int(round(max(seconds, 0.0) * 1000))
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02d}:{minutes:02d}:{rest // 1000:02d}{separator}{rest % 1000:03d}"


@dataclass(frozen=True)
class SubtitleFormat:
    """A subtitle format: its name (also the files' suffix), a one-line description, the text before the first
    cue, the mark between seconds and milliseconds, and whether each cue starts with its number."""

    name: str
    description: str
    header: str
    separator: str
    numbered: bool

    def render(self, segments: list[dict[str, Any]]) -> str:
        """The file's text for cues ``[{start, end, text}]`` (seconds); a cue's text on one line, never holding
        the ``-->`` that would end it.

        >>> print(SUBTITLE_FORMATS.get("srt").render([{"start": 1.5, "end": 62.25, "text": " Hi there"}]))
        1
        00:00:01,500 --> 00:01:02,250
        Hi there
        <BLANKLINE>
        """
        cues = []
        for number, segment in enumerate(segments, start=1):
            times = f"{_stamp(segment['start'], self.separator)} --> {_stamp(segment['end'], self.separator)}"
            text = " ".join(str(segment.get("text", "")).split()).replace("-->", "->")
            cues.append((f"{number}\n" if self.numbered else "") + f"{times}\n{text}\n")
        return self.header + "\n".join(cues)


SUBTITLE_FORMATS: Registry[SubtitleFormat] = Registry(
    "subtitle format",
    builtin=lambda: [
        SubtitleFormat("srt", "SubRip", header="", separator=",", numbered=True),
        SubtitleFormat("vtt", "WebVTT", header="WEBVTT\n\n", separator=".", numbered=False),
    ],
    kind=SubtitleFormat,
    group="whisperbench.subtitles",
    error=WhisperbenchError,
)
