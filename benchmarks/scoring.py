"""Scoring at scale: fresh scoring against the naive loop, and compare/gate/report on stored runs of
1k to 1M predictions, each with its time and peak memory, measured in one run.

Goal 1 (fresh scoring, one core): the naive loop (openai-whisper's normalizer + ``jiwer.process_words`` per
pair, what the scorer did before) against ``score_prediction`` (compiled normalizer, rapidfuzz alignment,
normalized texts cached by content), on hypotheses made by random word edits of the shared (or bundled)
transcripts; the counts are checked equal pair by pair. Printed cold (every cache emptied before each
pair) and with the references cached (each transcript scored against many hypotheses, as a benchmark does).

Goals 2, 3 and 6: a reference and a candidate run of N synthetic predictions are written as real run stores
(run.json + predictions.jsonl, as the runner writes them); each step then runs in a fresh process (its own
peak RSS): ``compare`` (which builds the runs' score tables the first time), ``compare`` again (tables
fresh: what ``compare``/``gate`` cost from then on), ``gate``, and ``report`` (leaderboard + per-language
table, markdown). On the smallest size the figures are checked equal to the in-memory path (the predictions
scored afresh).

    python benchmarks/scoring.py [--sizes 1000,10000,100000,1000000] [--pairs 3000]
    python benchmarks/scoring.py --cold [--sizes 1000,10000,100000]   # the commands a CI job runs (cold.py)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from whisperbench.process.host import peak_rss_mb
from whisperbench.reports import compare_runs
from whisperbench.scoring import qoi, score_prediction, summarize
from whisperbench.store.runs import PREDICTIONS, RunStore, open_run
from whisperbench.types import Prediction

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cold as cold_path  # noqa: E402
from common import load_verdict  # noqa: E402

BUNDLED = Path(__file__).resolve().parent.parent / "datasets" / "tiny"
NORMALIZER = "english"


def bundled_transcripts() -> list[str]:
    texts = []
    for manifest in [BUNDLED / "shortform" / "manifest.jsonl"]:  # short-form: what a 1M-example set holds
        texts += [json.loads(line)["text"] for line in manifest.read_text(encoding="utf-8").splitlines() if line]
    return texts


def edited(words: list[str], vocabulary: list[str], rate: float, rng: random.Random) -> str:
    """``words`` with each word substituted, deleted or followed by an insertion with prob. ``rate``."""
    out = []
    for word in words:
        roll = rng.random()
        if roll < rate / 3:
            out.append(rng.choice(vocabulary))
        elif roll < 2 * rate / 3:
            continue
        else:
            out.append(word)
            if roll < rate:
                out.append(rng.choice(vocabulary))
    return " ".join(out)


def variants(texts: list[str], count: int, seed: int) -> list[list[dict]]:
    """Per transcript, ``count // len(texts)`` scored predictions as stored lines (1 % failed)."""
    rng = random.Random(seed)
    vocabulary = sorted({w for t in texts for w in t.split()})
    table = []
    for text in texts:
        rows = []
        for _ in range(max(1, count // len(texts))):
            failed = rng.random() < 0.01
            hyp = "" if failed else edited(text.split(), vocabulary, rng.uniform(0.0, 0.3), rng)
            pred = Prediction(
                id="",
                transcript=text,
                hypothesis=hyp,
                status="error" if failed else "ok",
                error="example x: RuntimeError: injected" if failed else None,
                audio_s=round(rng.uniform(1, 30), 3),
                infer_s=0.0 if failed else rng.uniform(0.05, 2),
                language_label="en",
            )
            rows.append(score_prediction(pred, NORMALIZER).to_json())
        table.append(rows)
    return table


def write_run(path: Path, n: int, table: list[list[dict]], seed: int) -> None:
    """A run store of ``n`` predictions ``utt0000000``.. drawn from ``table`` (same transcript per id in every run)."""
    store = RunStore(path)
    store.write_info(
        {
            "adapter": "synthetic",
            "model": "none",
            "normalizer": NORMALIZER,
            "label": path.name,
            "status": "finished",
            "dataset": {"name": "synthetic", "form": "short", "content_hash": f"synthetic-{n}"},
        }
    )
    rng = random.Random(seed)
    with open(path / PREDICTIONS, "w", encoding="utf-8") as fh:
        for i in range(n):
            rows = table[i % len(table)]
            fh.write(json.dumps(dict(rows[rng.randrange(len(rows))], id=f"utt{i:07d}"), ensure_ascii=False) + "\n")
    # a finished run's summary, as the runner writes it when the run ends (its registered metrics included): paid
    # once per run, not by compare/gate/report, and not timed here
    store.write_summary(summarize(store.read_predictions(), NORMALIZER, "short"))


SHARED_DATA = Path(os.environ.get("WHISPERBENCH_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
SHARED = SHARED_DATA / "shortform" / "manifest.jsonl"


def shared_or_bundled_transcripts() -> list[str]:
    if not SHARED.exists():
        return bundled_transcripts()
    return [json.loads(line)["text"] for line in SHARED.read_text(encoding="utf-8").splitlines() if line]


def naive_counts(pairs: list[tuple[str, str]], characters: bool) -> list[tuple]:
    """The naive loop: openai-whisper's (else whisper-normalizer's) English normalizer + jiwer, per pair."""
    import jiwer

    try:
        from whisper.normalizers import EnglishTextNormalizer
    except ImportError:  # the package the scorer used before, with openai-whisper's rules
        from whisper_normalizer.english import EnglishTextNormalizer
    norm = EnglishTextNormalizer()
    out = []
    for ref, hyp in pairs:
        r, h = " ".join(norm(ref).split()), " ".join(norm(hyp).split())
        w = jiwer.process_words(r, h)
        row = (w.hits, w.substitutions, w.deletions, w.insertions)
        if characters:
            c = jiwer.process_characters(r, h)
            row += (c.hits, c.substitutions, c.deletions, c.insertions)
        out.append(row)
    return out


def fast_counts(pairs: list[tuple[str, str]], characters: bool, cold: bool) -> list[tuple]:
    from whisperbench.scoring.normalize import _cached

    out = []
    for i, (ref, hyp) in enumerate(pairs):
        if cold:
            _cached(NORMALIZER).cache_clear()
        p = score_prediction(Prediction(id=str(i), transcript=ref, hypothesis=hyp), NORMALIZER, characters=characters)
        w, c = p.scored().words, p.scored().chars
        row = (w.hits, w.substitutions, w.deletions, w.insertions)
        out.append(row + (c.hits, c.substitutions, c.deletions, c.insertions) if c is not None else row)
    return out


def fresh_scoring(count: int) -> None:
    """Goal 1: the ratio naive loop / new scorer, one core, counts checked equal."""
    from whisperbench.scoring.normalize import _cached

    texts = shared_or_bundled_transcripts()
    rng = random.Random(5)
    vocabulary = sorted({w for t in texts for w in t.split()})
    pairs = [
        (text, edited(text.split(), vocabulary, rng.uniform(0.0, 0.3), rng))
        for text in (texts[i % len(texts)] for i in range(count))
    ]
    print(
        f"goal 1: fresh scoring of {len(pairs):,} pairs ({len(texts)} transcripts"
        f"{' from ' + str(SHARED.parent) if SHARED.exists() else ''}), one core"
    )
    naive_counts(pairs[:50], True)  # imports, compiled patterns: neither side pays its start-up in the timing
    fast_counts(pairs[:50], True, cold=True)
    for characters in (False, True):
        t0 = time.perf_counter()
        naive = naive_counts(pairs, characters)
        naive_s = time.perf_counter() - t0
        for cold in (True, False):
            _cached(NORMALIZER).cache_clear()
            if not cold:
                fast_counts(pairs[: len(texts)], characters, cold=False)  # each transcript once: references cached
            t0 = time.perf_counter()
            fast = fast_counts(pairs, characters, cold)
            fast_s = time.perf_counter() - t0
            assert fast == naive, "counts differ from the naive loop"
            what = "words + characters (WER + CER)" if characters else "words (WER)"
            how = "cold, nothing cached" if cold else "references cached"
            print(
                f"  {what:32s} {how:22s} naive {1e6 * naive_s / len(pairs):6.0f} µs/pair  new "
                f"{1e6 * fast_s / len(pairs):5.0f} µs/pair  ratio x{naive_s / fast_s:4.1f}  (counts identical)"
            )


def all_cores(count: int) -> None:
    """Goal 1, large sets: ``score_predictions`` in this process and on every core, same predictions."""

    from whisperbench.scoring import score_predictions
    from whisperbench.scoring.normalize import _cached

    texts = bundled_transcripts()
    rng = random.Random(9)
    vocabulary = sorted({w for t in texts for w in t.split()})
    preds = [
        Prediction(
            id=str(i),
            transcript=f"{texts[i % len(texts)]} {i}",  # distinct references: no cache hits
            hypothesis=edited(texts[i % len(texts)].split(), vocabulary, 0.2, rng),
        )
        for i in range(count)
    ]
    timings = {}
    for workers in (1, os.cpu_count() or 1):
        _cached(NORMALIZER).cache_clear()
        t0 = time.perf_counter()
        timings[workers] = (score_predictions(preds, NORMALIZER, workers=workers), time.perf_counter() - t0)
    (one, one_s), (many, many_s) = timings[1], timings[max(timings)]
    assert one == many, "several cores gave other predictions"
    print(
        f"  all cores: {count:,} predictions (distinct references) 1 core {one_s:.1f} s, {max(timings)} cores "
        f"{many_s:.1f} s (x{one_s / many_s:.2f}, workers started included; same predictions)"
    )


def step(name: str, folder: Path) -> dict:
    """One measured step in this (fresh) process: seconds and peak RSS."""
    from whisperbench.reports import evaluate_gate
    from whisperbench.reports.languages import language_frame
    from whisperbench.reports.leaderboard import leaderboard_frame, render_markdown

    t0 = time.perf_counter()
    ref, cand = open_run(str(folder / "reference")), open_run(str(folder / "candidate"))
    row: dict = {}
    if name.startswith("compare"):
        comparison = compare_runs(ref, cand)
        row.update(wer=comparison.candidate_wer, qoi=comparison.result.qoi)
    elif name == "gate":
        row["code"] = evaluate_gate(ref, cand, min_qoi=50.0, max_wer_increase=100.0).code
    elif name == "report":
        references = {ref.dataset_hash: ref}
        text = render_markdown(leaderboard_frame([ref, cand], references), references)
        text += str(language_frame([ref, cand], references).shape)
        row["chars"] = len(text)
    elif name == "objects":  # the in-memory path (summarize + qoi of the predictions scored afresh), to check figures
        row.update(
            wer=summarize(cand.predictions, NORMALIZER, "short").wer,
            qoi=qoi(ref.predictions, cand.predictions, NORMALIZER).qoi,
        )
    row.update(seconds=time.perf_counter() - t0, peak_mb=peak_rss_mb())
    return row


def measured(name: str, folder: Path) -> dict:
    """``step`` in a fresh process (its own peak memory)."""
    out = subprocess.run(
        [sys.executable, __file__, "--step", name, "--folder", str(folder)], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def at_size(n: int, table: list[list[dict]], tmp: Path, report_max: int, check: bool) -> dict:
    folder = tmp / f"n{n}"
    for role, seed in (("reference", 1), ("candidate", 2)):
        write_run(folder / role, n, table, seed)
    mb = (folder / "candidate" / PREDICTIONS).stat().st_size / 2**20
    steps = {
        "compare (builds tables)": measured("compare", folder),
        "compare": measured("compare-warm", folder),
        "gate": measured("gate", folder),
    }
    if n <= report_max:
        steps["report"] = measured("report", folder)
    if check:
        objects = measured("objects", folder)
        assert (objects["wer"], objects["qoi"]) == (steps["compare"]["wer"], steps["compare"]["qoi"]), (
            "the stored tables' figures differ from the in-memory path's"
        )
    print(
        f"n={n:>9,} ({mb:6.1f} MiB predictions.jsonl per run; WER {steps['compare']['wer']:.2f}% "
        f"QoI {steps['compare']['qoi']:.2f}%{'; equal to the in-memory path' if check else ''})"
    )
    for label, row in steps.items():
        print(
            f"    {label:24s} {row['seconds']:7.2f} s  {1e6 * row['seconds'] / n:6.1f} µs/prediction  "
            f"peak RSS {row['peak_mb']:7,.0f} MiB",
            flush=True,
        )
    if n > report_max:
        print(
            f"    report                   skipped above --report-max {report_max:,} (bootstrap.py's resampling "
            f"matrix, 2000 x n int64, is issue 36's)"
        )
    shutil.rmtree(folder)
    return {"n": n, **{label: row for label, row in steps.items()}}


#: starts a process spinning on one CPU and prints its pid without waiting for it: the spinner is not this
#: benchmark's child (its CPU counts as another process's in the last line's verdict, as a CI neighbour's would)
SPINNER = (
    "import subprocess, sys; "
    "print(subprocess.Popen([sys.executable, '-c', 'while True: pass'], start_new_session=True, "
    "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"
)


@contextlib.contextmanager
def spinning(count: int):
    """``count`` other processes, each spinning on one CPU, while the block runs; killed when it ends."""
    pids = [
        int(subprocess.run([sys.executable, "-c", SPINNER], capture_output=True, text=True).stdout)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--pairs", type=int, default=3000, help="pairs for the fresh-scoring ratio (goal 1)")
    parser.add_argument("--variants", type=int, default=4000, help="distinct scored predictions to draw from")
    parser.add_argument("--parallel", type=int, default=40_000, help="predictions scored on one core and on all")
    parser.add_argument("--report-max", type=int, default=100_000, help="largest size the report step runs at")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="time the CLI as a CI job runs it: score, score, gate, compare, report as fresh processes (cold.py)",
    )
    parser.add_argument(
        "--busy",
        type=int,
        default=0,
        metavar="N",
        help="keep N other processes spinning on the CPU while it measures (a shared CI runner: --busy 2 on two "
        "cores); the last line then says how busy the machine was",
    )
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.step:
        print(json.dumps(step(args.step, Path(args.folder))))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.cold:
        with tempfile.TemporaryDirectory() as tmp, spinning(args.busy):
            cold_path.run(sizes, shared_or_bundled_transcripts(), Path(tmp), naive_counts)
        return 0
    fresh_scoring(args.pairs)
    all_cores(args.parallel)
    table = variants(bundled_transcripts(), args.variants, seed=0)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        print("\ngoals 2, 3, 6: compare / gate / report on two stored runs (each step a fresh process)")
        for n in sizes:
            results.append(at_size(n, table, Path(tmp), args.report_max, check=n == sizes[0]))
    print("\ngrowth (time ratio / size ratio; 1.0 = linear):")
    for small, big in zip(results, results[1:]):
        growth = {
            label: big[label]["seconds"] / small[label]["seconds"] / (big["n"] / small["n"])
            for label in big
            if label != "n" and label in small
        }
        print(f"  {small['n']:,} -> {big['n']:,}: " + ", ".join(f"{k} {v:.2f}" for k, v in growth.items()))
    last = results[-1]
    print(
        f"\n{last['n']:,} predictions per run: compare {last['compare']['seconds']:.1f} s "
        f"/ {last['compare']['peak_mb']:,.0f} MiB (target < 10 s, < 2 GB), gate {last['gate']['seconds']:.1f} s"
        + (
            f", report {last['report']['seconds']:.1f} s / {last['report']['peak_mb']:,.0f} MiB (target < 60 s, < 2 GB)"
            if "report" in last
            else ""
        )
        + f"; {sys.platform}, Python {sys.version.split()[0]}"
    )
    return 0


if __name__ == "__main__":
    code = main()
    if "--step" not in sys.argv:
        print(load_verdict())
    raise SystemExit(code)
