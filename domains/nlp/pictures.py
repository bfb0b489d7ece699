"""Pictures of attention over text: alignment heat maps and highlighted words, as uint8 (H, W, 3)
tensors for the loggers. Text is drawn with PIL's default font (ASCII: other characters are
transliterated, ``ß`` -> ``ss``, ``ö`` -> ``o``; spaces and the sub-word marker ``▁`` show as ``_``)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont
from torch import Tensor

from framework.pictures import heatmap

FONT_SIZE, CELL, PADDING = 12, 16, 4


def printable(token: str) -> str:
    """An ASCII version of a token that the default font can draw."""
    token = token.replace("▁", "_").replace("ß", "ss") if token.strip() else "_"
    ascii_text = unicodedata.normalize("NFKD", token).encode("ascii", "ignore").decode()
    return ascii_text or "?"


def _font() -> ImageFont.ImageFont:
    return ImageFont.load_default(size=FONT_SIZE)


def _text_width(font: ImageFont.ImageFont, texts: Sequence[str]) -> int:
    return int(max([font.getlength(t) for t in texts] + [0])) + PADDING


def alignment_image(weights: Tensor, source: Sequence[str], target: Sequence[str]) -> Tensor:
    """A (target x source) heat map with the tokens written beside its rows and above its columns.

    Args:
        weights: (M, N) attention of each target token over the source tokens.
        source: the N source tokens; target: the M target tokens.

    Returns: (H, W, 3) uint8.
    """
    if weights.shape != (len(target), len(source)):
        raise ValueError(f"alignment_image: weights must have shape ({len(target)}, {len(source)}) "
                         f"(target, source tokens), got {tuple(weights.shape)}")
    font = _font()
    source, target = [printable(t) for t in source], [printable(t) for t in target]
    left, top = _text_width(font, target), _text_width(font, source)
    cells = heatmap(weights, min_side=1).repeat_interleave(CELL, 0).repeat_interleave(CELL, 1).numpy()
    canvas = Image.new("RGB", (left + cells.shape[1], top + cells.shape[0]), "white")
    canvas.paste(Image.fromarray(cells), (left, top))
    draw = ImageDraw.Draw(canvas)
    for row, token in enumerate(target):
        draw.text((2, top + row * CELL + 2), token, fill="black", font=font)
    labels = Image.new("RGB", (top, CELL * len(source)), "white")  # drawn across, then turned upright
    label_draw = ImageDraw.Draw(labels)
    for column, token in enumerate(source):
        label_draw.text((2, column * CELL + 2), token, fill="black", font=font)
    canvas.paste(labels.rotate(90, expand=True), (left, 0))
    return torch.from_numpy(np.asarray(canvas).copy())


def highlight_image(lines: Sequence[Sequence[tuple[str, float]]], title: str = "", width: int = 640) -> Tensor:
    """Words on a background whose redness is their weight (relative to the largest weight).

    Args:
        lines: lines of ``(token, weight)`` pairs (one line per sentence, or one line);
            long lines wrap at ``width`` pixels.
        title: a line of text above the words (labels, for instance).

    Returns: (H, W, 3) uint8.
    """
    font = _font()
    largest = max([w for line in lines for _, w in line] + [1e-12])
    boxes, x, y = [], PADDING, PADDING + (CELL + 2 if title else 0)
    for line in lines:
        for token, weight in line:
            text = printable(token)
            span = int(font.getlength(text)) + PADDING
            if x + span > width - PADDING and x > PADDING:
                x, y = PADDING, y + CELL + 2
            boxes.append((x, y, span, text, max(weight, 0.0) / largest))
            x += span + 2
        x, y = PADDING, y + CELL + 2
    canvas = Image.new("RGB", (width, y + PADDING), "white")
    draw = ImageDraw.Draw(canvas)
    draw.text((PADDING, PADDING), printable(title) if title else "", fill="black", font=font)
    for x, y, span, text, strength in boxes:
        fade = int(round(255 * (1 - 0.8 * strength)))
        draw.rectangle((x, y, x + span, y + CELL), fill=(255, fade, fade))
        draw.text((x + PADDING // 2, y + 2), text, fill="black", font=font)
    return torch.from_numpy(np.asarray(canvas).copy())
