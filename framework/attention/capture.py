"""Recording attention weights during a forward pass, for plots and logging.

Blocks compute their weights only when somebody asks: a caller passes
``need_weights=True``, or a :class:`capture` context names the block. Outside a
capture the check is one test of an empty list, so training pays nothing.

For example::

    with capture(model, "head.*") as maps:
        model(images)
    maps["head.attention"][0].shape                 # one record per call
    with capture(model, probes=64) as rows:         # the exact rows of 64 probe queries per call
        model(images)                               #   (see framework.attention.probes)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any, Optional

import torch
from torch import Tensor, nn

from .choice import blocks_in
from .probes import ProbeRows, Probes, check_probes, probe_index, rows_of
from .record import Record

_ACTIVE: list[capture] = []


class capture(Mapping[str, list]):
    """Context manager that records the weights of chosen attention blocks.

    Args:
        model: the module to watch; its attention blocks are found by ``named_modules``.
        *patterns: which blocks, as glob patterns over qualified module names
            (``"encoder.layers.*.attn"``) or registry names (``"criss_cross"``).
            None given: every attention block in ``model`` (none at all is fine: a
            no-attention baseline records nothing).
        detach: store detached tensors (the default) or keep them in the graph.
        probes: None (the default) for the full weights; else the probe queries whose exact
            rows are recorded instead, a number P or a list of positions
            (:func:`~framework.attention.probes.probe_index`), at O(P x keys) memory.

    Inside the context the object is a mapping ``qualified name -> list of records``,
    one :class:`~framework.attention.record.Record` per call of the block (a block applied
    twice, like criss-cross with recurrence 2 or a multi-hop read, leaves two): its
    ``weights`` are what each block documents under "Captured weights", with the grids of
    its queries and keys where they relate positions. With ``probes``, a record over a query
    grid and a key grid holds the probe rows (B, [heads,] P, K) instead, ``probes`` their
    flat indices in the query grid, ``valid`` the keys each row may attend and, where the
    block has them, ``logits`` (the energies) and ``lse`` (its kernel's log-sum-exp of every
    query); records of weights laid out otherwise (gates, learned queries) are kept whole.
    """

    def __init__(self, model: nn.Module, *patterns: str, detach: bool = True, probes: Optional[Probes] = None) -> None:
        try:
            chosen = blocks_in(model, *patterns)
        except ValueError as error:
            raise ValueError(f"capture: {error}") from None
        self._names = {id(m): name or m.block_name for name, m in chosen.items()}
        self._records: dict[str, list] = {}
        self.detach = detach
        check_probes(probes)
        self.probes = probes
        self._index: dict[tuple, Tensor] = {}

    def probe_index(self, queries: tuple[int, ...], device: Optional[torch.device] = None) -> Tensor:
        """The (P,) flat indices of this capture's probes on a query grid (made once per grid)."""
        key = (tuple(queries), str(device))
        if key not in self._index:
            self._index[key] = probe_index(tuple(queries), self.probes, device)
        return self._index[key]

    def _add(self, name: str, record: Any) -> None:
        self._records.setdefault(name, []).append(_detached(record) if self.detach else record)

    def __enter__(self) -> capture:
        self._records.clear()
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        # by identity: == compares two captures' records (a Mapping's equality), tensors included
        _ACTIVE.pop(next(i for i, active in enumerate(_ACTIVE) if active is self))

    def __getitem__(self, name: str) -> list:
        return self._records[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)


def _gives_rows(block: nn.Module) -> bool:
    return bool(getattr(block, "gives_probe_rows", False))


def is_capturing(block: nn.Module) -> bool:
    """Whether an active capture wants this block's full weights: one without probes watches
    it, or one with probes and the block gives no probe rows of its own."""
    return bool(_ACTIVE) and any(
        id(block) in c._names and (c.probes is None or not _gives_rows(block)) for c in _ACTIVE
    )


def is_probing(block: nn.Module) -> bool:
    """Whether an active capture with probes wants the probe rows that this block computes itself."""
    return bool(_ACTIVE) and _gives_rows(block) and any(id(block) in c._names and c.probes is not None for c in _ACTIVE)


def watched(block: nn.Module) -> bool:
    """Whether any active capture watches this block."""
    return bool(_ACTIVE) and any(id(block) in c._names for c in _ACTIVE)


def record(block: nn.Module, record: Any) -> None:
    """Hand a block's record of its full weights to every active capture that watches it: as
    it is to those without probes; to those with probes its probe rows (see
    :func:`~framework.attention.probes.rows_of`; the whole record where its weights are laid
    out otherwise), unless the block gives them its own rows (:func:`record_rows`)."""
    for c in _ACTIVE:
        name = c._names.get(id(block))
        if name is None:
            continue
        if c.probes is None:
            c._add(name, record)
        elif not _gives_rows(block):
            found = rows_of(block.grid_weights(record), record.queries, lambda grid, c=c: c.probe_index(grid))
            if found is None:
                c._add(name, record)
            else:
                index, rows, valid = found
                c._add(name, replace(record, weights=rows, probes=index, valid=valid))


def record_rows(
    block: nn.Module,
    rows: Callable[[Tensor], ProbeRows],
    queries: tuple[int, ...],
    keys: Optional[tuple[int, ...]],
    device: torch.device,
    lse: Optional[Tensor] = None,
) -> None:
    """Hand the rows that a block computes for the probe queries (``rows(index)`` for the (P,)
    flat indices, on ``device``, of each capture's probes on the grid ``queries``) to every
    active capture with probes that watches it, as records with ``probes`` set."""
    for c in _ACTIVE:
        name = c._names.get(id(block))
        if name is None or c.probes is None:
            continue
        index = c.probe_index(queries, device)
        got = rows(index)
        c._add(
            name,
            Record(got.weights, tuple(queries), keys and tuple(keys), index, got.valid, got.logits, lse),
        )


def _detached(record: Any) -> Any:
    """A record with every tensor detached."""
    fields = ("weights", "valid", "logits", "lse")
    return replace(record, **{f: _detach(getattr(record, f)) for f in fields if hasattr(record, f)})


def _detach(value: object) -> object:
    if isinstance(value, Tensor):
        return value.detach()
    if isinstance(value, (tuple, list)):
        return type(value)(_detach(v) for v in value)
    return value
