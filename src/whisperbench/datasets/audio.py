"""Decode audio to what every Whisper implementation takes: float32 mono at 16 kHz.

soundfile (libsndfile) reads WAV, FLAC, OGG/Opus and MP3 without ffmpeg; other containers fall back
to the ``ffmpeg`` binary when it is on PATH. Stereo is averaged to mono and other sample rates are
resampled with soxr (high quality), so every adapter sees the same samples.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess

import numpy as np

from ..errors import AudioError
from ..types import AudioInfo

SAMPLE_RATE = 16_000


def _open(source: str | bytes):
    return io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source


def _label(source: str | bytes) -> str:
    return source if isinstance(source, str) else f"<{len(source)} bytes>"


def audio_info(source: str | bytes) -> AudioInfo:
    """Read the header only: duration, sample rate and channel count."""
    import soundfile as sf

    try:
        with sf.SoundFile(_open(source)) as header:  # what sf.info reads, without naming the format (0.1 ms a file)
            frames, rate, channels = header.frames, header.samplerate, header.channels
    except Exception as exc:  # libsndfile raises several types
        if _ffmpeg() and isinstance(source, str):
            audio = _decode_with_ffmpeg(source)
            return AudioInfo(len(audio) / SAMPLE_RATE, SAMPLE_RATE, 1)
        raise AudioError(f"cannot read audio {_label(source)}: {exc}") from exc
    return AudioInfo(float(frames) / rate, int(rate), int(channels))


def load_audio(source: str | bytes) -> np.ndarray:
    """Decode a file path or encoded bytes to float32 mono 16 kHz samples in [-1, 1]."""
    import soundfile as sf

    try:
        data, rate = sf.read(_open(source), dtype="float32", always_2d=True)
    except Exception as exc:
        if _ffmpeg() and isinstance(source, str):
            return _decode_with_ffmpeg(source)
        raise AudioError(f"cannot decode audio {_label(source)}: {exc}") from exc
    if data.shape[0] == 0:
        raise AudioError(f"audio {_label(source)} has no samples")
    mono = data.mean(axis=1, dtype=np.float32) if data.shape[1] > 1 else data[:, 0]
    return resample(mono, rate)


def resample(samples: np.ndarray, rate: int) -> np.ndarray:
    """Resample mono float32 samples to 16 kHz (no-op when already 16 kHz)."""
    if rate == SAMPLE_RATE:
        return np.ascontiguousarray(samples, dtype=np.float32)
    import soxr

    return soxr.resample(samples, rate, SAMPLE_RATE, quality="HQ").astype(np.float32, copy=False)


def _ffmpeg() -> str | None:
    return shutil.which("ffmpeg")


def _decode_with_ffmpeg(path: str) -> np.ndarray:
    """Decode with ffmpeg, refusing partial audio: any decoder error (``-xerror``, or anything ffmpeg
    reports at error level) fails the file, and so does decoding clearly less than the header declares."""
    cmd = [
        _ffmpeg() or "ffmpeg",
        "-nostdin",
        "-v",
        "error",
        "-xerror",
        "-i",
        path,
        "-f",
        "f32le",
        "-ac",
        "1",
        "-ar",
        str(SAMPLE_RATE),
        "-",
    ]
    proc = subprocess.run(cmd, capture_output=True)
    problem = "; ".join(proc.stderr.decode(errors="replace").split("\n")).strip("; ")
    if proc.returncode != 0 or problem or not proc.stdout:
        raise AudioError(f"cannot decode audio {path}: {problem or 'no samples'} (corrupt or truncated?)")
    samples = np.frombuffer(proc.stdout, dtype=np.float32).copy()
    declared = _declared_duration(path)
    decoded = len(samples) / SAMPLE_RATE
    if declared and decoded < declared - max(0.05, 0.01 * declared):
        raise AudioError(
            f"cannot decode audio {path}: decoded {decoded:.2f} s of the {declared:.2f} s its header "
            "declares (truncated or corrupt)"
        )
    return samples


def _declared_duration(path: str) -> float | None:
    """The duration the container's header declares (ffprobe), or None when it declares none."""
    probe = shutil.which("ffprobe")
    if not probe:
        return None
    proc = subprocess.run(
        [probe, "-v", "error", "-show_entries", "format=duration:stream=duration", "-of", "json", path],
        capture_output=True,
        text=True,
    )
    try:
        data = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError:
        return None
    values = [data.get("format", {}).get("duration")] + [s.get("duration") for s in data.get("streams", [])]
    durations = [float(v) for v in values if v not in (None, "N/A")]
    return max(durations) if durations else None
