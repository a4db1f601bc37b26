"""The punctuation error rate's alignment (NeMo's, ``scoring/formatting.py``): microseconds a pair of the formatting
parity over seeded pairs of 25-word sentences whose marks are dropped or moved (every pair aligned), and seconds for
one long pair (3,000 tokens, 100 changed).

    python benchmarks/punctuation.py [--pairs 5000]
"""

from __future__ import annotations

import argparse
import random
import time

from whisperbench.scoring.formatting import parity_counts, punctuation_counts, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5000)
    args = parser.parse_args()
    rng = random.Random(0)
    words = "the cat sat on a mat and then went home with his friend".split()
    pairs = []
    for i in range(args.pairs):
        ref = " ".join(w + ("," if rng.random() < 0.1 else "") for w in rng.choices(words, k=25)) + "."
        cand = ref.replace(",", "", 1) if rng.random() < 0.5 else ref.replace(" a ", " a, ", 1)
        pairs.append((str(i), ref, cand, True))
    start = time.perf_counter()
    parity_counts(pairs)
    print(f"parity: {(time.perf_counter() - start) / len(pairs) * 1e6:.0f} us a pair over {len(pairs)} pairs")
    vocabulary = "the cat sat on a mat , . ? and then went home".split()
    long_ref = rng.choices(vocabulary, k=3000)
    long_hyp = list(long_ref)
    for _ in range(100):
        long_hyp[rng.randrange(3000)] = rng.choice(vocabulary)
    ref_tokens, hyp_tokens = tokens(" ".join(long_ref)), tokens(" ".join(long_hyp))
    start = time.perf_counter()
    punctuation_counts(ref_tokens, hyp_tokens)
    print(f"one pair of 3,000 tokens, 100 changed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
