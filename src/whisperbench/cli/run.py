"""``whisperbench run``: evaluate an implementation on a dataset (``api.execute``)."""

from __future__ import annotations

from typing import Any

from ..harness.choices import BACKENDS, DEFAULT_ATTEMPTS, STRATEGIES
from .common import add_run_args, columns, execute, finite, metric_options, whole


def command(args) -> int:
    """``whisperbench run``: evaluate an implementation on a dataset (api.execute); 0, or 2 on bad input."""
    from ..adapters import DecodingOptions
    from ..harness import RunRequest
    from ..harness.longform import LongFormConfig

    decoding = DecodingOptions.from_pairs(args.option or [], word_timestamps=args.word_timestamps)
    if args.prompt is not None:  # the shorthand of -o initial_prompt=TEXT
        decoding.initial_prompt = args.prompt or None
    decoding.prompt_from_keywords = decoding.prompt_from_keywords or args.prompt_from_keywords
    request = RunRequest(
        adapter=args.adapter,
        model=args.model,
        dataset=args.dataset,
        runs_dir=args.runs_dir,
        name=args.name,
        decoding=decoding,
        limit=args.limit,
        workers=args.workers,
        skip_invalid=args.skip_invalid,
        retry_failed=args.retry_failed,
        normalizer=args.normalizer,
        form=args.form,
        dataset_name=args.dataset_name,
        columns=columns(args),
        keywords=args.keywords,
        warmup=not args.no_warmup,
        warm_load=args.warm_load,
        overwrite=args.overwrite,
        label=args.label,
        scoring_workers=args.scoring_workers,
        refresh=args.refresh,
        long_form=LongFormConfig(args.long_form, chunk_s=args.chunk_s, stride_s=args.stride_s),
        isolate=args.isolate,
        timeout_s=args.timeout_s,
        backend=args.backend,
        address=args.address,
        attempts=args.attempts,
        metric_options=metric_options(args),
        runtime_env=args.runtime_env,
        ray_env=tuple(args.ray_env or ()),
    )
    return execute(request, args.json)


def register(sub: Any) -> None:
    """Add ``whisperbench run`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("run", help="evaluate an adapter on a dataset (resumes an existing run)")
    p.add_argument("--adapter", required=True, help="see `whisperbench adapters`")
    p.add_argument("--model", required=True, help="see `whisperbench models`")
    p.add_argument("--dataset", required=True, help="manifest, folder, bundled name or hf:NAME[:CONFIG]:SPLIT")
    _add_where_options(p)
    p.add_argument(
        "--option",
        "-o",
        action="append",
        metavar="KEY=VALUE",
        help="decoding option (language, beam_size, threads, …) or adapter option (compute_type, …); "
        "repeat -o for several",
    )
    p.add_argument(
        "--word-timestamps",
        action="store_true",
        help="store word times: each implementation's own aligner on the text it decodes as without "
        "word timing (the text stays the same); an implementation that has none exits 2 "
        "(docs/timestamps.md)",
    )
    p.add_argument(
        "--prompt",
        metavar="TEXT",
        help="a vocabulary prompt for every example, by each implementation's own mechanism (initial_prompt, "
        "prompt_ids, the API's prompt; -o initial_prompt=TEXT); an implementation without one exits 2 "
        "(docs/keywords.md)",
    )
    p.add_argument(
        "--prompt-from-keywords",
        action="store_true",
        help="prompt each example with its keywords (--keywords, the keywords column), joined by ', ', after "
        "--prompt; recorded in run.json's decoding (docs/keywords.md)",
    )
    p.add_argument("--retry-failed", action="store_true", help="recompute stored failed examples on resume")
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up call")
    p.add_argument(
        "--warm-load",
        action="store_true",
        help="after the examples, load the model once more in this process and time it (summary.json "
        "load_warm_s: caches warm; load_s is the cold start); in-process runs only",
    )
    p.add_argument("--refresh", action="store_true", help="bypass an adapter's result cache (openai-api)")
    p.add_argument(
        "--long-form",
        choices=STRATEGIES,
        default="native",
        help="long-form audio: the implementation's own algorithm (default; adapters without one "
        "use chunked), harness back-to-back 30 s windows, or overlapping windows batched and merged",
    )
    p.add_argument(
        "--isolate",
        action="store_true",
        help="run the adapter in a child process: a native crash fails that example, a new child goes on "
        "(whisper-cpp always does)",
    )
    p.add_argument(
        "--timeout-s",
        type=finite,
        help="per-call limit in seconds; a child that does not answer in time is killed and the example "
        "fails (implies --isolate)",
    )
    p.add_argument(
        "--attempts",
        type=whole,
        default=DEFAULT_ATTEMPTS,
        help="tries per example when the process transcribing it dies (a native crash, with --isolate, "
        "a process pool or Ray), the same on every backend; recorded in run.json "
        "(default %(default)s)",
    )
    p.add_argument("--chunk-s", type=finite, default=30.0, help="window length of sequential/chunked (default 30)")
    p.add_argument(
        "--stride-s",
        type=finite,
        default=5.0,
        help="chunked: overlap kept on each side of a window (default 5; windows advance chunk-2*stride)",
    )
    add_run_args(p)
    p.set_defaults(func=command)


def _add_where_options(p: Any) -> None:
    """``run``'s options of where the examples run: workers, backend and a Ray cluster's address and environment."""
    p.add_argument(
        "--workers",
        type=whole,
        default=1,
        help="model-holding workers: processes (in-process/process-pool) or Ray actors (default 1)",
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS.names(),
        default="in-process",
        help="where examples run: this process (a process pool when --workers > 1), a process pool, "
        "or Ray actors (pip install 'whisperbench[ray]')",
    )
    p.add_argument(
        "--address",
        help="--backend ray: the Ray cluster to join, e.g. 10.0.0.5:6379 "
        "(default: RAY_ADDRESS, else a local Ray started for the run)",
    )
    p.add_argument(
        "--runtime-env",
        metavar="JSON|FILE",
        help="--backend ray: the workers' Ray runtime_env, as JSON or a .json/.yaml file (env_vars, "
        "working_dir, pip …); run.json records env_vars by name only (docs/cluster.md)",
    )
    p.add_argument(
        "--ray-env",
        action="append",
        metavar="NAME",
        help="--backend ray: forward this variable's value from here to every worker, e.g. "
        "WHISPERBENCH_CACHE or OPENAI_API_KEY; repeat for several; run.json records the name only",
    )
