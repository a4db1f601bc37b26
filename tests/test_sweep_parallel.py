"""A parallel sweep (``sweep --parallel N``) gives the runs of a sequential one: same transcripts, same scores,
entries in the plan's order, a failing variant failed alone; threads per variant share the cores."""

from __future__ import annotations

import logging

import jiwer
import pytest

from whisperbench.harness.sweep import SweepEntry, Variant, run_sweep, share_cores
from whisperbench.process.host import usable_cpus
from whisperbench.scoring import normalize
from whisperbench.store.runs import open_run

#: two real variants around a planted failure: openai-whisper given an option it does not have fails in its child
PLAN = [
    Variant("faster-whisper", "float32", (("compute_type", "float32"),)),
    Variant("openai-whisper", "", (("no_such_option", "1"),)),
    Variant("faster-whisper", "int8", (("compute_type", "int8"), ("stored", "compute-type"))),
]


def test_share_cores_never_oversubscribes():
    for cores in (1, 2, 3, 8, 16):
        for parallel in (1, 2, 3, 5, 32):
            for threads in (1, 2, 4, 16):
                for variants in (1, 2, 7):
                    at_once, each = share_cores(parallel, threads, variants, cores)
                    assert 1 <= at_once <= min(parallel, variants, cores) and 1 <= each <= threads
                    assert at_once * each <= cores
                    # no thread given up needlessly: one more each would oversubscribe, or more were not asked
                    assert each == threads or at_once * (each + 1) > cores


def _sweep(runs, tiny_short, parallel: int) -> list[SweepEntry]:
    from whisperbench.adapters import DecodingOptions
    from whisperbench.harness.runner import RunRequest

    base = RunRequest(
        adapter="",
        model="tiny.en",
        dataset=str(tiny_short),
        runs_dir=str(runs),
        limit=2,
        decoding=DecodingOptions.from_pairs(["threads=1"]),
    )
    heard: list[str] = []
    entries = run_sweep(
        PLAN, base, "tiny-shortform", report=lambda e, n, total: heard.append(e.variant.label), parallel=parallel
    )
    assert sorted(heard) == sorted(v.label for v in PLAN)  # each variant reported once, as it ended
    return entries


def test_parallel_sweep_equals_sequential_and_a_failure_stays_alone(tmp_path, tiny_short, caplog):
    from .conftest import needs_adapter

    needs_adapter("faster-whisper", "tiny.en")
    needs_adapter("openai-whisper", "tiny.en")
    sequential = _sweep(tmp_path / "sequential", tiny_short, parallel=1)
    with caplog.at_level(logging.INFO, logger="whisperbench"):
        parallel = _sweep(tmp_path / "parallel", tiny_short, parallel=3)
    cores = usable_cpus()
    at_once = min(3, len(PLAN), cores)  # all three start (the planted one fails in its child, not before)
    assert f"{at_once} variant(s) at once, each in its own process with 1 thread(s), on {cores} core(s)" in caplog.text

    for entries in (sequential, parallel):
        assert [e.variant for e in entries] == PLAN  # the plan's order, whatever order they ended in
        assert [e.status for e in entries] == ["finished", "failed", "finished"], [(e.status, e.error) for e in entries]
        assert "no_such_option" in (entries[1].error or "")
    for seq, par in zip(sequential, parallel):
        if seq.status != "finished":
            continue
        assert seq.run == par.run
        a, b = open_run(str(seq.run), tmp_path / "sequential"), open_run(str(par.run), tmp_path / "parallel")
        assert [(p.id, p.hypothesis, p.status) for p in a.predictions] == [
            (p.id, p.hypothesis, p.status) for p in b.predictions
        ]
        for field in (
            "wer",
            "wer_ok",
            "cer",
            "substitutions",
            "deletions",
            "insertions",
            "transcript_words",
            "num_failed",
            "model_size_mb",
        ):
            assert getattr(a.summary, field) == getattr(b.summary, field), field
        assert b.meta.execution["threads"] == 1
        # and the score is the transcripts' own (an independent WER)
        refs = [normalize(p.transcript, "english") for p in b.predictions]
        hyps = [normalize(p.hypothesis, "english") for p in b.predictions]
        assert b.summary.wer == pytest.approx(100 * jiwer.wer(refs, hyps))
