"""Scoring at scale: WER and QoI from stored runs of 10k, 100k and 1M predictions.

Writes a reference run and a candidate run of N synthetic predictions as real run stores (run.json +
predictions.jsonl, the format the runner writes), then times what ``whisperbench compare`` does:
read both stores, summarize both (WER) and compute QoI. Every stored line is a real
``score_prediction`` result: hypotheses are random word edits of the bundled transcripts, scored
once per distinct variant and repeated under fresh ids. Prints seconds per step, microseconds per
prediction and the growth from one size to the next, and, for comparison, the re-scoring path
(normalize + align every prediction again) on the smallest size.

    python benchmarks/scoring.py [--sizes 10000,100000,1000000] [--variants 4000]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from whisperbench.machine import peak_rss_mb
from whisperbench.store import PREDICTIONS, RunStore, open_run
from whisperbench.reports import compare_runs
from whisperbench.scoring import qoi, score_prediction, summarize
from whisperbench.types import Prediction

sys.path.insert(0, str(Path(__file__).resolve().parent))
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
            pred = Prediction(id="", reference=text, hypothesis=hyp, status="error" if failed else "ok",
                              error="example x: RuntimeError: injected" if failed else None,
                              audio_s=round(rng.uniform(1, 30), 3), infer_s=0.0 if failed else rng.uniform(0.05, 2))
            rows.append(score_prediction(pred, NORMALIZER).to_json())
        table.append(rows)
    return table


def write_run(path: Path, n: int, table: list[list[dict]], seed: int) -> None:
    """A run store of ``n`` predictions ``utt0000000``.. drawn from ``table`` (same transcript per id in every run)."""
    store = RunStore(path)
    store.write_info({"adapter": "synthetic", "model": "none", "normalizer": NORMALIZER, "label": path.name,
                      "dataset": {"name": "synthetic", "form": "short", "content_hash": f"synthetic-{n}"}})
    rng = random.Random(seed)
    with open(path / PREDICTIONS, "w", encoding="utf-8") as fh:
        for i in range(n):
            rows = table[i % len(table)]
            fh.write(json.dumps(dict(rows[rng.randrange(len(rows))], id=f"utt{i:07d}"), ensure_ascii=False) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--variants", type=int, default=4000, help="distinct scored predictions to draw from")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    start = time.perf_counter()
    table = variants(bundled_transcripts(), args.variants, seed=0)
    print(f"{sum(map(len, table))} distinct scored predictions in {time.perf_counter() - start:.1f} s")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            for role, seed in (("reference", 1), ("candidate", 2)):
                write_run(Path(tmp) / f"{role}-{n}", n, table, seed)
            size_mb = (Path(tmp) / f"candidate-{n}" / PREDICTIONS).stat().st_size / 2**20
            t0 = time.perf_counter()
            ref, cand = open_run(str(Path(tmp) / f"reference-{n}")), open_run(str(Path(tmp) / f"candidate-{n}"))
            t1 = time.perf_counter()
            comparison = compare_runs(ref, cand)  # summarize both (WER) + QoI, as `whisperbench compare`
            t2 = time.perf_counter()
            row = {"n": n, "mb": size_mb, "read_s": t1 - t0, "score_s": t2 - t1, "total_s": t2 - t0,
                   "wer": comparison.candidate_wer, "qoi": comparison.result.qoi, "peak_mb": peak_rss_mb()}
            if n == sizes[0]:  # the path that re-normalizes and re-aligns everything, for comparison
                t3 = time.perf_counter()
                slow_wer = summarize(cand.predictions, NORMALIZER, "short")["wer"]
                slow_qoi = qoi(ref.predictions, cand.predictions, NORMALIZER).qoi
                row["rescoring_s"] = time.perf_counter() - t3
                assert (slow_wer, slow_qoi) == (row["wer"], row["qoi"]), "stored-count path differs from re-scoring"
            results.append(row)
            print(f"n={n:>9,}: predictions.jsonl {size_mb:7.1f} MiB/run  read 2 runs {row['read_s']:6.2f} s  "
                  f"WER+QoI {row['score_s']:6.2f} s  total {row['total_s']:6.2f} s  "
                  f"({1e6 * row['total_s'] / n:5.1f} µs/prediction)  WER {row['wer']:.2f}%  QoI {row['qoi']:.2f}%  "
                  f"peak RSS {row['peak_mb']:,.0f} MiB", flush=True)
            del ref, cand, comparison
            for role in ("reference", "candidate"):
                (Path(tmp) / f"{role}-{n}" / PREDICTIONS).unlink()
    print("\ngrowth (total time ratio / size ratio; 1.0 = linear):")
    for small, big in zip(results, results[1:]):
        print(f"  {small['n']:,} -> {big['n']:,}: x{big['total_s'] / small['total_s']:.1f} time for "
              f"x{big['n'] / small['n']:.0f} size ({big['total_s'] / small['total_s'] / (big['n'] / small['n']):.2f})")
    first = results[0]
    if "rescoring_s" in first:
        per = first["rescoring_s"] / first["n"]
        print(f"\nre-scoring path (normalize + align again), n={first['n']:,}: {first['rescoring_s']:.1f} s "
              f"-> about {per * 1e6:,.0f} s for 1M; the stored-count path is "
              f"{first['rescoring_s'] / first['score_s']:.0f}x faster on the same runs, same WER and QoI")
    last = results[-1]
    print(f"\n{last['n']:,} predictions (reference + candidate runs): {last['total_s']:.1f} s "
          f"(target < 60 s on 2 cores) on {sys.platform}, Python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    code = main()
    print(load_verdict())
    raise SystemExit(code)
