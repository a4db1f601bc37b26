"""Scoring a run's text pairs ahead, on the core the run leaves idle (:mod:`whisperbench.scoring.prescore`): the
pairs of an adapter that knows its outputs before it runs (a recorded hypotheses file: ``whisperbench score``).

Two starts, one helper at a time. :func:`scores_ahead_of` starts one from the request alone, before the dataset
loads: it reads the manifest and the hypotheses file itself and scores as it reads (loading a 100k-row manifest
takes about a second of the command's one busy core). :func:`scores_ahead_for` starts one when the run starts,
from the examples left to do, where none is running (a Hugging Face dataset, a caller's own loaded dataset).
Either way the end's scoring finds a pair's score by its texts, language and normalizer: a helper that guessed
the normalizer wrong (chosen from its first rows' languages) or read a row otherwise is never used, only idle.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from typing import Any, ContextManager, Iterator, Optional, Sequence

from ..adapters import get_adapter
from ..adapters.base import FROM_DATASET, Adapter
from ..datasets import unchecked_examples
from ..scoring import choose_normalizer, prescore
from ..scoring.summary import in_parallel, score_texts
from ..types import Example
from .request import RunRequest
from .spec import AdapterSpec

#: a manifest smaller than this is not worth a helper read from the files (about 2,000 rows; the pool's threshold
#: decides for the helper started with the run)
AHEAD_MIN_BYTES = 256 * 1024


def knows_outputs(adapter_class: type[Adapter]) -> bool:
    """Whether the adapter can say its outputs before it runs (it overrides :meth:`Adapter.outputs_known`)."""
    return adapter_class.outputs_known is not Adapter.outputs_known


def scores_ahead_of(request: RunRequest) -> ContextManager[Any]:
    """A helper scoring the pairs of ``request`` from its files, started now, before the dataset loads; nothing
    where the adapter does not know its outputs, the dataset is not a manifest file of some size (a folder, a
    bundled name, ``hf:``), the system cannot fork, or one is running already (started by the command line before
    it imported the harness)."""
    if prescore.running() or not (prescore.available() and knows_outputs(get_adapter(request.adapter))):
        return nullcontext()
    if request.dataset.startswith("hf:") or _size(request.dataset) < AHEAD_MIN_BYTES:
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
    pairs = [(ex.text, text, ex.language) for ex, text in zip(todo, known) if text is not None]
    return prescore.ScoresAhead(pairs, normalizer, True, score_texts)


def _pairs_read(request: RunRequest) -> Iterator[tuple[str, list[prescore.Pair]]]:
    """In the helper: (normalizer, pairs) a chunk of manifest rows at a time, as the run will hold them."""
    adapter = AdapterSpec.of(request).build(isolated=False)
    forced = request.decoding.language if request.decoding.language != FROM_DATASET else None
    normalizer: Optional[str] = request.normalizer
    for examples in unchecked_examples(request.dataset, request.limit, request.columns, prescore.CHUNK):
        normalizer = normalizer or choose_normalizer([ex.language for ex in examples] + [forced], request.model)
        known = adapter.outputs_known(examples) or []
        yield normalizer, [(ex.text, text, ex.language) for ex, text in zip(examples, known) if text is not None]


def _size(spec: str) -> int:
    """The size of the manifest file ``spec`` names (0: not a file, e.g. a folder or a bundled name)."""
    try:
        return os.path.getsize(spec) if os.path.isfile(spec) else 0
    except OSError:
        return 0
