"""Quality against size: the variant sweep, its trade-off table, ggml's own quantizer, Core ML compression."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jiwer
import numpy as np
import pytest

from tests.conftest import THREADS
from whisperbench.cli import main
from whisperbench.errors import ModelError
from whisperbench.reports.tradeoff import pareto_front
from whisperbench.scoring import normalize
from whisperbench.store.runs import open_run

from .test_html_report import _render


def test_numpy_q8_0_and_q5_0_equal_ggmls_own_quantizer_byte_for_byte():
    from whisperbench.models import ggml, ggml_quantize
    from whisperbench.models.ggml_format import Q4_K, Q5_0, Q8_0

    if ggml_quantize.library() is None:
        pytest.skip("no libggml-base (pip install pywhispercpp)")
    weight = np.random.default_rng(0).standard_normal((6, 512)).astype(np.float32) * 0.05
    assert ggml_quantize.quantize(weight, Q8_0) == ggml.quantize_q8_0(weight, 2)
    assert ggml_quantize.quantize(weight, Q5_0) == ggml.quantize_q5_0(weight, 2)
    assert len(ggml_quantize.quantize(weight, Q4_K)) == 6 * 2 * 144  # two 144-byte super-blocks per row
    with pytest.raises(ModelError, match="packs 256 values per block: w has rows of 384"):
        ggml_quantize.quantize(weight[:, :384], Q4_K, "w")


def test_pareto_front_against_brute_force():
    rng = np.random.default_rng(1)
    points = [(float(s), float(q)) for s, q in zip(rng.integers(10, 100, 40), rng.integers(50, 100, 40))]
    expected = [not any(o[0] <= p[0] and o[1] >= p[1] and o != p for o in points) for p in points]
    assert pareto_front(points) == expected
    assert pareto_front([(None, 90.0), (10.0, 80.0)]) == [False, True]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, tiny_short_module):
    """One sweep: openai-whisper (the reference), faster-whisper float32/int8 (float16 refused on CPUs without
    it), whisper.cpp f16, a corrupted q8_0 and q4_k (that tiny.en's 384-wide rows cannot hold)."""
    from whisperbench.models import converted

    from .conftest import needs_adapter

    for adapter in ("openai-whisper", "faster-whisper", "whisper-cpp"):
        needs_adapter(adapter, "tiny.en")

    runs = tmp_path_factory.mktemp("sweep-runs")
    q8 = converted("tiny.en", "ggml", "q8_0")
    cache = _cache_with_a_cut_file(q8, tmp_path_factory.mktemp("sweep-cache"))  # its run must fail, alone
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WHISPERBENCH_CACHE", str(cache))
        code = main(
            [
                "sweep",
                "--model",
                "tiny.en",
                "--dataset",
                str(tiny_short_module),
                "--limit",
                "2",
                "--implementations",
                "faster-whisper,whisper-cpp",
                "--variants",
                "float32,int8,float16,f16,q8_0,q4_k",
                "--runs-dir",
                str(runs),
                "--min-qoi",
                "100",
                "-o",
                THREADS,
            ]
        )
    assert code == 0 and q8.stat().st_size > 10_000_000  # the test run's own q8_0 file is whole
    stem = runs / "tradeoff_tiny.en_tiny-shortform"
    return runs, json.loads(Path(f"{stem}.json").read_text()), stem


def _cache_with_a_cut_file(cut: Path, private: Path) -> Path:
    """A cache folder (``private``) that is the test run's cache, in which ``cut`` lies, but for ``cut``: a file of
    its own holding the first half of ``cut``'s bytes. Every other folder is linked (a conversion the sweep builds
    is built in the shared cache, under its lock); the cache's own files (digests, audio facts) are left out, so
    the sweep keeps its own. The shared file stays whole for the tests the other pytest-xdist worker runs
    meanwhile."""
    shared = Path(os.environ["WHISPERBENCH_CACHE"])
    *folders, name = cut.relative_to(shared).parts
    here, there = private, shared
    for depth, folder in enumerate([*folders, None]):
        for entry in there.iterdir():
            linked = entry.is_dir() if depth == 0 else not entry.name.endswith(".lock")
            if entry.name not in (folder, name) and linked:
                (here / entry.name).symlink_to(entry)
        if folder is not None:
            here, there = here / folder, there / folder
            here.mkdir()
    whole = cut.read_bytes()
    (here / name).write_bytes(whole[: len(whole) // 2])
    return private


@pytest.fixture(scope="module")
def tiny_short_module():
    from .conftest import BUNDLED

    return BUNDLED / "shortform" / "manifest.jsonl"


def test_sweep_runs_each_variant_and_a_broken_one_fails_alone(sweep):
    runs, record, _ = sweep
    status = {v["label"]: (v["status"], v["error"] or "") for v in record["variants"]}
    assert status["openai-whisper"][0] == "finished"
    for label in ("faster-whisper-float32", "faster-whisper-int8", "whisper-cpp-f16"):
        assert status[label][0] == "finished", status[label]
    assert status["whisper-cpp-q8_0"][0] == "failed"
    assert "ggml" in status["whisper-cpp-q8_0"][1] and "q8_0" in status["whisper-cpp-q8_0"][1]  # names the file
    assert status["whisper-cpp-q4_k"] == ("failed", status["whisper-cpp-q4_k"][1])
    assert "rows of 384" in status["whisper-cpp-q4_k"][1]
    import ctranslate2

    if "float16" not in ctranslate2.get_supported_compute_types("cpu"):
        assert status["faster-whisper-float16"][0] == "refused"
        assert "get_supported_compute_types" in status["faster-whisper-float16"][1]


def test_tradeoff_table_numbers_are_the_stored_runs(sweep):
    runs, record, stem = sweep
    from whisperbench.reports.tradeoff import tradeoff_frame

    finished = [v["run"] for v in record["variants"] if v["status"] == "finished"]
    reference = open_run(record["reference"], runs)
    frame = tradeoff_frame([open_run(name, runs) for name in finished], reference, min_qoi=100)
    assert sorted(frame["Run"]) == sorted(finished)
    for _, row in frame.iterrows():
        run = open_run(row["Run"], runs)
        refs = [normalize(p.transcript, "english") for p in run.predictions]
        hyps = [normalize(p.hypothesis, "english") for p in run.predictions]
        assert row["WER %"] == pytest.approx(100 * jiwer.wer(refs, hyps))
        loaded = Path(run.info["adapter_info"]["weights"]["loaded_path"])
        files = [f for f in loaded.rglob("*") if f.is_file()] if loaded.is_dir() else [loaded]
        assert row["Size MB"] == pytest.approx(sum(os.path.getsize(f) for f in files) / 1e6, abs=0.01)
        assert run.summary.model_size_mb == row["Size MB"]
        assert run.info["variant"] == (row["Variant"] or None)
    # the same weights and decoder as the reference's transcripts -> no regression anywhere: QoI 100, gate passes
    f16 = frame[frame["Variant"] == "f16"].iloc[0]
    assert f16["QoI %"] == 100.0 and f16["Gate"] == "PASS"
    # the front: the variants that no other is both no larger than and no worse on QoI
    points = list(zip(frame["Size MB"], frame["QoI %"]))
    assert list(frame["Front"]) == [not any(o[0] <= p[0] and o[1] >= p[1] and o != p for o in points) for p in points]
    text = Path(f"{stem}.md").read_text()
    assert "whisper-cpp-q4_k: failed" in text and "One sweep command" in text


def test_a_variant_identical_to_the_reference_scores_qoi_100(sweep, tiny_short_module):
    """whisper.cpp's default is f16: a run with the default options is the f16 variant's reference, bit for bit."""
    runs, record, _ = sweep
    from whisperbench.reports.tradeoff import tradeoff_frame

    f16 = open_run(next(v["run"] for v in record["variants"] if v["label"] == "whisper-cpp-f16"), runs)
    assert (
        main(
            [
                "run",
                "--adapter",
                "whisper-cpp",
                "--model",
                "tiny.en",
                "--dataset",
                str(tiny_short_module),
                "--limit",
                "2",
                "--runs-dir",
                str(runs),
                "--name",
                "cpp-default",
                "-o",
                THREADS,
            ]
        )
        == 0
    )
    default = open_run("cpp-default", runs)
    assert [p.hypothesis for p in default.predictions] == [p.hypothesis for p in f16.predictions]
    row = tradeoff_frame([f16], default).set_index("Run").loc[f16.name]
    assert row["QoI %"] == 100.0 and row["WER %"] == pytest.approx(default.summary.wer)


def test_tradeoff_page_in_a_browser_plots_every_variant(sweep, tmp_path):
    runs, record, stem = sweep
    dom = _render(Path(f"{stem}.html"), tmp_path)
    finished = sum(v["status"] == "finished" for v in record["variants"])
    assert dom.count('class="plot tradeoff"') == 2
    assert dom.count('class="point"') == 2 * finished
    assert 'sortable tradeoff"' in dom and "Not run" in dom and "rows of 384" in dom


def test_ggml_types_beyond_q8_0_and_q5_0_run_in_whisper_cpp(tiny_short, tmp_path, shared_runs):
    runs_dir = tmp_path
    from whisperbench.models.ggml_format import TYPE_NAMES, validate_ggml_header

    reference = shared_runs.reference(tiny_short, limit=1)
    for quantization in ("q5_1", "q4_1"):
        assert (
            main(
                [
                    "run",
                    "--adapter",
                    "whisper-cpp",
                    "--model",
                    "tiny.en",
                    "--dataset",
                    str(tiny_short),
                    "--limit",
                    "1",
                    "--runs-dir",
                    str(runs_dir),
                    "--name",
                    quantization,
                    "-o",
                    f"quantization={quantization}",
                ]
            )
            == 0
        )
        run = open_run(quantization, runs_dir)
        header = validate_ggml_header(run.info["adapter_info"]["weights"]["loaded_path"])
        assert TYPE_NAMES[header.weight_type] == quantization and header.qnt_version == 2
        # jfk in a 4- or 5-bit model: the words of the reference (normalized), give or take one
        ref = normalize(reference.predictions[0].hypothesis, "english")
        assert jiwer.wer(ref, normalize(run.predictions[0].hypothesis, "english")) <= 0.1, quantization


@pytest.mark.slow  # a float16 Core ML export (~20 s) and its palettization (pal6: k-means of 64, not pal8's 256)
def test_coreml_palettized_weights_are_what_the_program_holds(tiny_short, tmp_path, shared_runs):
    """pal6 of tiny.en: every compressed constant maps onto a model tensor, expands as coremltools'
    decompress_weights does (6-bit indices: words unpacked across byte boundaries), takes 6 bits per weight, and
    transcribes like float32 on one clip. pal6, not pal8: coremltools' k-means with 256 clusters (scikit-learn,
    without kmeans1d) took most of this test's 119 s in CI (2026-11-29); with 64, about a tenth of pal8's time on
    the encoder here."""
    runs_dir = tmp_path
    from whisperbench.models import converted
    from whisperbench.models.ane import load_ane_model
    from whisperbench.models.coreml_compress import (
        _compressed_names,
        check_decompression,
        compressed_state_dict,
        program_weights,
    )

    folder = converted("tiny.en", "coreml", "pal6")
    full = converted("tiny.en", "coreml")
    state, facts = compressed_state_dict(folder, load_ane_model("tiny.en").state_dict())
    assert facts["compressed_tensors"] > 60 and check_decompression(folder) == facts["compressed_tensors"]
    decoder = folder / "decoder.mlpackage"
    weights = program_weights(decoder)
    palettized = [name for _, name in _compressed_names(decoder)]
    assert (
        max(len(np.unique(weights[name].astype(np.float32))) for name in palettized) <= 64
    )  # 2^6 values per palettized weight
    size = lambda path: sum(f.stat().st_size for f in path.rglob("*") if f.is_file())  # noqa: E731
    assert 0.37 < size(folder) / size(full) < 0.42  # 6 bits per weight instead of 16, plus the tables (0.381)
    reference = shared_runs.get("ane-pytorch", tiny_short, limit=1)
    assert (
        main(
            [
                "run",
                "--adapter",
                "ane-pytorch",
                "--model",
                "tiny.en",
                "--dataset",
                str(tiny_short),
                "--limit",
                "1",
                "--runs-dir",
                str(runs_dir),
                "--name",
                "pal6",
                "-o",
                "compression=pal6",
            ]
        )
        == 0
    )
    pal6 = open_run("pal6", runs_dir)
    assert pal6.info["adapter_info"]["compression"]["checked_against_decompress_weights"] > 60
    assert pal6.predictions[0].hypothesis == reference.predictions[0].hypothesis


def test_ios18_table_lookup_equals_coremltools_on_every_layout():
    """:func:`lut_to_dense` (the iOS 18 ``constexpr_lut_to_dense``) against coremltools' own
    ``optimize._utils.lut_to_dense``: one table, tables per group of rows, blocks on two axes, vectors."""
    pytest.importorskip("coremltools", reason="coremltools not installed: pip install 'whisperbench[coreml]'")
    from coremltools.optimize import _utils

    from whisperbench.models.coreml_compress import lut_to_dense

    rng = np.random.default_rng(0)
    layouts = [
        ((6, 2), (2, 1, 4, 1), None),
        ((64, 6, 1, 1), (4, 1, 1, 1, 16, 1), None),
        ((8, 6, 3), (4, 3, 1, 64, 1), None),
        ((2, 2, 2), (1, 1, 1, 2, 3), 1),
        ((2, 2, 2), (1, 1, 1, 2, 3), 2),
        ((4, 6), (2, 3, 4, 2), 0),
        ((4, 6), (2, 1, 4, 3), -1),
    ]
    for indices_shape, lut_shape, vector_axis in layouts:
        lut = rng.standard_normal(lut_shape).astype(np.float16)
        indices = rng.integers(0, lut_shape[-2], indices_shape).astype(np.uint8)
        ours, theirs = lut_to_dense(indices, lut, vector_axis), _utils.lut_to_dense(indices, lut, vector_axis)
        assert ours.shape == theirs.shape and np.array_equal(ours, theirs), (indices_shape, lut_shape, vector_axis)


def _distinct_per_table(weight: np.ndarray, blocks: tuple[int, ...]) -> int:
    """The most distinct values any one table's block of ``weight`` holds (``blocks``: tables per axis)."""
    split = [d for n, b in zip(weight.shape, blocks) for d in (b, n // b)]
    order = list(range(0, 2 * len(blocks), 2)) + list(range(1, 2 * len(blocks), 2))
    grouped = weight.astype(np.float32).reshape(split).transpose(order).reshape(int(np.prod(blocks)), -1)
    return max(len(np.unique(row)) for row in grouped)  # float32: numpy's float16 sort can leave duplicates


@pytest.mark.long_running  # an iOS 18 float16 Core ML export (~20 s), its grouped palettization (~1 min), two clips
def test_coreml_grouped_palettization_has_a_table_per_16_channels(tiny_short, tmp_path, shared_runs):
    """pal4g16 of tiny.en: made from an iOS 18 export; each weight has a table of at most 16 values for every
    16 output channels (8 rows for the 51864-token embedding, channels for the encoder's positional
    embedding, as coreml.json records), and more than 16 values over the tensor (grouped, not per
    tensor); the expansion equals coremltools' decompression tensor by tensor; it transcribes two clips."""
    from whisperbench.models import converted
    from whisperbench.models.ane import load_ane_model
    from whisperbench.models.coreml_compress import (
        check_decompression,
        compressed_state_dict,
        load_program,
        read_export,
    )

    folder = converted("tiny.en", "coreml", "pal4g16")
    info = json.loads((folder / "coreml.json").read_text())
    assert info["deployment_target"] == "macOS15/iOS18" and info["compression"]["granularity"] == "per_grouped_channel"
    programs = read_export(folder)
    state, facts = compressed_state_dict(folder, load_ane_model("tiny.en").state_dict(), programs)
    assert facts["compressed_tensors"] > 60 and check_decompression(folder, programs) == facts["compressed_tensors"]
    grouped_by_16 = 0
    for package, (weights, _) in programs.items():
        exceptions = info["compression"]["exceptions"][package]
        for op in load_program(folder / package).functions["main"].operations:
            if op.op_type != "constexpr_lut_to_dense":
                continue
            name, blocks = op.outputs[0].name.removesuffix("_palettized"), op.lut.val.shape[:-2]
            weight = weights[name]
            axis, size = next(
                ((e["channel_axis"], e["group_size"]) for n, e in exceptions.items() if n == name), (0, 16)
            )
            assert blocks[axis] == weight.shape[axis] // size and np.prod(blocks) == blocks[axis], name
            assert _distinct_per_table(weight, blocks) <= 16, name
            assert len(np.unique(weight.astype(np.float32))) > 16, name  # one table per tensor: 16 at most
            grouped_by_16 += size == 16
    assert grouped_by_16 > 60
    reference = shared_runs.get("ane-pytorch", tiny_short, limit=2)
    assert (
        main(
            [
                "run",
                "--adapter",
                "ane-pytorch",
                "--model",
                "tiny.en",
                "--dataset",
                str(tiny_short),
                "--limit",
                "2",
                "--runs-dir",
                str(tmp_path),
                "--name",
                "pal4g16",
                "-o",
                "compression=pal4g16",
            ]
        )
        == 0
    )
    run = open_run("pal4g16", tmp_path)
    assert run.summary.num_failed == 0
    assert run.info["adapter_info"]["compression"]["checked_against_decompress_weights"] > 60
    for got, expected in zip(run.predictions, reference.predictions):  # the words, give or take one per clip
        ref = normalize(expected.hypothesis, "english")
        assert jiwer.wer(ref, normalize(got.hypothesis, "english")) <= 0.1, (got.hypothesis, expected.hypothesis)
