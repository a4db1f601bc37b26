"""Robustness sets: a derived dataset (manifest + 16 kHz WAV files) made from any dataset, reproducibly.

Conditions, each applied to every example of the source set (audiomentations does the signal work):

- ``noise``: additive noise at each SNR: ``white``, ``pink``, ``brown`` (``AddColorNoise``, spectral decay 0,
  -3.01, -6.02 dB/octave) and ``babble`` (``AddBackgroundNoise`` over the sum of up to four *other* utterances of
  the set); a mix that would clip is scaled down to just below full scale, which keeps its SNR;
- ``reverb``: a room's reverberation at each target RT60 in seconds (``RoomSimulator``, pyroomacoustics' image
  source method with ray tracing: a 6 x 5 x 3 m room, talker and microphone 1.5 m apart at 1.5 m height, the
  absorption chosen for the RT60 by Sabine's formula); the length is kept (the tail past the end is cut), so
  utterance and word times still hold;
- ``gain``: a gain in dB (``Gain``; what clips at full scale is clipped, as a recorder would);
- ``silence``: a pause of N seconds before (``lead``), after (``trail``) or inside (``insert``: at the quietest
  20 ms near the middle) the speech — a long pause is where repetition loops start;
- ``nonspeech``: clips without speech, whose transcript is empty (rows marked ``"nonspeech": true``): digital
  silence, low and loud Gaussian noise (``AddGaussianNoise``), mains hum (50 Hz and harmonics), a 1 kHz tone,
  clipped noise (``ClippingDistortion``).

A derived example's id is ``PARENT~CONDITION`` (``jfk~pink@10dB``; ``nonspeech~hum``), and its row records
``parent_id``, ``perturbation``, ``noise``, ``snr_db``, ``gain_db``, ``silence`` and ``condition``: the reports
group by the id's condition (:func:`whisperbench.scoring.conditions.condition_of`). The clean examples are
copied as ``PARENT~clean``.

The output folder is ``OUT/perturb-<key>``, key = sha256 of the source's content hash, the recipe and the
seed: asking again for the same set finds it there and writes nothing. Every random draw is seeded from
(seed, example id, condition), so a fixed seed gives byte-identical files whatever the order (with the same
numpy and audiomentations versions: both are part of the cache key).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..core.json_files import safe_file_name
from ..core.ranges import Range
from ..core.registry import Registry
from ..errors import DatasetError, OptionError
from ..scoring.conditions import SEPARATOR
from ..types import Example
from .audio import SAMPLE_RATE, load_audio

log = logging.getLogger(__name__)

RECIPE_VERSION = 1  # part of the cache key: bump when the same recipe would write other audio
ROOM_VERSION = 2  # the same, in the keys of recipes with reverberation only (2: the room's ray tracing is seeded)
SILENCE_PLACES = ("lead", "trail", "insert")


#: the ranges a perturbation's numbers must lie in: an SNR of 1e9 dB is clean audio, a gain of 1e9 dB a full-scale
#: square wave, a pause of 1e9 s a file no disk holds
SNR_DB = Range(-30, 60, unit="dB")
GAIN_DB = Range(-60, 40, unit="dB")
PAUSE_S = Range(0, 600, open_low=True, unit="s")


@dataclass(frozen=True)
class Recipe:
    """What to derive: noises at SNRs, gains, pauses (place, seconds), non-speech clips, the clean copies."""

    noises: tuple[str, ...] = ()
    snrs_db: tuple[float, ...] = ()
    gains_db: tuple[float, ...] = ()
    reverbs_s: tuple[float, ...] = ()
    silences: tuple[tuple[str, float], ...] = ()
    nonspeech: tuple[str, ...] = ()
    nonspeech_s: float = 5.0
    clean: bool = True
    seed: int = 0

    def __post_init__(self):
        unknown = [n for n in self.noises if n not in NOISES] + [k for k in self.nonspeech if k not in NONSPEECH]
        unknown += [p for p, _ in self.silences if p not in SILENCE_PLACES]
        if unknown:
            raise DatasetError(
                f"unknown perturbation(s) {unknown}: noises {', '.join(NOISES.names())}; silence places "
                f"{', '.join(SILENCE_PLACES)}; non-speech kinds {', '.join(NONSPEECH.names())}"
            )
        if any(not 0.05 <= rt60 <= 3.0 for rt60 in self.reverbs_s):
            raise DatasetError(
                f"--reverb {','.join(f'{r:g}' for r in self.reverbs_s)}: each RT60 must lie between "
                "0.05 and 3 seconds (a living room is about 0.4 s, a hall 1.5 to 2 s)"
            )
        if bool(self.noises) != bool(self.snrs_db):
            raise DatasetError("noise needs both a noise kind (--noise) and at least one SNR (--snr)")
        for name, values, limit in (
            ("--snr", self.snrs_db, SNR_DB),
            ("--gain", self.gains_db, GAIN_DB),
            ("--silence", [seconds for _, seconds in self.silences], PAUSE_S),
            ("--nonspeech-s", [self.nonspeech_s], PAUSE_S),
        ):
            for value in values:
                try:
                    limit.check(name, value)
                except OptionError as exc:  # one line naming the option, before any audio is written
                    raise DatasetError(str(exc)) from None

    def key(self, content_hash: str) -> str:
        """The cache key: the source's content, this recipe (seed included), the recipe version and the versions
        of the libraries that make the samples (another version may draw other noise)."""
        import audiomentations

        versions = [RECIPE_VERSION, np.__version__, audiomentations.__version__]
        recipe = dataclasses.asdict(self)
        if self.reverbs_s:  # the room simulator's version matters only to recipes that use it
            import pyroomacoustics

            versions += [pyroomacoustics.__version__, ROOM_VERSION]
        else:  # recipes without reverberation keep the keys (and cached sets) they had before it existed
            del recipe["reverbs_s"]
        text = json.dumps([versions, content_hash, recipe], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Derived:
    """One derived example: its manifest row and how to make its samples."""

    row: dict[str, Any]
    make: Callable[[], np.ndarray] = field(repr=False)


def _seed_value(seed: int, *parts: str) -> int:
    return int.from_bytes(hashlib.sha256(json.dumps([seed, *parts]).encode()).digest()[:4], "little")


def _seeded(seed: int, *parts: str) -> None:
    """Seed the generators audiomentations draws from, from (seed, parts): order-independent, reproducible."""
    value = _seed_value(seed, *parts)
    random.seed(value)
    np.random.seed(value)


def _apply(transform, samples: np.ndarray, seed: int, *parts: str) -> np.ndarray:
    _seeded(seed, *parts)
    return transform(samples=samples.astype(np.float32), sample_rate=SAMPLE_RATE)


def _colour_noise(decay_db: float, snr: float, babble: Path | None) -> Any:
    import audiomentations as A

    return A.AddColorNoise(min_snr_db=snr, max_snr_db=snr, min_f_decay=decay_db, max_f_decay=decay_db, p=1.0)


def _babble_noise(snr: float, babble: Path | None) -> Any:
    import audiomentations as A

    return A.AddBackgroundNoise(sounds_path=[str(babble)], min_snr_db=snr, max_snr_db=snr, p=1.0)


@dataclass(frozen=True)
class Noise:
    """A noise ``--noise NAME`` adds at each SNR: its name, a one-line description and ``transform(snr_db,
    babble)``, the audiomentations transform that adds it (``babble``: the file of the other utterances' sum)."""

    name: str
    description: str
    transform: Callable[[float, Path | None], Any]


#: the noises, in the order ``--noise`` lists them (installed packages: entry-point group whisperbench.noises)
NOISES: Registry[Noise] = Registry(
    "noise",
    builtin=lambda: [
        Noise("white", "white noise (flat spectrum)", partial(_colour_noise, 0.0)),
        Noise("pink", "pink noise (-3.01 dB/octave)", partial(_colour_noise, -3.01)),
        Noise("brown", "brown noise (-6.02 dB/octave)", partial(_colour_noise, -6.02)),
        Noise("babble", "up to four other utterances of the set, summed", _babble_noise),
    ],
    kind=Noise,
    group="whisperbench.noises",
    error=DatasetError,
)


def _below_full_scale(samples: np.ndarray) -> np.ndarray:
    """A noisy mix that would clip, scaled down to just below full scale (speech and noise alike: the SNR holds)."""
    peak = float(np.abs(samples).max(initial=0.0))
    return samples * (0.99 / peak) if peak > 0.99 else samples


def _pause(samples: np.ndarray, place: str, seconds: float) -> np.ndarray:
    """``samples`` with ``seconds`` of digital silence before, after, or at the quietest 20 ms near the middle."""
    gap = np.zeros(int(round(seconds * SAMPLE_RATE)), dtype=np.float32)
    if place == "lead":
        return np.concatenate([gap, samples])
    if place == "trail":
        return np.concatenate([samples, gap])
    frame = SAMPLE_RATE // 50
    third = len(samples) // 3
    frames = samples[third : third + (third // frame) * frame].reshape(-1, frame) if third >= frame else None
    cut = (
        third + frame * int(np.argmin((frames**2).sum(axis=1))) + frame // 2
        if frames is not None
        else len(samples) // 2
    )
    return np.concatenate([samples[:cut], gap, samples[cut:]])


def _silence(n: int, seed: int, name: str) -> np.ndarray:
    return np.zeros(n, dtype=np.float32)


def _gaussian(amplitude: float, n: int, seed: int, name: str) -> np.ndarray:
    import audiomentations as A

    noise = A.AddGaussianNoise(min_amplitude=amplitude, max_amplitude=amplitude, p=1.0)
    return _apply(noise, np.zeros(n, dtype=np.float32), seed, name)


def _hum(n: int, seed: int, name: str) -> np.ndarray:
    t = np.arange(n, dtype=np.float64) / SAMPLE_RATE
    return np.asarray(0.03 * sum(np.sin(2 * np.pi * 50 * h * t) / h for h in (1, 2, 3)), dtype=np.float32)


def _tone(n: int, seed: int, name: str) -> np.ndarray:
    t = np.arange(n, dtype=np.float64) / SAMPLE_RATE
    return (0.1 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)


def _clipped_noise(n: int, seed: int, name: str) -> np.ndarray:
    import audiomentations as A

    loud = _gaussian(0.5, n, seed, name)
    clip = A.ClippingDistortion(min_percentile_threshold=30, max_percentile_threshold=30, p=1.0)
    return _apply(clip, loud, seed, name, "clip")


@dataclass(frozen=True)
class NonSpeech:
    """A clip without speech (``--nonspeech NAME``): its name, a one-line description and ``make(samples, seed,
    name)``, its 16 kHz samples (random draws seeded from the seed and the name)."""

    name: str
    description: str
    make: Callable[[int, int, str], np.ndarray]


#: the non-speech clips (installed packages: entry-point group whisperbench.nonspeech)
NONSPEECH: Registry[NonSpeech] = Registry(
    "non-speech clip",
    builtin=lambda: [
        NonSpeech("silence", "digital silence", _silence),
        NonSpeech("noise_low", "Gaussian noise, about -50 dBFS", partial(_gaussian, 0.003)),
        NonSpeech("noise_loud", "Gaussian noise, about -20 dBFS", partial(_gaussian, 0.1)),
        NonSpeech("hum", "mains hum: 50 Hz and two harmonics", _hum),
        NonSpeech("tone", "a 1 kHz tone", _tone),
        NonSpeech("clipped_noise", "loud Gaussian noise, clipped", _clipped_noise),
    ],
    kind=NonSpeech,
    group="whisperbench.nonspeech",
    error=DatasetError,
)


def _nonspeech(kind: str, seconds: float, seed: int) -> np.ndarray:
    """A clip without speech (see the module doc)."""
    return NONSPEECH.get(kind).make(int(round(seconds * SAMPLE_RATE)), seed, kind)


def _row(parent: Example, condition: str, **facts: Any) -> dict[str, Any]:
    ex_id = f"{parent.id}{SEPARATOR}{condition}"
    row = {
        "id": ex_id,
        "audio": f"audio/{safe_file_name(ex_id)}.wav",
        "text": parent.text,
        "parent_id": parent.id,
        "condition": condition,
        **facts,
    }
    if parent.language:
        row["language"] = parent.language
    return row


def plan(examples: list[Example], recipe: Recipe, babble_dir: Path) -> list[Derived]:
    """Every derived example of ``recipe`` over ``examples`` (nothing computed yet)."""
    out: list[Derived] = []
    for ex in examples:
        if recipe.clean:
            out.append(Derived(_row(ex, "clean", perturbation="clean"), partial(_loaded, ex)))
        for kind in recipe.noises:
            for snr in recipe.snrs_db:
                condition = f"{kind}@{snr:g}dB"
                babble = babble_dir / f"{safe_file_name(ex.id)}.wav"
                out.append(
                    Derived(
                        _row(ex, condition, perturbation="noise", noise=kind, snr_db=snr),
                        partial(_noisy, ex, kind, snr, babble, recipe.seed, condition),
                    )
                )
        for rt60 in recipe.reverbs_s:
            condition = f"reverb{rt60:g}s"
            out.append(
                Derived(
                    _row(ex, condition, perturbation="reverb", rt60_s=rt60),
                    partial(_reverberant, ex, rt60, recipe.seed, condition),
                )
            )
        for gain in recipe.gains_db:
            condition = f"gain{gain:+g}dB"
            out.append(
                Derived(
                    _row(ex, condition, perturbation="gain", gain_db=gain),
                    partial(_gained, ex, gain, recipe.seed, condition),
                )
            )
        for place, seconds in recipe.silences:
            condition = f"{place}-silence{seconds:g}s"
            out.append(
                Derived(
                    _row(ex, condition, perturbation="silence", silence=place, silence_s=seconds),
                    partial(_paused, ex, place, seconds),
                )
            )
    for kind in recipe.nonspeech:
        row = {
            "id": f"nonspeech{SEPARATOR}{kind}",
            "audio": f"audio/nonspeech{SEPARATOR}{kind}.wav",
            "text": "",
            "nonspeech": True,
            "parent_id": None,
            "condition": kind,
            "perturbation": "nonspeech",
        }
        out.append(Derived(row, partial(_nonspeech, kind, recipe.nonspeech_s, recipe.seed)))
    return out


def _loaded(ex: Example) -> np.ndarray:
    return load_audio(ex.audio)


def _noisy(ex: Example, kind: str, snr: float, babble: Path, seed: int, condition: str) -> np.ndarray:
    noise = NOISES.get(kind).transform(snr, babble)
    return _below_full_scale(_apply(noise, _loaded(ex), seed, ex.id, condition))


def _gained(ex: Example, gain: float, seed: int, condition: str) -> np.ndarray:
    import audiomentations as A

    return _apply(A.Gain(min_gain_db=gain, max_gain_db=gain, p=1.0), _loaded(ex), seed, ex.id, condition)


def _reverberant(ex: Example, rt60: float, seed: int, condition: str) -> np.ndarray:
    import pyroomacoustics

    # the room's ray tracing draws from pyroomacoustics' own generators (numpy's default_rng and libroom's C++
    # one), which np.random.seed does not reach: unseeded, every write of the same set was different audio
    value = _seed_value(seed, ex.id, condition)
    pyroomacoustics.random.seed(numpy=value, libroom=value)
    return _below_full_scale(_apply(_room(rt60), _loaded(ex), seed, ex.id, condition))


def _room(rt60: float) -> Any:
    """audiomentations' ``RoomSimulator`` with every parameter fixed but the RT60 (see the module doc)."""
    import audiomentations as A

    fixed = {
        "size_x": 6.0,
        "size_y": 5.0,
        "size_z": 3.0,
        "source_x": 2.0,
        "source_y": 2.5,
        "source_z": 1.5,
        "mic_distance": 1.5,
        "mic_azimuth": 0.0,
        "mic_elevation": 0.0,
        "target_rt60": rt60,
    }
    bounds = {f"{side}_{name}": value for name, value in fixed.items() for side in ("min", "max")}
    return A.RoomSimulator(**bounds, calculation_mode="rt60", leave_length_unchanged=True, p=1.0)


def _paused(ex: Example, place: str, seconds: float) -> np.ndarray:
    return _pause(_loaded(ex), place, seconds)


def _write_babble(examples: list[Example], folder: Path, seed: int) -> None:
    """Per example: the sum of up to four other utterances (chosen with the seed), repeated to outlast the longest
    utterance of the set, at -20 dB RMS."""
    import soundfile as sf

    folder.mkdir(parents=True, exist_ok=True)
    longest = max(len(load_audio(ex.audio)) for ex in examples) + SAMPLE_RATE
    for ex in examples:
        others = [o for o in examples if o.id != ex.id]
        if not others:
            raise DatasetError("babble noise needs at least two utterances in the dataset (it is made of the others)")
        rng = np.random.default_rng(int(hashlib.sha256(f"{seed}/{ex.id}".encode()).hexdigest()[:8], 16))
        chosen = [others[i] for i in sorted(rng.choice(len(others), size=min(4, len(others)), replace=False))]
        voices = [load_audio(o.audio) for o in chosen]
        mix = np.zeros(max(len(v) for v in voices), dtype=np.float64)
        for voice in voices:
            mix[: len(voice)] += voice
        mix = np.resize(mix, longest)  # repeated to outlast every utterance: the SNR holds over the whole example
        mix /= max(float(np.sqrt(np.mean(mix**2))), 1e-9) * 10  # -20 dB RMS: headroom; the SNR sets the level
        sf.write(folder / f"{safe_file_name(ex.id)}.wav", mix.astype(np.float32), SAMPLE_RATE, subtype="FLOAT")


def perturb(examples: list[Example], content_hash: str, recipe: Recipe, out_dir: str | Path) -> Path:
    """Write (or find, cached) the derived dataset; returns its manifest path."""
    import soundfile as sf

    try:
        import audiomentations  # noqa: F401
    except ImportError as exc:
        raise DatasetError(
            "whisperbench perturb needs audiomentations: pip install 'whisperbench[robustness]'"
        ) from exc
    folder = Path(out_dir) / f"perturb-{recipe.key(content_hash)}"
    manifest = folder / "manifest.jsonl"
    if manifest.exists():
        log.info("derived set already written: %s", manifest)
        return manifest
    work = folder.with_name(folder.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    (work / "audio").mkdir(parents=True)
    if "babble" in recipe.noises:
        _write_babble(examples, work / "babble", recipe.seed)
    derived = plan(examples, recipe, work / "babble")
    for item in derived:
        sf.write(work / item.row["audio"], np.clip(item.make(), -1.0, 1.0), SAMPLE_RATE, subtype="PCM_16")
    shutil.rmtree(work / "babble", ignore_errors=True)
    rows = [dict(d.row, source_content_hash=content_hash, seed=recipe.seed) for d in derived]
    (work / "manifest.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    work.rename(folder)
    return manifest


def _items(text: str | None) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def _numbers(text: str | None, what: str) -> tuple[float, ...]:
    try:
        return tuple(float(item) for item in _items(text))
    except ValueError as exc:
        raise DatasetError(f"{what}: expected numbers separated by commas, got {text!r}") from exc


def recipe_from_text(
    noise: str | None = None,
    snr: str | None = None,
    gain: str | None = None,
    silence: str | None = None,
    nonspeech: str | None = None,
    nonspeech_s: float = 5.0,
    clean: bool = True,
    seed: int = 0,
    reverb: str | None = None,
) -> Recipe:
    """A :class:`Recipe` from the command line's comma lists (``silence``: ``PLACE:SECONDS,...``;
    ``nonspeech``: kinds, or ``all``)."""
    pauses = []
    for item in _items(silence):
        place, _, seconds = item.partition(":")
        pauses.append((place, _numbers(seconds or "nan", f"--silence {item}")[0]))
        if not seconds or not pauses[-1][1] > 0:
            raise DatasetError(f"--silence {item}: expected PLACE:SECONDS with a positive duration, e.g. insert:10")
    kinds = tuple(NONSPEECH.names()) if _items(nonspeech) == ["all"] else tuple(_items(nonspeech))
    return Recipe(
        noises=tuple(_items(noise)),
        snrs_db=_numbers(snr, "--snr"),
        gains_db=_numbers(gain, "--gain"),
        reverbs_s=_numbers(reverb, "--reverb"),
        silences=tuple(pauses),
        nonspeech=kinds,
        nonspeech_s=nonspeech_s,
        clean=clean,
        seed=seed,
    )
