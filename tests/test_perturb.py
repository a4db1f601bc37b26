"""`whisperbench perturb`: derived robustness sets are reproducible to the byte, cached, and what they claim
(the SNR measured from the written files, the pauses, empty transcripts on non-speech clips)."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from whisperbench.cli import main
from whisperbench.datasets import load_dataset
from whisperbench.scoring.conditions import condition_of

from .conftest import BUNDLED

SOURCE = str(BUNDLED / "shortform" / "manifest.jsonl")
ARGS = [
    "--noise",
    "pink,babble",
    "--snr",
    "10,0",
    "--gain=-6",
    "--silence",
    "lead:1,insert:2",
    "--nonspeech",
    "silence,noise_low,hum",
    "--nonspeech-s",
    "1",
    "--limit",
    "2",
]


def _needs_audiomentations() -> None:
    pytest.importorskip("audiomentations", reason="perturb's signal work: pip install 'whisperbench[robustness]'")


def _perturb(out: Path, capsys, *extra: str) -> Path:
    _needs_audiomentations()
    capsys.readouterr()
    assert main(["perturb", "--dataset", SOURCE, "--out", str(out), *ARGS, *extra]) == 0
    return Path(capsys.readouterr().out.strip())


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_fixed_seed_is_byte_identical_and_cached(tmp_path, capsys):
    first, second = _perturb(tmp_path / "a", capsys), _perturb(tmp_path / "b", capsys)
    assert first.parent.name == second.parent.name  # the key: source content, recipe, seed
    assert _digests(first.parent) == _digests(second.parent) and len(_digests(first.parent)) == 2 * 8 + 3 + 1
    stamp = first.stat().st_mtime_ns
    assert _perturb(tmp_path / "a", capsys) == first and first.stat().st_mtime_ns == stamp  # found, not rewritten
    other = _perturb(tmp_path / "a", capsys, "--seed", "1")
    assert other.parent != first.parent
    differs = {name for name, digest in _digests(other.parent).items() if _digests(first.parent).get(name) != digest}
    assert any("pink@" in name for name in differs) and "audio/jfk~clean.wav" not in differs


def test_derived_rows_are_what_they_claim(tmp_path, capsys):
    manifest = _perturb(tmp_path, capsys)
    rows = {r["id"]: r for r in map(json.loads, manifest.read_text().splitlines())}
    read = lambda ex_id: sf.read(manifest.parent / rows[ex_id]["audio"], dtype="float64")[0]  # noqa: E731
    for parent in ("jfk", "1089-134691-0001"):
        clean = read(f"{parent}~clean")
        for kind in ("pink", "babble"):
            for snr in (10, 0):
                row = rows[f"{parent}~{kind}@{snr}dB"]
                assert (row["parent_id"], row["noise"], row["snr_db"], row["perturbation"]) == (
                    parent,
                    kind,
                    snr,
                    "noise",
                )
                mix = read(row["id"])
                scale = mix @ clean / (clean @ clean)  # a mix that would clip is scaled down as a whole
                noise = mix - scale * clean
                measured = 10 * np.log10(np.mean((scale * clean) ** 2) / np.mean(noise**2))
                assert measured == pytest.approx(snr, abs=0.1)
        quieter = read(f"{parent}~gain-6dB")
        assert 20 * np.log10(np.abs(quieter).max() / np.abs(clean).max()) == pytest.approx(-6, abs=0.05)
        lead, inserted = read(f"{parent}~lead-silence1s"), read(f"{parent}~insert-silence2s")
        assert len(lead) == len(clean) + 16000 and not lead[:16000].any()
        assert np.array_equal(lead[16000:], clean) and len(inserted) == len(clean) + 32000
    assert rows["nonspeech~silence"]["text"] == "" and not read("nonspeech~silence").any()
    hum = read("nonspeech~hum")
    assert np.argmax(np.abs(np.fft.rfft(hum))) * 16000 / len(hum) == pytest.approx(50, abs=1)
    checked = load_dataset(str(manifest))  # empty transcripts load where the row says nonspeech
    assert len(checked.dataset) == len(rows) and not checked.invalid
    assert {condition_of(i) for i in rows} >= {"clean", "pink@10dB", "babble@0dB", "silence", "hum"}


def test_bad_recipe_is_one_clear_error(tmp_path, capsys):
    assert main(["perturb", "--dataset", SOURCE, "--out", str(tmp_path), "--noise", "purple", "--snr", "5"]) == 2
    assert "unknown perturbation(s) ['purple']" in capsys.readouterr().err
    assert main(["perturb", "--dataset", SOURCE, "--out", str(tmp_path), "--noise", "pink"]) == 2
    assert main(["perturb", "--dataset", SOURCE, "--out", str(tmp_path), "--silence", "insert"]) == 2
    assert "PLACE:SECONDS" in capsys.readouterr().err


def test_robustness_table_per_condition(tmp_path, capsys):
    _needs_audiomentations()
    import jiwer

    from whisperbench.scoring import normalize

    from .conftest import record_run

    capsys.readouterr()
    assert (
        main(
            [
                "perturb",
                "--dataset",
                SOURCE,
                "--out",
                str(tmp_path / "sets"),
                "--noise",
                "pink",
                "--snr",
                "10,0",
                "--nonspeech",
                "silence,hum",
                "--nonspeech-s",
                "1",
                "--limit",
                "2",
            ]
        )
        == 0
    )
    manifest = Path(capsys.readouterr().out.strip())
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    half = lambda text: " ".join(text.split()[: len(text.split()) // 2])  # noqa: E731
    runs = tmp_path / "runs"
    record_run(runs, manifest, rows, "ref", lambda r: r["text"])
    record_run(
        runs,
        manifest,
        rows,
        "cand",
        lambda r: half(r["text"]) if r["condition"] == "pink@0dB" else r["text"] or "Thank you.",
    )
    assert (
        main(["report", "--runs-dir", str(runs), "--reference", "ref", "--quiet", "--out", str(tmp_path / "r.md")]) == 0
    )
    section = (tmp_path / "r.md").read_text().split("## Robustness")[1]
    pivot, long = section.split("QoI % against")[0], section.split("Per run and condition")[1]
    header = next(line for line in pivot.splitlines() if line.startswith("| Implementation"))
    assert [c.strip() for c in header.split("|")[2:-1]] == ["clean", "pink@10dB", "pink@0dB"]  # clean, high to low SNR
    cand = next(line for line in pivot.splitlines() if line.startswith("| recorded cand"))
    noisy = [r for r in rows if r["condition"] == "pink@0dB"]
    expected = 100 * jiwer.wer(
        [normalize(r["text"], "english") for r in noisy], [normalize(half(r["text"]), "english") for r in noisy]
    )
    assert [c.strip() for c in cand.split("|")[2:-1]] == ["0.0", "0.0", f"{expected:.1f}"]
    lines = {
        (c[1].strip(), c[2].strip()): [x.strip() for x in c[3:-1]]
        for c in (line.split("|") for line in long.splitlines() if line.startswith(("| recorded", "| **recorded")))
    }
    assert lines[("recorded cand", "pink@0dB")][2] == "0.0" and lines[("recorded cand", "pink@10dB")][2] == "100.0"
    assert lines[("recorded cand", "hum")][:5] == [
        "1",
        "–",
        "0.0",
        "2",
        "0",
    ]  # QoI 0: words where the reference had none
    assert lines[("recorded cand", "hum")][6] == "1" and lines[("**recorded ref** (reference)", "hum")][3] == "0"
    assert main(["report", "--runs-dir", str(runs), "--reference", "ref", "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert page.count("<polyline") == 2 and "recorded cand, pink noise" in page


def test_reverberation_has_the_rt60_it_claims(tmp_path, capsys):
    """The room's impulse response, recovered from (clean, reverberant) by regularised deconvolution, decays at
    the target RT60 as pyroomacoustics' own measure reads it (Schroeder integration over 20 dB): longer for 0.8 s
    than for 0.3 s, each near its target; the length is kept, so times in the transcript still hold."""
    pra = pytest.importorskip("pyroomacoustics", reason="the robustness extra: pip install 'whisperbench[robustness]'")
    capsys.readouterr()
    assert main(["perturb", "--dataset", SOURCE, "--out", str(tmp_path), "--reverb", "0.3,0.8", "--limit", "1"]) == 0
    manifest = Path(capsys.readouterr().out.strip())
    rows = {r["id"]: r for r in map(json.loads, manifest.read_text().splitlines())}
    clean = sf.read(manifest.parent / rows["jfk~clean"]["audio"], dtype="float64")[0]
    measured = {}
    for rt60 in (0.3, 0.8):
        row = rows[f"jfk~reverb{rt60:g}s"]
        assert (row["perturbation"], row["rt60_s"], row["parent_id"]) == ("reverb", rt60, "jfk")
        wet = sf.read(manifest.parent / row["audio"], dtype="float64")[0]
        assert len(wet) == len(clean) and not np.allclose(wet, clean)
        n = 2 * len(clean)
        spectrum = np.fft.rfft(clean, n)
        gain = np.fft.rfft(wet, n) * np.conj(spectrum) / (np.abs(spectrum) ** 2 + 1e-3 * np.mean(np.abs(spectrum) ** 2))
        measured[rt60] = pra.experimental.measure_rt60(np.fft.irfft(gain, n)[:32000], fs=16000, decay_db=20)
        assert 0.8 * rt60 < measured[rt60] < 1.35 * rt60, measured
    assert measured[0.8] > 2 * measured[0.3]
    capsys.readouterr()  # written again elsewhere: the same bytes (the room's ray tracing is seeded too)
    assert (
        main(["perturb", "--dataset", SOURCE, "--out", str(tmp_path / "again"), "--reverb", "0.3,0.8", "--limit", "1"])
        == 0
    )
    again = Path(capsys.readouterr().out.strip())
    assert _digests(again.parent) == _digests(manifest.parent)
    assert main(["perturb", "--dataset", SOURCE, "--out", str(tmp_path), "--reverb", "9"]) == 2
    assert "between 0.05 and 3 seconds" in capsys.readouterr().err
