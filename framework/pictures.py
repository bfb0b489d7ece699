"""The picture kit: every picture the framework logs, drawn with matplotlib.

A picture is a matplotlib ``Figure`` with labelled axes, a colour bar and a caption, at least
:data:`MIN_SIDE` pixels on its short side. Figures are built without pyplot (no global
state, nothing to close) on the Agg canvas; :func:`as_image` rasterises one into the
(H, W, 3) ``uint8`` array that the loggers take, so callers and tests can read a figure
(``fig.axes``, labels, colour bars) before it becomes pixels. Tensors may live on any
device (they are copied to the CPU), and matplotlib is imported by the first drawing,
not by ``import framework.pictures``.

The domains' ``pictures.py`` modules compose these pieces; the ``attention_maps``
callback and ``evaluate`` rasterise and log what they draw.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

import numpy as np
import torch
from torch import Tensor

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 100
MIN_SIDE = 400  # pixels, the short side of every picture
WEIGHTS = "viridis"  # the colour map of weights
MAX_TICKS = 40  # axes with more positions get numbered ticks instead of one label each
LETTER = 0.07  # inches: the width of a letter of a tick label
MASKED_FACE, MASKED_LINES = "0.88", "0.55"  # grey, hatched: cells that are no key
NOT_A_KEY = "masked, no weight (padding, a causal mask)"


class Sketch(NamedTuple):
    """A picture not drawn yet: the call of a :func:`picture` function with its inputs (tensors
    detached and on the CPU), small to pickle; :meth:`build` draws its figure."""

    draw: Callable[..., Figure]
    args: tuple
    kwargs: dict

    def build(self) -> Figure:
        token = _SKETCHING.set(False)  # drawn now, even when asked within sketching()
        try:
            return self.draw(*self.args, **self.kwargs)
        finally:
            _SKETCHING.reset(token)


_SKETCHING: ContextVar[bool] = ContextVar("sketching", default=False)


@contextlib.contextmanager
def sketching() -> Iterator[None]:
    """Within it, the :func:`picture` functions give their :class:`Sketch` instead of drawing: the
    ``attention_maps`` callback has the figures built and rasterised in the drawing process
    (:mod:`framework.drawing`), off the training process."""
    token = _SKETCHING.set(True)
    try:
        yield
    finally:
        _SKETCHING.reset(token)


def _on_cpu(value: Any) -> Any:
    if isinstance(value, Tensor):  # a copy: a view would pickle its whole base (the batch of an example)
        return value.detach().to("cpu", copy=True)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_on_cpu(v) for v in value)
    if isinstance(value, dict):
        return {k: _on_cpu(v) for k, v in value.items()}
    return value


def picture(draw: Callable[..., Figure]) -> Callable[..., Figure]:
    """Mark a function that draws a whole picture from data (tensors, arrays, labels) and returns its
    figure: called within :func:`sketching`, it returns a :class:`Sketch` of the call instead.
    Such a function's figure is not changed by its callers (a sketch has none yet)."""

    @functools.wraps(draw)
    def drawn(*args: Any, **kwargs: Any) -> Any:
        if _SKETCHING.get():
            return Sketch(drawn, _on_cpu(args), _on_cpu(kwargs))
        return draw(*args, **kwargs)

    return drawn


def array(x: Any) -> np.ndarray:
    """A tensor (any device) or array as a float numpy array."""
    if isinstance(x, Tensor):
        x = x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=float)


def figure(width: float, height: float) -> Figure:
    """An empty figure of ``width`` x ``height`` inches (at least :data:`MIN_SIDE` pixels on
    each side) with constrained layout, on an Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    smallest = MIN_SIDE / DPI
    fig = Figure(figsize=(max(width, smallest), max(height, smallest)), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def as_image(picture: Any) -> np.ndarray:
    """A figure, sketch, :class:`Gathered`, tensor or array picture as the (H, W, 3) uint8 array the
    loggers take."""
    if isinstance(picture, Tensor):
        return picture.detach().cpu().numpy()
    if isinstance(picture, (Sketch, Gathered)) or hasattr(picture, "canvas"):
        from .drawing import pixels

        return pixels(picture)
    return np.asarray(picture)


HEADER = 36  # pixels: the line above a gathered picture that names its key and epoch


class Gathered(NamedTuple):
    """The pictures of one key of one validation, logged as one image: each drawn (sketches built,
    figures rasterised, arrays as they are), stacked top to bottom, under a header line naming
    ``header`` (the key, the epoch). With ``size`` ((H, W) pixels, the size the key keeps) the
    figures are laid out anew at that size (each as wide, its share of the height by its own
    height: text keeps its size, nothing is scaled as pixels); what still differs (arrays) is
    scaled down to fit and padded white. Small to pickle: the drawing process
    (:mod:`framework.drawing`) draws it."""

    pictures: tuple
    header: str
    size: Optional[tuple[int, int]] = None

    def image(self) -> np.ndarray:
        """The (H, W, 3) uint8 image."""
        from .drawing import built, rasterise

        drawn = [built(p) if isinstance(p, Sketch) or hasattr(p, "canvas") else as_image(p) for p in self.pictures]
        height, width = (self.size[0] - HEADER, self.size[1]) if self.size is not None else (None, None)
        if self.size is not None:
            _share(drawn, height, width)
        tiles = [rasterise(d) if hasattr(d, "canvas") else d for d in drawn]
        stack = max(tile.shape[1] for tile in tiles)
        body = np.concatenate([_padded(tile, tile.shape[0], stack) for tile in tiles])
        if self.size is not None:
            body = _padded(_shrunk(body, height, width), height, width)
        return _headed(body, self.header)


def _share(drawn: list, height: int, width: int) -> None:
    """Size the figures among ``drawn`` (figures and arrays) so that their stack is (height, width)
    pixels: each ``width`` wide, the height shared by their own heights."""
    heights = [d.get_size_inches()[1] * DPI if hasattr(d, "canvas") else d.shape[0] for d in drawn]
    shares = [int(h * height / sum(heights)) for h in heights]
    shares[-1] += height - sum(shares)
    for picture, share in zip(drawn, shares):
        if hasattr(picture, "canvas"):  # + 0.5: Agg's canvas truncates the size in pixels
            picture.set_size_inches((width + 0.5) / DPI, (share + 0.5) / DPI)


def _padded(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """``image`` at the top left of a white (height, width) canvas at least as large."""
    canvas = np.full((height, width, 3), 255, dtype=np.uint8)
    canvas[: image.shape[0], : image.shape[1]] = image
    return canvas


def _shrunk(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """``image`` scaled down (proportions kept) to fit (height, width), as it is where it fits (an
    array among a key's pictures, a pixel of rounding)."""
    factor = min(height / image.shape[0], width / image.shape[1])
    if factor >= 1:
        return image
    from PIL import Image

    size = (max(1, int(image.shape[1] * factor)), max(1, int(image.shape[0] * factor)))
    return np.asarray(Image.fromarray(image).resize(size, Image.Resampling.LANCZOS))


def _headed(body: np.ndarray, text: str) -> np.ndarray:
    """``body`` under a line of ``text``, drawn by matplotlib (pixels of ``body`` placed one to one)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .drawing import rasterise

    height, width = body.shape[0] + HEADER, body.shape[1]
    fig = Figure(figsize=((width + 0.5) / DPI, (height + 0.5) / DPI), dpi=DPI)  # Agg truncates to pixels
    FigureCanvasAgg(fig)
    fig.figimage(body, 0, 0, origin="upper")
    fig.text(8 / width, 1 - 8 / height, text, ha="left", va="top", fontsize=11, fontweight="bold")
    return rasterise(fig)[-height:, :width]


def caption(fig: Figure, text: str) -> None:
    """The figure's caption, above its panels, its lines wrapped to the figure's width."""
    if text:
        import textwrap

        width = int(fig.get_figwidth() * DPI / 7.5)  # characters of 10-point text, at most
        fig.suptitle("\n".join(textwrap.fill(line, width) for line in text.split("\n")), fontsize=10)


def colour_bar(ax: Axes, mappable: Any, label: str) -> Any:
    """A labelled colour bar beside ``ax`` for an image or a :func:`scale`."""
    bar = ax.figure.colorbar(mappable, ax=ax, shrink=0.9)
    bar.set_label(label)
    return bar


def scale(low: float, high: float, cmap: str = WEIGHTS) -> Any:
    """A colour scale from ``low`` to ``high`` for artists that are no image (lines, text
    boxes): ``scale(...).to_rgba(value)`` is a colour, and :func:`colour_bar` draws it."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    return ScalarMappable(Normalize(low, max(high, low + 1e-12)), cmap)


def _ticks(ax: Axes, axis: str, count: int, labels: Optional[Sequence[str]], extent: Optional[tuple] = None) -> None:
    """One tick per position (its label, or its index) where there are at most
    :data:`MAX_TICKS`, else integer ticks (with labels: every few positions' labels, the first
    always); ``extent``: matplotlib's ticks in its units."""
    if extent is not None:
        return
    if count > MAX_TICKS and labels is None:
        from matplotlib.ticker import MaxNLocator

        getattr(ax, f"{axis}axis").set_major_locator(MaxNLocator(integer=True))
        return
    labels = [str(k) for k in range(count)] if labels is None else list(labels)
    if count > MAX_TICKS:  # every few positions' labels, the first always (a [CLS])
        every = -(-count // (MAX_TICKS // 2))
        shown = range(0, count, every)
        getattr(ax, f"set_{axis}ticks")(shown, [labels[k] for k in shown], fontsize=8)
        return
    small = 8 if count > 16 else 9
    if axis == "x":
        ax.set_xticks(range(count), labels, rotation=90 if max(map(len, labels), default=0) > 2 else 0, fontsize=small)
    else:
        ax.set_yticks(range(count), labels, fontsize=small)


def weight_map(
    ax: Axes,
    values: Any,
    *,
    rows: str,
    columns: str,
    row_labels: Optional[Sequence[str]] = None,
    column_labels: Optional[Sequence[str]] = None,
    valid_rows: Any = None,
    valid_columns: Any = None,
    valid: Any = None,
    low: Optional[float] = None,
    high: Optional[float] = None,
    bar: Optional[str] = "attention weight",
    cmap: Any = WEIGHTS,
    extent: Optional[tuple] = None,
    aspect: str = "auto",
    title: str = "",
) -> Any:
    """Draw (R, C) ``values`` on ``ax``: rows down, columns across, axes named ``rows`` and
    ``columns`` (with one tick label per row or column when ``*_labels`` are given and
    there are at most :data:`MAX_TICKS`), and a colour bar named ``bar`` (None: none).

    Rows or columns that are False in ``valid_rows`` / ``valid_columns`` ((R,), (C,) bool),
    and cells False in ``valid`` ((R, C) bool), are no positions (padding, ignored pixels):
    drawn hatched grey, not as a value, and left out of the colour scale, which runs from
    ``low`` (default: 0, or the smallest value if negative) to ``high`` (default: the
    largest value). ``extent`` places the cells in other units (image pixels); ``cmap`` is
    a colour map or its name. Returns the image artist.
    """
    values = array(values)
    masked = np.zeros(values.shape, dtype=bool)
    if valid_rows is not None:
        masked |= ~array(valid_rows).astype(bool)[:, None]
    if valid_columns is not None:
        masked |= ~array(valid_columns).astype(bool)[None, :]
    if valid is not None:
        masked |= ~array(valid).astype(bool)
    data = np.ma.masked_array(values, masked)
    shown = data.compressed() if data.count() else np.zeros(1)
    low = min(0.0, float(shown.min())) if low is None else low
    high = float(shown.max()) if high is None else high
    if masked.any():
        from matplotlib.patches import Rectangle

        left, right, bottom, top = extent or (-0.5, values.shape[1] - 0.5, values.shape[0] - 0.5, -0.5)
        ax.add_patch(
            Rectangle(
                (left, top),
                right - left,
                bottom - top,
                facecolor=MASKED_FACE,
                edgecolor=MASKED_LINES,
                hatch="///",
                linewidth=0,
                zorder=0,
            )
        )
    import matplotlib

    colours = (matplotlib.colormaps[cmap] if isinstance(cmap, str) else cmap).with_extremes(bad=(0, 0, 0, 0))
    image = ax.imshow(
        data,
        cmap=colours,
        vmin=low,
        vmax=max(high, low + 1e-12),
        interpolation="nearest",
        aspect=aspect,
        extent=extent,
        zorder=1,
    )
    ax.set_xlabel(columns)
    ax.set_ylabel(rows)
    _ticks(ax, "x", values.shape[1], column_labels, extent)
    _ticks(ax, "y", values.shape[0], row_labels, extent)
    if title:
        ax.set_title(title, fontsize=10)
    if bar:
        colour_bar(ax, image, bar)
    return image


def padding_legend(fig: Figure, text: str = NOT_A_KEY) -> None:
    """A legend under the figure for the hatched cells of :func:`weight_map`."""
    from matplotlib.patches import Patch

    fig.legend(
        handles=[Patch(facecolor=MASKED_FACE, edgecolor=MASKED_LINES, hatch="///", label=text)],
        loc="outside lower left",
        fontsize=8,
        frameon=False,
    )


def cell_inches(rows: int, columns: int) -> float:
    """The side of one cell of a map: about 5 inches for the longer side, at most 0.4 inch, and
    at least 0.12 inch while each position has its own label (:data:`MAX_TICKS`); a larger map
    keeps its proportions (a 128 x 256 map is drawn twice as wide as high, not squeezed square)."""
    longest = max(rows, columns, 1)
    return min(0.4, max(0.12 if longest <= MAX_TICKS else 0.0, 5.0 / longest))


@picture
def heatmap(
    values: Any,
    *,
    rows: str,
    columns: str,
    caption_text: str = "",
    marked: Optional[tuple[float, float]] = None,
    **options: Any,
) -> Figure:
    """A figure of one :func:`weight_map` (``options`` are its keywords), sized so that its
    cells are near square and its labels fit; padding, if any, named in a legend; a query
    pixel ``marked`` (row, column) with :func:`mark`."""
    count_rows, count_columns = array(values).shape
    side = cell_inches(count_rows, count_columns)
    label_room = 1.2 if options.get("column_labels") is not None else 0.6
    row_room = LETTER * max(map(len, options.get("row_labels") or [""]))  # long row labels (sentences) widen it
    fig = figure(min(14.0, count_columns * side + 2.6 + row_room), min(12.0, count_rows * side + 1.2 + label_room))
    image = weight_map(fig.add_subplot(), values, rows=rows, columns=columns, **options)
    if marked is not None:
        mark(fig.axes[0], marked)
    if np.ma.is_masked(image.get_array()):
        padding_legend(fig)
    caption(fig, caption_text)
    return fig


@picture
def heatmaps(
    panels: Sequence[tuple[str, Any, str]], *, rows: str, columns: str, caption_text: str = "", **options: Any
) -> Figure:
    """Maps over the same positions side by side: ``panels`` are ``(title, (R, C) values,
    colour bar label)``, each with its own colour bar; ``options`` are :func:`weight_map`'s
    keywords for all (the padding, for instance)."""
    count_rows, count_columns = array(panels[0][1]).shape
    side = cell_inches(count_rows, count_columns)
    fig = figure(min(20.0, len(panels) * (count_columns * side + 2.4)), min(12.0, count_rows * side + 1.8))
    for ax, (title, values, bar) in zip(fig.subplots(1, len(panels)), panels):
        image = weight_map(ax, values, rows=rows, columns=columns, bar=bar, title=title, **options)
    if np.ma.is_masked(image.get_array()):
        padding_legend(fig)
    caption(fig, caption_text)
    return fig


def as_rgb(image: Any) -> np.ndarray:
    """A (C, H, W) normalised image (grey for C = 1), stretched to the full range, or an
    (H, W, 3) image (uint8, or floats in [0, 1]) -> (H, W, 3) floats in [0, 1]."""
    if image.shape[-1] == 3 and image.shape[0] not in (1, 3):
        return array(image) / (255.0 if image.dtype in (np.uint8, torch.uint8) else 1.0)
    image = array(image)
    image = np.repeat(image, 3, axis=0) if image.shape[0] == 1 else image[:3]
    low, high = image.min(), image.max()
    return ((image - low) / max(high - low, 1e-8)).transpose(1, 2, 0)


def image_panel(ax: Axes, image: Any, title: str = "") -> None:
    """An image (see :func:`as_rgb`) on ``ax`` with its pixel rows and columns as axes."""
    ax.imshow(as_rgb(image), interpolation="nearest")
    ax.set_xlabel("column (pixels)")
    ax.set_ylabel("row (pixels)")
    if title:
        ax.set_title(title, fontsize=10)


def mark(ax: Axes, point: tuple[float, float], label: str = "query pixel") -> None:
    """A white cross outlined in black at ``point`` (row, column) in the axes' units."""
    ax.plot(
        [point[1]],
        [point[0]],
        marker="P",
        markersize=11,
        color="white",
        markeredgecolor="black",
        linestyle="none",
        label=label,
        zorder=3,
    )


@picture
def overlay(
    image: Any,
    weights: Any,
    point: Optional[tuple[float, float]] = None,
    *,
    keys: str = "key pixels",
    caption_text: str = "",
) -> Figure:
    """The image beside where one query looks: the (h, w) ``weights`` over a grid of key
    pixels stretched over the image's (H, W) pixels, with the query ``point`` (row, column
    in image pixels) marked in both; without ``point`` the query is no pixel (a ViT's [CLS])."""
    rgb = as_rgb(image)
    height, width = rgb.shape[:2]
    grid = array(weights).shape
    fig = figure(9.0, 4.2 * height / width + 0.8)
    left, right = fig.subplots(1, 2)
    image_panel(left, rgb, "image")
    weight_map(
        right,
        weights,
        rows=f"row (pixels; {grid[0]} key rows)",
        columns=f"column (pixels; {grid[1]} key columns)",
        extent=(-0.5, width - 0.5, height - 0.5, -0.5),
        aspect="equal",
        title=f"attention over the {keys}",
    )
    if point is not None:
        for ax in (left, right):
            mark(ax, point)
        left.legend(loc="lower left", fontsize=8, framealpha=0.8)
    caption(fig, caption_text)
    return fig
