"""What every block of the library shares: shape checks, weights on demand, records that
describe themselves, and the ablation switch.

A block's forward pass ends in :meth:`AttentionBlock.finish`, the one place where weights
leave a block: a :class:`~framework.attention.capture` receives them as a :class:`Record`
that knows the layout of its queries and keys, and the caller gets them with
``need_weights=True``. Blocks compute weights only when :meth:`AttentionBlock.wants_weights`
says so (asked for, captured, or ablated), so training pays nothing for them.

A capture with probes (:mod:`~framework.attention.probes`) wants only the rows of a few
queries: a block that can compute them on its fused path says so (``gives_probe_rows``),
computes no weights when :meth:`AttentionBlock.probing`, and hands the rows to
:meth:`AttentionBlock.record_rows`; the others' full records are cut to the probe rows.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import torch
from torch import Tensor, nn

from .ablation import ablated
from .capture import is_capturing, is_probing, watched
from .capture import record as _record
from .capture import record_rows as _record_rows
from .record import Record, flat_position, middle_query, probe_row


class ShapeError(ValueError):
    """A tensor reached a block with the wrong shape; the message names block, tensor and shapes."""


class AttentionOutput(NamedTuple):
    """What a block returns when asked for its weights (``need_weights=True``)."""

    output: Tensor
    weights: Any
    log_prob: Optional[Tensor] = None


def expect_shape(block: str, name: str, x: Tensor, dims: str, **sizes: int) -> None:
    """Check ``x`` against a shape pattern such as ``"B C H W"``; ``sizes`` pins named dims.

    >>> expect_shape("cbam", "x", torch.zeros(2, 32, 8, 8), "B C H W", C=64)  # doctest: +SKIP
    ShapeError: cbam: x must have shape (B, 64, H, W), got (2, 32, 8, 8)
    """
    names = dims.split()
    if x.dim() == len(names) and all(x.shape[i] == sizes[d] for i, d in enumerate(names) if d in sizes):
        return
    expected = ", ".join(str(sizes.get(d, d)) for d in names)
    raise ShapeError(f"{block}: {name} must have shape ({expected}), got {tuple(x.shape)}")


def weights_over_keys(block: nn.Module, weights: Tensor, keys: int) -> Tensor:
    """The weights (..., K) that ``block`` gave back as weights (..., N) over the ``keys`` = N keys of
    the sequence it was given (:meth:`AttentionBlock.weights_over_keys`; a block of another library:
    its weights as they are)."""
    return block.weights_over_keys(weights, keys) if isinstance(block, AttentionBlock) else weights


class AttentionBlock(nn.Module):
    """Base class of the library's blocks.

    Subclasses compute attention weights only when :meth:`wants_weights` says so, pass them
    through :meth:`ablate` before using them, and end their forward pass with :meth:`finish`
    (capture and return). They check their inputs with :meth:`expect`, so a wrong shape
    names the block, the tensor and both shapes.

    ``ablation`` (None, or one of :data:`ABLATIONS`) is set on a model's blocks by
    :func:`framework.attention.ablation` to replace their weights at inference.
    """

    block_name: str = "attention"
    ablation: Optional[str] = None
    #: Whether the block computes the rows of a capture's probe queries itself, on its fast path,
    #: without its full weights (:meth:`probing`, :meth:`record_rows`).
    gives_probe_rows: bool = False
    #: The paths this block computes its attention on when no weights are wanted, its default first
    #: (names of :data:`~framework.attention.backends.BACKENDS`; empty for a block with one path).
    backends: tuple[str, ...] = ()
    #: The path chosen with :func:`~framework.attention.backends.use` (None: the default).
    chosen_backend: Optional[str] = None
    #: Names of the leading positions of the sequence the block attends over, which are no tokens of
    #: the input (a ViT's ``("[CLS]",)``, set by its model): the pictures label them on their axes.
    leading_tokens: tuple[str, ...] = ()
    #: Whether the queries and the keys of this block's records are positions of its inputs (tokens,
    #: pixels). False for learned or pooled rows (ISAB's inducing points, Linformer's projected keys,
    #: area attention's areas): their records carry no grid for that axis (:class:`Record`), so no
    #: reader takes their weights for weights over the input's positions.
    query_positions: bool = True
    key_positions: bool = True

    @property
    def backend(self) -> Optional[str]:
        """The path this block's forward pass takes when no weights are wanted: the chosen one, else
        its default (``backends[0]``); None for a block with one path. The run's summary records it."""
        return self.chosen_backend or (self.backends[0] if self.backends else None)

    def backend_missing(self, name: str, device: torch.device, training: bool = False) -> Optional[str]:
        """Why the path ``name`` (one of ``backends``) cannot run on ``device`` (``training``: with its
        backward); None when it can."""
        return None

    def wants_weights(self, need_weights: bool = False) -> bool:
        """Whether the weights must be computed: asked for, watched by a capture (one with probes
        only where the block gives no probe rows of its own), ablated, or the ``eager`` backend chosen
        (explicit weights and softmax, the reference of the fused paths)."""
        return need_weights or self.ablation is not None or is_capturing(self) or self.chosen_backend == "eager"

    def probing(self) -> bool:
        """Whether a capture with probes wants this block's probe rows (from :meth:`record_rows`)."""
        return is_probing(self)

    def ablate(self, weights: Tensor, valid: Optional[Tensor] = None, dim: int = -1, normalised: bool = True) -> Tensor:
        """``weights`` unchanged, or replaced under the block's ablation (see :func:`ablated`)."""
        return weights if self.ablation is None else ablated(weights, self.ablation, valid, dim, normalised)

    def finish(
        self,
        output: Any,
        weights: Any,
        need_weights: bool = False,
        *,
        queries: Optional[tuple[int, ...]] = None,
        keys: Optional[tuple[int, ...]] = None,
        recorded: bool = False,
        log_prob: Optional[Tensor] = None,
    ) -> Any:
        """The end of a forward pass: hand ``weights`` to the captures watching this block (as a
        :class:`Record` with the query and key grids) and return ``output``, or
        ``AttentionOutput(output, weights, log_prob)`` when the caller asked for the weights.

        ``recorded``: the block handed its weights to the captures itself, with :meth:`record`,
        as it computed them: one record per pass of a block that attends several times
        (criss-cross's recurrence, a memory's hops, ``Attention``'s hops), each with its own
        query and key grids; ``weights`` are then only what the caller gets back (stacked over
        the passes, or without an axis the block drops, such as a single query's).
        """
        if weights is not None and not recorded:
            self.record(weights, queries=queries, keys=keys)
        return AttentionOutput(output, weights, log_prob) if need_weights else output

    def weights_over_keys(self, weights: Tensor, keys: int) -> Tensor:
        """The weights a caller got back, (..., K), as weights (..., N) over the ``keys`` = N keys of a
        sequence it passed: themselves, unless the block attends over rows that are no keys
        (:attr:`key_positions`), which it then folds onto them (area attention's areas)."""
        return weights

    def record(
        self, weights: Any, *, queries: Optional[tuple[int, ...]] = None, keys: Optional[tuple[int, ...]] = None
    ) -> None:
        """Hand ``weights`` to the captures watching this block (nothing when none does)."""
        if watched(self):
            grids = (queries if self.query_positions else None, keys if self.key_positions else None)
            _record(self, Record(weights, *grids))

    def record_rows(
        self,
        rows: Any,
        *,
        queries: tuple[int, ...],
        keys: tuple[int, ...],
        device: torch.device,
        lse: Optional[Tensor] = None,
    ) -> None:
        """Hand the captures with probes the rows of their probe queries: ``rows(index)`` gives a
        :class:`~framework.attention.probes.ProbeRows` for the (P,) flat indices ``index`` (on
        ``device``) of the probes in the grid ``queries``, over the keys of the grid ``keys``;
        ``lse`` is the kernel's log-sum-exp of every query, where it has one. Called by blocks
        that set ``gives_probe_rows``, when :meth:`probing`."""
        _record_rows(self, rows, tuple(queries), tuple(keys) if self.key_positions else None, device, lse)

    def expect(self, name: str, x: Tensor, dims: str, **sizes: int) -> None:
        expect_shape(self.block_name, name, x, dims, **sizes)

    def looks(self, record: Record, query: tuple[int, ...] = ()) -> Optional[Tensor]:
        """Where one query looks: the (B, *keys grid) weights of the query at position ``query``
        of the record's query grid, heads averaged; None when the record has no key grid.

        The default reads weights (B, [heads,] Q, K) with Q and K the sizes of the record's
        grids (multi-head attention, non-local, DANet position); a record without a query
        grid (global context, pooling with learned queries) has weights (B, [queries,] K),
        averaged over its queries. Blocks whose weights are laid out otherwise (criss-cross)
        override it.
        """
        weights, keys = record.weights, record.keys
        if keys is None or not isinstance(weights, Tensor) or weights.shape[-1] != math.prod(keys):
            return None
        if record.queries is None:
            row = weights
        elif record.probes is not None:
            row = weights[..., probe_row(record, query), :]
        else:
            if weights.dim() < 3 or weights.shape[-2] != math.prod(record.queries):
                return None
            row = weights[..., flat_position(record.queries, query), :]
        while row.dim() > 2:  # heads, or learned queries
            row = row.mean(1)
        return row.unflatten(-1, keys)

    def grid_weights(self, record: Record) -> Optional[Tensor]:
        """A full record's weights as (B, [heads,] Q, K) over its query and key grids, the layout
        that probe rows are cut from; None where the weights relate no such grids (gates,
        learned queries, a graph's edges). The default reads weights laid out so already;
        blocks whose weights are laid out otherwise (criss-cross, DANet) override it."""
        weights, queries, keys = record.weights, record.queries, record.keys
        if (
            isinstance(weights, Tensor)
            and queries
            and keys
            and weights.dim() >= 3
            and weights.shape[-2:] == (math.prod(queries), math.prod(keys))
        ):
            return weights
        return None

    def weights_image(self, record: Record) -> Optional[Tensor]:
        """One 2-D map of the first example of a record, for plots and loggers.

        A record over a grid of positions draws where its middle query looks (a record of probe
        rows: the probe nearest the middle); otherwise the leading axes of the first example
        (heads, hops) are averaged down to two (a record of probe rows: the probes' rows), and
        a tuple record draws its last tensor of two or more dims. Records that are no image
        (graphs) give None.
        """
        if record.keys is not None and len(record.keys) == 2:
            looked = self.looks(record, middle_query(record))
            if looked is not None:
                return looked[0]
        weights = record.weights
        if isinstance(weights, (tuple, list)):
            tensors = [w for w in weights if isinstance(w, Tensor) and w.dim() >= 2]
            if not tensors:
                return None
            weights = tensors[-1]
        if not isinstance(weights, Tensor) or weights.dim() < 2:
            return None
        image = weights[0].float()
        while image.dim() > 2:
            image = image.mean(0)
        return image if image.dim() == 2 else image.unsqueeze(0)

    def calls_picture(self, records: list[Record], caption: str = "") -> list[Any]:
        """The pictures of every call of the block in one forward pass (a decoder's steps, a memory's
        reads): one call is :meth:`weights_picture`; several calls whose maps run over key positions
        are one (calls x keys) map, a row per call (its query rows and heads averaged), keys a call
        does not have or that none of its queries weighs hatched; calls over pixels give one
        picture each. Empty without a map."""
        images = [self.weights_image(record) for record in records]
        pixels = records[0].keys is not None and len(records[0].keys) == 2
        if len(records) == 1 or pixels or any(image is None for image in images):
            said = [
                caption + (f", call {k + 1} of {len(records)}" if len(records) > 1 else "") for k in range(len(records))
            ]
            return [p for r, c in zip(records, said) if (p := self.weights_picture(r, c)) is not None]
        from ..pictures import heatmap

        rows = [image.float().mean(0) for image in images]
        width = max(len(row) for row in rows)
        values = torch.zeros(len(rows), width)
        valid = torch.zeros(len(rows), width, dtype=torch.bool)
        for k, (row, image) in enumerate(zip(rows, images)):
            values[k, : len(row)] = row.cpu()
            valid[k, : len(row)] = image.ne(0).any(0).cpu()
        averaged = sorted({image.shape[0] for image in images})
        said = f"{caption}\n{self.block_name}: one row per call ({len(records)} calls)" + (
            f", each call's {'/'.join(map(str, averaged))} rows and heads averaged" if averaged != [1] else ""
        )
        return [heatmap(values, rows="call (step)", columns="key position", valid=valid, caption_text=said)]

    def position_names(self, count: int) -> Optional[list[str]]:
        """The tick labels of ``count`` sequence positions: :attr:`leading_tokens` by name, the others
        by their position; None without leading tokens (the positions' numbers)."""
        if not self.leading_tokens:
            return None
        lead = list(self.leading_tokens[:count])
        return lead + [str(k) for k in range(len(lead), count)]

    def weights_picture(self, record: Record, caption: str = "") -> Any:
        """:meth:`weights_image` as a picture of :mod:`framework.pictures` (a matplotlib
        Figure), its axes named from the record's grids, ``caption`` (which example, which
        layer) above it with the block's name and what was averaged; None without a map.

        A map of key positions (queries x keys, or learned queries x keys) draws the keys
        that no query of the example weighs, in any head, hatched as padding (keys masked
        before the normalisation get exactly 0, and the weights are not negative), not as
        weight 0; where queries and keys are the same positions, their query rows too; a
        causal block's keys after each query hatched likewise (masked, not learned zeros).
        """
        image = self.weights_image(record)
        if image is None:
            return None
        from ..pictures import heatmap

        weights, queries, keys, probes = record.weights, record.queries, record.keys, record.probes
        rows = len(probes) if probes is not None else math.prod(queries) if queries else None
        layout = (rows, math.prod(keys)) if queries and keys else None
        heads = (
            weights.shape[1]
            if isinstance(weights, Tensor) and weights.dim() == 4 and weights.shape[2:] == layout
            else 1
        )
        said = f"{caption}\n{self.block_name}" + (f", mean of {heads} heads" if heads > 1 else "")  # (B, h, Q, K)
        if keys is not None and len(keys) == 2 and tuple(image.shape) == tuple(keys):
            middle = middle_query(record)
            query = f"query pixel {middle} of {queries[0]} x {queries[1]}" if queries else "its query"
            marked = middle if queries and tuple(queries) == tuple(keys) and probes is not None else None
            return heatmap(
                image,
                rows="key row",
                columns="key column",
                aspect="equal",
                marked=marked,
                caption_text=f"{said}: where {query} looks",
            )
        if keys is None or len(keys) != 1 or image.shape[-1] != keys[0]:  # no grid: say what the axes are
            drawn = (
                [w for w in weights if isinstance(w, Tensor) and w.dim() >= 2][-1]
                if isinstance(weights, (tuple, list))
                else weights
            )  # the tensor weights_image draws
            shape = tuple(drawn.shape[1:])
            return heatmap(
                image,
                rows="row",
                columns="column",
                caption_text=f"{said}: captured weights {shape} per example, leading axes averaged",
            )
        names = self.position_names(keys[0])
        cells = self._allowed(record, tuple(image.shape))
        attended = image.ne(0).any(0) if cells is None else cells.any(0)
        causal = bool(getattr(self, "causal", False)) and image.shape[0] > 1
        said += ": causal, the keys after each query masked" if causal else ""
        same = queries is not None and tuple(queries) == tuple(keys)
        if probes is not None and len(probes) < math.prod(queries):  # some queries' rows: label them
            return heatmap(
                image,
                rows=f"probe query position (of {queries[0]})",
                columns="key position",
                row_labels=[names[int(p)] if same and names else str(int(p)) for p in probes],
                column_labels=names,
                valid_columns=attended,
                valid_rows=attended[probes] if same else None,
                valid=cells,
                caption_text=said,
            )
        same = same and image.shape[0] == keys[0]
        if cells is None and causal:  # a full record: the block's causal triangle
            cells = torch.ones(image.shape, dtype=torch.bool).tril()
        return heatmap(
            image,
            rows="query position" if queries else "query",
            columns="key position",
            row_labels=names if same else None,
            column_labels=names,
            valid_columns=attended,
            valid_rows=attended if same else None,
            valid=cells,
            caption_text=said,
        )

    @staticmethod
    def _allowed(record: Record, shape: tuple[int, int]) -> Optional[Tensor]:
        """The (rows, K) cells of the first example that some head may attend (padding and causal
        masks both), from a record of probe rows' ``valid``; None where the record has none."""
        if record.probes is None or record.valid is None or not isinstance(record.weights, Tensor):
            return None
        cells = torch.broadcast_to(record.valid, record.weights.shape)[0]
        while cells.dim() > 2:  # heads
            cells = cells.any(0)
        return cells.cpu() if tuple(cells.shape) == shape else None
