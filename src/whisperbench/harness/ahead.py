"""Scoring a run's text pairs ahead, on the core the run leaves idle (:mod:`whisperbench.scoring.prescore`): the
pairs of an adapter that knows its outputs before it runs (a recorded hypotheses file: ``whisperbench score``).

Three starts, one helper at a time. :func:`scores_ahead_of_file` starts one from a hypotheses file and a manifest
(``whisperbench score``) before the harness, the adapters and numpy are imported (about 0.1 s of the command's
one busy core); :func:`scores_ahead_of` starts one from a run request, before the dataset loads. Both read the
manifest and the hypotheses themselves and score as they read (loading a 100k-row manifest takes about a second of the
command's one busy core). :func:`scores_ahead_for` starts one when the run starts, from the examples left to do,
where none is running (a Hugging Face dataset, a caller's own loaded dataset).
Either way the end's scoring finds a pair's score by its texts, language and normalizer: a helper that guessed
the normalizer wrong (chosen from its first rows' languages) or read a row otherwise is never used, only idle.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator, Optional, Sequence

from ..datasets import unchecked_examples
from ..datasets.hypotheses import hypotheses_for
from ..scoring import choose_normalizer, prescore
from ..scoring.summary import in_parallel, score_texts
from ..types import ColumnMap, Example, storable_text, stored_output

if TYPE_CHECKING:  # imported where used: this module starts the helper before the harness and adapters load
    from ..adapters.base import Adapter
    from .request import RunRequest

#: a manifest smaller than this is not worth a helper read from the files (about 2,000 rows; the pool's threshold
#: decides for the helper started with the run)
AHEAD_MIN_BYTES = 256 * 1024


def knows_outputs(adapter_class: type[Adapter]) -> bool:
    """Whether the adapter can say its outputs before it runs (it overrides :meth:`Adapter.outputs_known`)."""
    from ..adapters.base import Adapter

    return adapter_class.outputs_known is not Adapter.outputs_known


def scores_ahead_of_file(
    hypotheses: str, dataset: str, limit: Optional[int] = None, columns: Any = None, normalizer: Optional[str] = None
) -> ContextManager[Any]:
    """A helper scoring the pairs of a hypotheses file on ``dataset`` (what :func:`scores_ahead_of` starts for the
    request of :func:`~whisperbench.harness.request.score_request` with these settings), started now, before that
    request is made: nothing where the dataset is not a manifest file of some size or the system cannot fork."""
    if prescore.running() or not (prescore.available() and _worth_reading(dataset)):
        return nullcontext()
    model = str(Path(hypotheses).resolve())  # the request's model: choose_normalizer reads an English-only name
    known = partial(hypotheses_for, hypotheses)  # what the recorded adapter gives each example (the file read once)
    source = partial(_pairs, dataset, limit, ColumnMap.of(columns), normalizer, model, None, known)
    return prescore.ScoresAhead.reading(source, True, score_texts)


def scores_ahead_of(request: RunRequest) -> ContextManager[Any]:
    """A helper scoring the pairs of ``request`` from its files, started now, before the dataset loads; nothing
    where the adapter does not know its outputs, the dataset is not a manifest file of some size (a folder, a
    bundled name, ``hf:``), the system cannot fork, or one is running already (started by the command line before
    it imported the harness)."""
    from ..adapters import get_adapter

    if prescore.running() or not (prescore.available() and knows_outputs(get_adapter(request.adapter))):
        return nullcontext()
    if not _worth_reading(request.dataset):
        return nullcontext()
    return prescore.ScoresAhead.reading(lambda: _pairs_read(request), True, score_texts)


def scores_ahead_for(adapter: Adapter, todo: Sequence[Example], normalizer: str) -> ContextManager[Any]:
    """A helper scoring the pairs of the outputs ``adapter`` knows for ``todo`` while the run is written; only
    where the end's scoring would take a pool and no helper is running."""
    if prescore.running() or not (in_parallel(len(todo), None) and prescore.available()):
        return nullcontext()
    known = adapter.outputs_known(todo)
    if not known:
        return nullcontext()
    pairs = [_pair(ex, text) for ex, text in zip(todo, known) if text is not None]
    return prescore.ScoresAhead(pairs, normalizer, True, score_texts)


def _pairs_read(request: RunRequest) -> Iterator[tuple[str, list[prescore.Pair]]]:
    """In the helper: (normalizer, pairs) a chunk of manifest rows at a time, as the run will hold them."""
    from ..adapters.base import FROM_DATASET
    from .spec import AdapterSpec

    adapter = AdapterSpec.of(request).build(isolated=False)
    forced = request.decoding.language if request.decoding.language != FROM_DATASET else None
    return _pairs(
        request.dataset,
        request.limit,
        request.columns,
        request.normalizer,
        request.model,
        forced,
        adapter.outputs_known,
    )


def _pairs(
    dataset: str,
    limit: Optional[int],
    columns: ColumnMap,
    normalizer: Optional[str],
    model: str,
    forced: Optional[str],
    known: Callable[[Sequence[Example]], Optional[list[Optional[str]]]],
) -> Iterator[tuple[str, list[prescore.Pair]]]:
    """(normalizer, pairs) a chunk of ``dataset``'s rows at a time, each pair a row's transcript, the output
    ``known`` gives it and its language; the normalizer ``normalizer`` or, where none is set, the one chosen from the
    first chunk's languages (and ``forced``) for ``model``."""
    for examples in unchecked_examples(dataset, limit, columns, prescore.CHUNK):
        normalizer = normalizer or choose_normalizer([ex.language for ex in examples] + [forced], model)
        outputs = known(examples) or []
        yield normalizer, [_pair(ex, text) for ex, text in zip(examples, outputs) if text is not None]


def _pair(example: Example, output: str) -> prescore.Pair:
    """The pair scored ahead for ``example`` and the ``output`` known for it: its texts as the prediction will hold
    them (``Prediction.for_example``, ``harness.examples``: a padded output stripped), and its language."""
    return storable_text(example.text), stored_output(output), example.language


def _worth_reading(dataset: str) -> bool:
    """Whether ``dataset`` is a manifest file large enough for a helper to read (not ``hf:``, a folder or a name)."""
    return not dataset.startswith("hf:") and _size(dataset) >= AHEAD_MIN_BYTES


def _size(spec: str) -> int:
    """The size of the manifest file ``spec`` names (0: not a file, e.g. a folder or a bundled name)."""
    try:
        return os.path.getsize(spec) if os.path.isfile(spec) else 0
    except OSError:
        return 0
