"""``whisperbench datasets``: the bundled sets, or a dataset validated."""

from __future__ import annotations

from typing import Any

from .common import add_column_args, columns


def command(args) -> int:
    """``whisperbench datasets``: the bundled sets, or a dataset's validation (invalid rows named)."""
    from ..api import check_dataset, list_datasets

    if not args.spec:
        for name, path in list_datasets().items():
            print(f"{name:<20} {path}")
        return 0
    checked = check_dataset(args.spec, columns=columns(args))
    d = checked.dataset
    hours = sum(ex.duration_s or 0 for ex in d.examples) / 3600
    print(
        f"{d.name}: {len(d)} valid examples, {len(checked.invalid)} invalid, {hours * 60:.2f} min, "
        f"form {d.form}, hash {d.content_hash}"
    )
    for bad in checked.invalid:
        print(f"  invalid: {bad.reason}")
    return 1 if checked.invalid else 0


def register(sub: Any) -> None:
    """Add ``whisperbench datasets`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("datasets", help="list bundled datasets, or validate one (SPEC)")
    p.add_argument("spec", nargs="?", help="a dataset to validate (manifest, folder, bundled name or hf:...)")
    add_column_args(p)
    p.set_defaults(func=command)
