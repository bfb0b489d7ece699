"""Digit scenes: generated segmentation images in which a digit's class is given by another digit.

A scene is a ``canvas_size`` square of colour and texture clutter with ``digits_per_scene``
digits of one class. ``clean_per_scene`` of them are drawn as handwritten digits; each of the
others is hidden under an opaque striped tile of the digit's size, and the tile's pixels are
labelled with the hidden digit's class. A tile says nothing about its class, so it can only be
labelled by looking at the clean digits elsewhere in the scene: long-range context.

The scenes also know the gold of that look (:func:`gold_masks`): the drawn digits' ink, where a
tile's pixels should attend, and the tiles' pixels, the queries that need it.
:meth:`DigitScenes.evaluation_dataloader` gives test batches with them, for
``python -m framework evaluate``; with ``gold=true`` every split's batches carry them (the
attention losses of ``domains.vision.Segmentation`` train on them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.data import DataLoader
from torchvision.transforms import v2

from framework.data import SPLITS, SplitDataModule
from framework.data.sampling import loader_generator
from framework.errors import ConfigError
from framework.values import AnyReal, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Seed

from .datasets import ImageTensors
from .digits import DIGIT_NAMES, digit_split_indices, load_digit_images
from .palettes import voc_palette
from .transforms import IGNORE_INDEX, check_normalisation, normalised

CHUNK = 1000  # scenes drawn at once: bounds the memory of generation (about 250 MB at 64 x 64)

CLUTTER_LEVELS = (0.3, 0.7)  # clutter colours lie in this range (per channel) ...
INK_DARK, INK_BRIGHT = 0.15, 0.85  # ... digits and tiles below INK_DARK or above INK_BRIGHT
GRATING_AMPLITUDE = 0.06  # of the clutter texture; base colours keep this margin inside CLUTTER_LEVELS
INK_THRESHOLD = 0.35  # a resized glyph's pixel is ink above this (the digits' scale is [0, 1])


class Scenes(NamedTuple):
    """Generated scenes and how they were drawn (N scenes, K digits each, canvas S).

    images (N, 3, S, S) uint8; masks (N, S, S) uint8, 0 = background, d + 1 = digit class d;
    scene_class (N,); the digits' glyph (index into scikit-learn's digits), size, top, left
    and occluded flag, each (N, K).
    """

    images: Tensor
    masks: Tensor
    scene_class: Tensor
    glyph: Tensor
    size: Tensor
    top: Tensor
    left: Tensor
    occluded: Tensor


def glyph_shapes(glyphs: Tensor, low: int, high: int) -> Tensor:
    """Ink masks of the glyphs at every size: (high - low + 1, P, high, high) bool.

    ``[s - low, p, :s, :s]`` is glyph ``p`` resized bilinearly to s x s, thresholded at INK_THRESHOLD.
    """
    shapes = torch.zeros(high - low + 1, len(glyphs), high, high, dtype=torch.bool)
    for k, size in enumerate(range(low, high + 1)):  # a handful of sizes
        resized = F.interpolate(glyphs[:, None], size=(size, size), mode="bilinear", align_corners=False)
        shapes[k, :, :size, :size] = resized[:, 0] > INK_THRESHOLD
    return shapes


def uniform(shape: Sequence[int], low: float, high: float, g: torch.Generator) -> Tensor:
    """Uniform samples in [low, high)."""
    return low + (high - low) * torch.rand(*shape, generator=g)


def ink_colours(shape: Sequence[int], g: torch.Generator) -> Tensor:
    """Random colours (..., 3), dark (every channel < INK_DARK) or bright (> INK_BRIGHT) at random."""
    dark = torch.rand(*shape[:-1], 1, generator=g) < 0.5
    return torch.where(dark, uniform(shape, 0, INK_DARK, g), uniform(shape, INK_BRIGHT, 1, g))


def clutter(count: int, canvas: int, rectangles: int, g: torch.Generator) -> Tensor:
    """Backgrounds (N, 3, S, S) in CLUTTER_LEVELS: a smooth random colour field (a 4 x 4 grid of
    colours, interpolated bilinearly) under ``rectangles`` rectangles (sides 4 .. S/2, later ones on
    top) of random colour, half of them textured with a faint sine grating."""
    low, high = CLUTTER_LEVELS[0] + GRATING_AMPLITUDE, CLUTTER_LEVELS[1] - GRATING_AMPLITUDE
    weights = F.interpolate(torch.eye(4)[None], size=canvas, mode="linear", align_corners=True)[0].T  # (S, 4)
    field = weights @ uniform((count, 3, 4, 4), low, high, g) @ weights.T
    if rectangles == 0:
        return field
    coords = torch.arange(canvas)
    top, left = torch.randint(canvas, (2, count, rectangles, 1), generator=g)
    height, width = torch.randint(4, canvas // 2 + 1, (2, count, rectangles, 1), generator=g)
    rows = ((coords >= top) & (coords < top + height)).to(torch.uint8)  # (N, R, S)
    cols = ((coords >= left) & (coords < left + width)).to(torch.uint8)
    rank = torch.arange(1, rectangles + 1, dtype=torch.uint8)[:, None, None]
    on_top = (rows[..., :, None] * cols[..., None, :] * rank).amax(1).long()  # (N, S, S), 0 = no rectangle
    # per rectangle (index 0 = none): colour, grating direction, period and switch
    colour = torch.cat([torch.zeros(count, 1, 3), uniform((count, rectangles, 3), low, high, g)], 1)
    angle, period = uniform((count, rectangles + 1), 0, math.pi, g), uniform((count, rectangles + 1), 3, 8, g)
    textured = (torch.rand(count, rectangles + 1, generator=g) < 0.5).float()
    scene = torch.arange(count)[:, None, None]
    y, x = coords[:, None].float(), coords[None, :].float()
    a = angle[scene, on_top]
    wave = (y * a.sin() + x * a.cos()) * (2 * math.pi / period[scene, on_top])
    painted = (
        colour[scene, on_top].permute(0, 3, 1, 2) + (GRATING_AMPLITUDE * textured[scene, on_top] * wave.sin())[:, None]
    )
    return torch.where(on_top[:, None] > 0, painted, field)


def render_scenes(
    shapes: Tensor,
    labels: Tensor,
    count: int,
    canvas: int,
    digits: int,
    clean: int,
    digit_size: tuple[int, int],
    rectangles: int,
    noise: float,
    seed: int,
) -> Scenes:
    """``count`` scenes drawn from ``seed``, all at once (no loop over scenes, digits or pixels).

    The canvas is cut into a grid of cells of at least the largest digit size; each digit gets
    its own cell (so digits never overlap) at a random offset inside it. The first ``clean``
    digits of a scene (in random cells) are drawn, the others are tiles.

    Args:
        shapes: :func:`glyph_shapes` of the P glyphs to draw from; labels: (P,) their classes.
        count, canvas, digits, clean, digit_size, rectangles, noise: see :class:`DigitScenes`.
    """
    g = torch.Generator().manual_seed(seed)
    low, high = digit_size
    cells = canvas // high
    cell = canvas // cells
    scene_class = torch.randint(10, (count,), generator=g)
    # a glyph of the scene's class for every digit: a uniform pick among the class's glyphs
    order, per_class = labels.argsort(stable=True), torch.bincount(labels, minlength=10)
    first = per_class.cumsum(0) - per_class
    pick = (torch.rand(count, digits, generator=g) * per_class[scene_class, None]).long()
    glyph = order[first[scene_class, None] + pick]  # (N, K) into the glyphs
    size = torch.randint(low, high + 1, (count, digits), generator=g)
    slot = torch.rand(count, cells * cells, generator=g).argsort(-1)[:, :digits]  # distinct cells
    top = (slot // cells) * cell + (torch.rand(count, digits, generator=g) * (cell - size + 1)).long()
    left = (slot % cells) * cell + (torch.rand(count, digits, generator=g) * (cell - size + 1)).long()
    occluded = (torch.arange(digits) >= clean).expand(count, digits)

    # each digit as a (high x high) patch: its shape (glyph ink, or the full size x size square
    # of a tile) and its colours (one ink colour; on a tile, stripes of it and of a colour of the
    # other brightness)
    offset = torch.arange(high)
    side = offset < size[..., None]
    shape = torch.where(occluded[..., None, None], side[..., :, None] & side[..., None, :], shapes[size - low, glyph])
    ink = ink_colours((count, digits, 3), g)
    second = torch.where(ink < 0.5, uniform(ink.shape, INK_BRIGHT, 1, g), uniform(ink.shape, 0, INK_DARK, g))
    width = torch.randint(1, 3, (count, digits, 1, 1), generator=g)
    rise, run = torch.tensor([[1, 0], [0, 1], [1, 1], [1, -1]])[torch.randint(4, (count, digits), generator=g)].unbind(
        -1
    )
    stripe = (offset[:, None] * rise[..., None, None] + offset * run[..., None, None]).div(
        width, rounding_mode="floor"
    ) % 2
    colour = torch.where(
        (occluded[..., None, None] & (stripe == 1))[..., None], second[..., None, None, :], ink[..., None, None, :]
    )  # (N, K, high, high, 3)

    # paste the patches' shape pixels into the canvases
    pixel = shape.flatten().nonzero().squeeze(1)  # into (N, K, high, high)
    digit, i, j = pixel // high**2, pixel // high % high, pixel % high  # digit: into (N, K)
    n, y, x = digit // digits, top.flatten()[digit] + i, left.flatten()[digit] + j
    image = clutter(count, canvas, rectangles, g).permute(0, 2, 3, 1).contiguous()  # (N, S, S, 3)
    image[n, y, x] = colour.reshape(-1, 3)[pixel]
    image.add_(noise * torch.randn(image.shape, generator=g)).clamp_(0, 1).mul_(255).round_()
    masks = torch.zeros(count, canvas, canvas, dtype=torch.uint8)
    masks[n, y, x] = (scene_class[n] + 1).to(torch.uint8)
    images = image.to(torch.uint8).permute(0, 3, 1, 2).contiguous()
    return Scenes(images, masks, scene_class, glyph, size, top, left, occluded)


def gold_masks(scenes: Scenes) -> Tensor:
    """(N, 2, S, S) bool: the drawn digits' ink pixels (the gold keys of a tile's attention) and
    the hidden tiles' pixels (the queries that need the look), from how the scenes were drawn."""
    canvas = scenes.masks.shape[-1]
    coords = torch.arange(canvas)
    inside_rows = (coords >= scenes.top[..., None]) & (coords < (scenes.top + scenes.size)[..., None])  # (N, K, S)
    inside_cols = (coords >= scenes.left[..., None]) & (coords < (scenes.left + scenes.size)[..., None])
    squares = inside_rows[..., :, None] & inside_cols[..., None, :]  # (N, K, S, S)
    tiles = (squares & scenes.occluded[..., None, None]).any(1)
    drawn = (scenes.masks > 0) & ~tiles
    return torch.stack([drawn, tiles], 1)


class GoldScenes(ImageTensors):
    """Scenes as ``(image, target, gold)``: :class:`ImageTensors` items and their (2, S, S)
    :func:`gold_masks` (the transform must not move pixels: normalisation only)."""

    def __init__(self, scenes: Scenes, transform: v2.Transform) -> None:
        super().__init__(scenes.images, scenes.masks, transform)
        self.gold = gold_masks(scenes)

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor, Tensor]:
        image, target = super().__getitem__(i)
        return image, target, self.gold[i]


def chunk_seed(seed: int, split: str, chunk: int) -> int:
    """An independent generator seed for each (seed, split, chunk of CHUNK scenes)."""
    return int(np.random.SeedSequence([seed, SPLITS.index(split), chunk]).generate_state(1)[0])


@lru_cache(maxsize=6)
def scene_split(
    split: str,
    count: int,
    canvas: int,
    digits: int,
    clean: int,
    digit_size: tuple[int, int],
    rectangles: int,
    noise: float,
    seed: int,
) -> Scenes:
    """The scenes of one split, cached in memory. Each split draws its glyphs from its own
    stratified share of scikit-learn's digits (70 / 15 / 15), so no handwritten digit of the
    validation or test scenes is seen in training; ``Scenes.glyph`` indexes all 1797 digits."""
    images, labels = load_digit_images()
    pool = digit_split_indices(0.15, 0.15, seed)[split]
    shapes = glyph_shapes(images[pool], *digit_size)
    chunks = [
        render_scenes(
            shapes,
            labels[pool],
            min(CHUNK, count - start),
            canvas,
            digits,
            clean,
            digit_size,
            rectangles,
            noise,
            chunk_seed(seed, split, start // CHUNK),
        )
        for start in range(0, count, CHUNK)
    ]
    scenes = Scenes(*(torch.cat(parts) for parts in zip(*chunks)))
    return scenes._replace(glyph=pool[scenes.glyph])


class DigitScenes(SplitDataModule):
    """Generated segmentation scenes of handwritten digits (no download), where context decides.

    **The rule.** Every scene holds ``digits_per_scene`` digits of *one* class d (random per
    scene). ``clean_per_scene`` of them are handwritten digits (scikit-learn's glyphs, resized to
    a random size in ``digit_size``); every other one is hidden under an opaque tile of its size,
    striped in two random colours (stripes 1-2 px, horizontal, vertical or diagonal). Labels:
    background 0; a clean digit's ink pixels and all of a tile's pixels d + 1. So a tile's class
    is the class of the clean digit(s) elsewhere in the scene: a network must relate distant
    positions (each digit sits in its own cell of a grid, 3 x 3 cells of 21 px in the default
    64 x 64 canvas, so digits never overlap and lie some 10 to 50 px apart); a local head can
    segment a tile but only guess its class.

    **Clutter.** The background is a smooth random colour field under ``clutter`` rectangles of
    random colours, half of them with a faint sine grating; clutter colours lie in [0.3, 0.7] per
    channel, ink and tile colours below 0.15 or above 0.85 (random dark or bright, random hue), and
    Gaussian noise of std ``noise`` is added. Colour and size carry no information on the class.

    Scenes are generated vectorised, a thousand at a time (4000 64 x 64 scenes take about 2.5 s
    of one CPU core), identically for a seed; each split and chunk has its own random stream derived
    from (seed, split, chunk), and the splits draw their glyphs from disjoint stratified shares of
    the digits. They are cached in memory.

    Args:
        canvas_size: side S of the square scenes.
        digits_per_scene: K digits per scene (at most the number of grid cells, (S // max size)^2).
        clean_per_scene: how many of them are drawn (1 <= clean <= K); the others are tiles.
        digit_size: (min, max) side of the digits in pixels.
        clutter: rectangles per scene.
        noise: std of the Gaussian pixel noise (images in [0, 1]).
        train_size, val_size, test_size: scenes per split.
        seed: the generator seed.
        mean, std: normalisation of the 3 channels (defaults: the scenes' pixel statistics).
        gold: every split's batches also carry the gold masks (:func:`gold_masks`), for
            ``task.attention_supervision`` and ``task.decouple_attention``.
        batch_size, eval_batch_size, num_workers: of the loaders.

    Batches: image (B, 3, S, S) float, target (B, S, S) long in 0..10; with ``gold``, and in
    :meth:`evaluation_dataloader`, also gold (B, 2, S, S) bool.
    """

    def __init__(
        self,
        canvas_size: PositiveInt = 64,
        digits_per_scene: PositiveInt = 4,
        clean_per_scene: PositiveInt = 1,
        digit_size: tuple[PositiveInt, PositiveInt] = (12, 20),
        clutter: NonNegativeInt = 6,
        noise: NonNegativeFloat = 0.05,
        train_size: PositiveInt = 4000,
        val_size: PositiveInt = 500,
        test_size: PositiveInt = 500,
        seed: Seed = 0,
        mean: Sequence[AnyReal] = (0.5, 0.5, 0.5),
        std: Sequence[PositiveFloat] = (0.21, 0.21, 0.21),
        gold: bool = False,
        batch_size: PositiveInt = 32,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers)
        low, high = digit_size
        if not 8 <= low <= high <= canvas_size:
            raise ConfigError(
                f"data.digit_size must be (min, max) with 8 <= min <= max <= canvas_size "
                f"({canvas_size}), got {tuple(digit_size)}"
            )
        if not 1 <= digits_per_scene <= (canvas_size // high) ** 2:
            raise ConfigError(
                f"data.digits_per_scene must be between 1 and {(canvas_size // high) ** 2} (the cells of "
                f"side {high} that fit a {canvas_size} canvas), got {digits_per_scene}"
            )
        if not 1 <= clean_per_scene <= digits_per_scene:
            raise ConfigError(
                f"data.clean_per_scene must be between 1 and digits_per_scene ({digits_per_scene}), "
                f"got {clean_per_scene}"
            )
        check_normalisation(mean, std, 3)
        self.save_hyperparameters()
        self.num_classes, self.in_channels, self.ignore_index = 11, 3, IGNORE_INDEX
        self.class_names = ["background", *DIGIT_NAMES]
        self.palette = voc_palette(11)
        self.mean, self.std = tuple(mean), tuple(std)
        self.gold_evidence = bool(gold)  # batches carry the gold masks (the task's attention losses read it)

    def scenes(self, split: str) -> Scenes:
        """The scenes of a split (``train``, ``val``, ``test``) with how they were drawn."""
        h = self.hparams
        count = {"train": h.train_size, "val": h.val_size, "test": h.test_size}[split]
        return scene_split(
            split,
            count,
            h.canvas_size,
            h.digits_per_scene,
            h.clean_per_scene,
            tuple(h.digit_size),
            h.clutter,
            float(h.noise),
            h.seed,
        )

    def make_splits(self) -> dict[str, ImageTensors]:
        transform = v2.Compose(normalised(self.mean, self.std))
        if self.gold_evidence:
            return {split: GoldScenes(self.scenes(split), transform) for split in SPLITS}
        return {split: ImageTensors(*self.scenes(split)[:2], transform) for split in SPLITS}

    def evaluation_dataloader(self, split: str = "test") -> DataLoader:
        """Batches ``(image, target, gold)`` of a split, gold (B, 2, S, S) bool from :func:`gold_masks`:
        what ``python -m framework evaluate`` reads for the intrinsic measures."""
        dataset = GoldScenes(self.scenes(split), v2.Compose(normalised(self.mean, self.std)))
        return DataLoader(
            dataset, batch_size=self.eval_batch_size, num_workers=self.num_workers, generator=loader_generator()
        )
