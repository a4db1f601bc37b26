"""Streaming measured: WhisperLiveKit's policies (SimulStreaming's AlignAtt, LocalAgreement) and WhisperLive's server
(real-time only) against faster-whisper
batch on the same weights, per set, chunk size and clock — each a fresh `whisperbench run` — and one table per set:
WER, the paired WER difference from batch with its 95 % interval, latency p50/p90 (end of utterance where the set
has utterance texts, committed where it has word times), first output, revisions per word and wall time per audio
second. Runs are kept in --runs-dir (a second call reuses them).

With ``--words``, a set without word times is aligned once (``whisperbench align``: openai-whisper's aligner with
the base weights on the transcript) and each streaming run's emissions are scored again against it (a hypotheses
file with each prediction's ``stream``), so committed and interim latency are measured on short clips too.

    python benchmarks/streaming.py [--sets shortform,longform] [--model tiny.en] [--configs simul-1,la-1,...] [--words]
                                    [-o language=en ...]   # every run, batch too: runs in SET-MODEL-language=en
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_verdict, run_implementation  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
WLK = "whisperlivekit"
#: label -> (adapter, options); "batch" is every streaming run's reference
CONFIGS = {
    "batch": ("faster-whisper", []),
    "simul-0.5": (WLK, ["policy=simulstreaming", "chunk_s=0.5"]),
    "simul-1": (WLK, ["policy=simulstreaming", "chunk_s=1"]),
    "simul-2": (WLK, ["policy=simulstreaming", "chunk_s=2"]),
    "la-0.5": (WLK, ["policy=localagreement", "chunk_s=0.5"]),
    "la-1": (WLK, ["policy=localagreement", "chunk_s=1"]),
    "la-2": (WLK, ["policy=localagreement", "chunk_s=2"]),
    "simul-1-rt": (WLK, ["policy=simulstreaming", "chunk_s=1", "clock=real-time"]),
    "la-1-rt": (WLK, ["policy=localagreement", "chunk_s=1", "clock=real-time"]),
    "wl-1-rt": ("whisper-live", ["chunk_s=1"]),
}
DEFAULT = "batch,simul-1,la-1,simul-0.5,simul-2,la-2,simul-1-rt"


def rescore_on_words(runs_dir: str, label: str, dataset: Path) -> str:
    """Score ``label``'s stored emissions again against a word-timed copy of its set (aligned once); the run's name."""
    from whisperbench import api

    timed = Path(runs_dir) / "words.jsonl"
    if not timed.exists():
        cmd = [sys.executable, "-m", "whisperbench", "align", "--dataset", str(dataset), "--out", str(timed), "-q"]
        subprocess.run(cmd, check=True)
    name = f"{label}-words"
    if not (Path(runs_dir) / name / "summary.json").exists():
        run = api.load_run(label, runs_dir)
        lines = [
            {"id": p.id, "hypothesis": p.hypothesis, "stream": p.stream, "streaming": p.extra.get("streaming")}
            for p in run.predictions
            if p.status == "ok"
        ]
        hypotheses = Path(runs_dir) / f"{label}-streams.jsonl"
        hypotheses.write_text("".join(json.dumps(line) + "\n" for line in lines))
        api.score(hypotheses, timed, runs_dir=runs_dir, name=name)
    return name


def _seconds(figure, q):
    return "–" if not figure or figure.get(q) is None else f"{figure[q]:.2f}"


def table(runs_dir: str, labels: list[str], words: dict[str, str]) -> list[str]:
    """The markdown rows of one set's streaming runs against its batch run (latency from ``words[label]``, the run
    scored again on word times, where given)."""
    from whisperbench import api
    from whisperbench.reports.streaming import latency_of, paired_wer_delta, run_streaming

    batch = api.load_run("batch", runs_dir)
    rows = [
        "| run | policy | chunk | clock | WER % | Δ WER vs batch [95% CI] | latency | p50 s | p90 s "
        "| first output p50 s | revisions / word | wall s / audio s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        f"| batch | faster-whisper | – | – | {batch.summary.wer:.2f} | – | – | – | – | – | – | "
        f"{batch.summary.infer_s / batch.summary.audio_s:.2f} |",
    ]
    for label in labels:
        if label == "batch" or not (Path(runs_dir) / label / "summary.json").exists():
            continue
        run = api.load_run(label, runs_dir)
        value = run_streaming(run) or {}
        delta = paired_wer_delta(batch, run)
        latency = latency_of(run_streaming(api.load_run(words[label], runs_dir)) if label in words else value)
        name, figure = latency if latency else ("–", None)
        rows.append(
            f"| {label} | {value.get('policy')} | {value.get('chunk_s'):g} s | {value.get('clock')} | "
            f"{run.summary.wer:.2f} | "
            + (f"{delta.delta:+.2f} [{delta.interval.low:+.2f}, {delta.interval.high:+.2f}]" if delta else "–")
            + f" | {name} | {_seconds(figure, 'p50')} | {_seconds(figure, 'p90')} | "
            f"{_seconds(value.get('first_output_s'), 'p50')} | {value.get('revisions_per_word')} | "
            f"{value.get('wall_per_audio')} |"
        )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="shortform,longform", help="sets of ../shared/data (or manifests)")
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--configs", default=DEFAULT, help=f"comma-separated, of: {', '.join(CONFIGS)}")
    parser.add_argument("--runs-dir", default="runs/streaming-benchmark")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--words", action="store_true", help="committed latency on word times aligned once")
    parser.add_argument(
        "-o", "--option", action="append", default=[], help="KEY=VALUE for every run, batch too (repeat for several)"
    )
    args = parser.parse_args(argv)
    labels = args.configs.split(",")
    if "batch" not in labels:
        labels.insert(0, "batch")
    for name in args.sets.split(","):
        dataset = SHARED / name / "manifest.jsonl" if (SHARED / name).is_dir() else Path(name)
        if not dataset.exists():
            print(f"{name}: skipped (no {dataset})")
            continue
        tag = "".join(f"-{option}" for option in args.option)  # e.g. -language=en
        runs_dir = str(Path(args.runs_dir) / f"{Path(name).stem}-{args.model}{tag}")
        for label in labels:
            if (Path(runs_dir) / label / "summary.json").exists():
                continue
            adapter, options = CONFIGS[label]
            run_implementation(
                label,
                adapter,
                options + args.option,
                model=args.model,
                dataset=str(dataset),
                threads=args.threads,
                runs_dir=runs_dir,
                limit=args.limit,
            )
        streams = [label for label in labels if label != "batch" and (Path(runs_dir) / label / "summary.json").exists()]
        words = {label: rescore_on_words(runs_dir, label, dataset) for label in streams} if args.words else {}
        print(f"\n### {name}, {args.model}\n")
        print("\n".join(table(runs_dir, labels, words)))
    print("\n" + load_verdict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
