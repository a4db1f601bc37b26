"""The cold path a CI job runs, timed as it runs: ``score`` (reference), ``score`` (candidate), ``gate``,
``compare``, ``compare --json``, ``report`` — each a fresh ``whisperbench`` process on runs written moments
before, nothing cached but what the commands themselves keep (the audio-facts cache, which a CI runner starts
without: it is emptied first). Each step's wall time and peak RSS (VmHWM of that process, read at its exit),
``score`` again on as many distinct audio files as rows (the cache empty, then full: :func:`distinct_files`),
and ``score``'s end to end time per pair against the naive loop (openai-whisper's normalizer +
``jiwer.process_words`` per pair) on the same pairs, counts checked equal to the last digit (``score`` of the
candidate timed five times up to 100k pairs, each a fresh process and run, the median compared).
Called by ``benchmarks/scoring.py --cold``.

Pairs: the shared (else bundled) short-form transcripts, each made distinct by three of its own words inserted
before its last word, in its own style (a formatted transcript stays formatted, an upper-case one upper-case; a
QA set of 100k examples holds few repeated transcripts, so the scorer's text cache gets no free hits), and
hypotheses with 0–3 random word edits. Every row of the manifest points at one bundled audio file.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from whisperbench.scoring.engine import PARALLEL_MIN

TINY_AUDIO = Path(__file__).resolve().parent.parent / "datasets" / "tiny" / "shortform" / "audio" / "jfk.flac"
STEPS = ("score reference", "score candidate", "gate", "compare", "compare --json", "report")


def pairs_for(texts: list[str], n: int, seed: int) -> tuple[list[str], list[str], list[str]]:
    """``n`` distinct references and two hypothesis lists (reference-like and candidate-like), 0–3 word edits."""
    rng = random.Random(seed)
    vocabulary = sorted({w for t in texts for w in t.split()})
    refs = [_distinct(texts[i % len(texts)], rng) for i in range(n)]
    return refs, [_edits(r, vocabulary, rng) for r in refs], [_edits(r, vocabulary, rng) for r in refs]


def _distinct(text: str, rng: random.Random) -> str:
    """``text`` with three of its own words appended (its style kept: casing and punctuation stay as they were)."""
    words = text.split()
    return " ".join([*words[:-1], *(rng.choice(words).strip(".,?!;:") for _ in range(3)), words[-1]])


def _edits(text: str, vocabulary: list[str], rng: random.Random) -> str:
    words = text.split()
    for _ in range(rng.randint(0, 3)):
        kind, at = rng.randrange(3), rng.randrange(len(words))
        if kind == 0:
            words[at] = rng.choice(vocabulary)
        elif kind == 1 and len(words) > 1:
            del words[at]
        else:
            words.insert(at, rng.choice(vocabulary))
    return " ".join(words)


def write_inputs(folder: Path, refs: list[str], ref_hyps: list[str], cand_hyps: list[str]) -> None:
    folder.mkdir(parents=True)
    with open(folder / "manifest.jsonl", "w", encoding="utf-8") as fh:
        for i, text in enumerate(refs):
            fh.write(json.dumps({"id": f"utt{i:07d}", "audio": str(TINY_AUDIO), "text": text}) + "\n")
    for name, hyps in (("reference", ref_hyps), ("candidate", cand_hyps)):
        with open(folder / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            for i, hyp in enumerate(hyps):
                fh.write(json.dumps({"id": f"utt{i:07d}", "hypothesis": hyp}) + "\n")


#: runs the CLI as the ``whisperbench`` command does (``cli.entry``) and, once the command has returned, writes the
#: process's own peak RSS (VmHWM, kB) to the file named by argv[1]: not ``wait4``'s ru_maxrss, which counts the
#: parent's memory at the fork
LAUNCHER = """
import sys
from whisperbench import cli
peak_file = sys.argv.pop(1)
command = cli.main
def main_then_peak(argv=None):
    code = command(argv)
    with open("/proc/self/status") as status, open(peak_file, "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
    return code
cli.main = main_then_peak
cli.entry()  # sys.argv: the arguments
"""


def timed(args: list[str], env: dict, folder: Path) -> dict:
    """``whisperbench ARGS`` in a fresh process: wall seconds, its own peak RSS, exit code and stdout."""
    out, err, peak = folder / "stdout", folder / "stderr", folder / "peak"
    with open(out, "wb") as o, open(err, "wb") as e:
        t0 = time.perf_counter()
        command = [sys.executable, "-c", LAUNCHER, str(peak), *args]
        code = subprocess.run(command, stdout=o, stderr=e, env=env).returncode
        seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "peak_mb": int(peak.read_text()) / 1024,
        "code": code,
        "stdout": out.read_text(encoding="utf-8"),
        "stderr": err.read_text(encoding="utf-8")[-2000:],
    }


def commands(folder: Path) -> dict[str, list[str]]:
    runs = ["--runs-dir", str(folder / "runs")]
    score = ["score", "--dataset", str(folder / "manifest.jsonl"), *runs, "--json", "--hypotheses"]
    pair = ["--reference", "reference", "--candidate", "candidate", *runs]
    return {
        "score reference": [*score, str(folder / "reference.jsonl"), "--name", "reference"],
        "score candidate": [*score, str(folder / "candidate.jsonl"), "--name", "candidate"],
        "gate": ["gate", *pair, "--min-qoi", "1", "--max-wer-increase", "100"],
        "compare": ["compare", *pair],
        "compare --json": ["compare", *pair, "--json"],  # also the formatting parity's PER and casing (every pair)
        "report": ["report", *runs, "--reference", "reference", "--format", "md", "--out", str(folder / "r.md")],
    }


def at_size(n: int, texts: list[str], tmp: Path, naive) -> dict:
    """Every step at ``n`` pairs; the naive loop on the same candidate pairs; counts checked equal."""
    folder = tmp / f"cold-{n}"
    refs, ref_hyps, cand_hyps = pairs_for(texts, n, seed=n)
    write_inputs(folder, refs, ref_hyps, cand_hyps)
    env = dict(os.environ, XDG_CACHE_HOME=str(folder / "cache"))  # the audio-facts cache starts empty
    steps = {}
    for name, args in commands(folder).items():
        steps[name] = row = timed(args, env, folder)
        if row["code"] not in (0, 1):  # gate may fail on purpose; anything else is a broken step
            raise SystemExit(f"{name} exited {row['code']}: {row['stderr']}")
    summary = json.loads(steps["score candidate"]["stdout"])
    again = SCORE_REPEATS if n <= REPEAT_MAX else 1
    scores, alone = [steps["score candidate"]["seconds"]], []
    for k in range(again if n >= PARALLEL_MIN else 1):  # below PARALLEL_MIN both are one process: once is enough
        alone.append(_score_again(folder, env, ONE_PROCESS))  # taking turns with the default: the same load
        if k < again - 1:
            scores.append(_score_again(folder, env))
    t0 = time.perf_counter()
    counts = naive(list(zip(refs, cand_hyps)), False)
    naive_s = time.perf_counter() - t0
    totals = [sum(c[k] for c in counts) for k in range(4)]
    stored = [summary[k] for k in ("hits", "substitutions", "deletions", "insertions")]
    assert totals == stored, f"score's counts {stored} differ from the naive loop's {totals}"
    shutil.rmtree(folder)
    return {
        "n": n,
        "naive_s": naive_s,
        "counts": totals,
        "wer": summary["wer"],
        "scores": scores,
        "alone": alone,
        **steps,
    }


#: ``score`` (candidate) is timed this many times at sizes up to :data:`REPEAT_MAX` (each a fresh process writing a
#: fresh run, the same conditions as the first: the reference scored just before), and its ratio to the naive loop
#: taken from the median: a second of wall time moves by ±5 % between two runs on a shared machine, and the first
#: command after a few others is often 10 % slower (2026-11-28: 0.90, 0.96, 0.98 s; then 1.00, 0.89, 0.90 s)
SCORE_REPEATS = 5
REPEAT_MAX = 100_000


#: ``score`` without its pool (``--scoring-workers 1``): the same code with no speed trick, against which the default
#: is timed at every size (issue 68: on a busy machine the default must be no slower)
ONE_PROCESS = ["--scoring-workers", "1"]


def _score_again(folder: Path, env: dict, options: tuple[str, ...] | list[str] = ()) -> float:
    """``score`` of the candidate once more (with ``options``), into a fresh run: its seconds (its counts checked
    the same)."""
    first = json.loads((folder / "runs" / "candidate" / "summary.json").read_text(encoding="utf-8"))
    shutil.rmtree(folder / "runs" / "candidate")
    row = timed([*commands(folder)["score candidate"], *options], env, folder)
    if row["code"] != 0 or json.loads(row["stdout"])["hits"] != first["hits"]:
        raise SystemExit(f"score candidate, again: exit {row['code']}: {row['stderr']}")
    return row["seconds"]


#: the largest size at which ``score`` is also timed on as many distinct audio files as rows (links to the bundled
#: clip: hashing 100k files' bytes would take most of a run), the audio-facts cache empty then full
DISTINCT_MAX = 10_000


def distinct_files(n: int, texts: list[str], tmp: Path) -> dict:
    """``score`` (candidate) of ``n`` rows, each its own audio file (a link to the bundled clip under its own path):
    first with the audio-facts cache empty, as a fresh CI runner has it (every file read, its header parsed, its
    bytes hashed), then again with it full (a second command on the same set)."""
    folder = tmp / f"files-{n}"
    refs, _, cand_hyps = pairs_for(texts, n, seed=n)
    write_inputs(folder, refs, cand_hyps, cand_hyps)
    links = folder / "audio"
    links.mkdir()
    rows = [json.loads(line) for line in (folder / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]
    with open(folder / "manifest.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            (links / f"{row['id']}.flac").symlink_to(TINY_AUDIO)
            fh.write(json.dumps(row | {"audio": str(links / f"{row['id']}.flac")}) + "\n")
    env = dict(os.environ, XDG_CACHE_HOME=str(folder / "cache"))
    args = commands(folder)["score candidate"]
    empty = timed(args, env, folder)
    shutil.rmtree(folder / "runs")
    full = timed(args, env, folder)
    shutil.rmtree(folder)
    for row in (empty, full):
        if row["code"] != 0:
            raise SystemExit(f"score on {n} distinct files exited {row['code']}: {row['stderr']}")
    return {"cache empty": empty, "cache full": full}


def report(result: dict) -> None:
    n, scores = result["n"], result["scores"]
    score_s = statistics.median(scores)
    h, s, d, i = result["counts"]
    times = f"median of {', '.join(f'{t:.2f}' for t in scores)} s; " if len(scores) > 1 else ""
    print(
        f"n={n:>9,}: score end to end x{result['naive_s'] / score_s:.1f} the naive loop "
        f"({times}{1e6 * score_s / n:.0f} vs {1e6 * result['naive_s'] / n:.0f} µs/pair; goal >= 4x); counts "
        f"identical (H {h:,} S {s:,} D {d:,} I {i:,}; WER {result['wer']:.2f} %)"
    )
    alone = statistics.median(result["alone"])
    print(
        f"    score, one process ({' '.join(ONE_PROCESS)}; median of "
        f"{', '.join(f'{t:.2f}' for t in result['alone'])} s): {alone:.2f} s; the "
        f"default took x{score_s / alone:.2f} its time (goal on a busy machine: <= 1.00)"
    )
    for name in STEPS:
        row = result[name]
        print(
            f"    {name:16s} {row['seconds']:8.2f} s  {1e6 * row['seconds'] / n:7.1f} µs/pair  "
            f"peak RSS {row['peak_mb']:7,.0f} MiB  exit {row['code']}",
            flush=True,
        )
    for name, row in result.get("distinct files", {}).items():
        print(
            f"    score, {n:,} files, {name}: {row['seconds']:6.2f} s  {1e6 * row['seconds'] / n:7.1f} µs/file  "
            f"exit {row['code']}",
            flush=True,
        )


def compiled_package() -> None:
    """whisperbench's bytecode written beside its sources, as pip's install of the package, or the first command
    run with Python's defaults, leaves it: where ``PYTHONDONTWRITEBYTECODE`` is set (this project's machines set it)
    every fresh process, each scoring worker included, would otherwise compile the package's sources again, which
    no installed copy does."""
    import compileall

    import whisperbench

    compileall.compile_dir(Path(whisperbench.__file__).parent, quiet=1)


def run(sizes: list[int], texts: list[str], tmp: Path, naive) -> list[dict]:
    """The cold path at each size, printed as it goes, then the growth between sizes (1.0 = linear)."""
    print("cold path: each command a fresh process on runs just written (score, score, gate, compare, report)")
    compiled_package()
    naive([(texts[0], texts[0])] * 20, False)  # its imports (openai-whisper pulls torch) are not a pair's cost
    results = []
    for n in sizes:
        results.append(at_size(n, texts, tmp, naive))
        if n <= DISTINCT_MAX:
            results[-1]["distinct files"] = distinct_files(n, texts, tmp)
        report(results[-1])
    for small, big in zip(results, results[1:]):
        growth = {k: big[k]["seconds"] / small[k]["seconds"] / (big["n"] / small["n"]) for k in STEPS}
        print(f"  growth {small['n']:,} -> {big['n']:,}: " + ", ".join(f"{k} {v:.2f}" for k, v in growth.items()))
    return results
