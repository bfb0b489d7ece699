"""The drawing kit: every picture is a CPU uint8 image, whatever the device of its inputs."""

from __future__ import annotations

import torch

from framework.pictures import ANCHORS, as_rgb, bars, colour_mask, heatmap, marks, overlay, side_by_side, stacked

PALETTE = (ANCHORS * 255).round().to(torch.uint8)


def _is_picture(image: torch.Tensor, shape: tuple[int, int]) -> None:
    assert image.device.type == "cpu" and image.dtype == torch.uint8 and image.shape == (*shape, 3)


def test_heatmap_scales_colours_and_enlarges(device):
    image = heatmap(torch.tensor([[2.0, 6.0], [4.0, 3.0]], device=device), min_side=8)
    _is_picture(image, (8, 8))
    assert image[0, 0].tolist() == PALETTE[0].tolist(), "the minimum takes the first colour"
    assert image[0, 7].tolist() == PALETTE[-1].tolist(), "the maximum takes the last colour"
    assert image[7, 0].tolist() == PALETTE[2].tolist(), "the midpoint takes the middle colour"
    assert (image[:4, :4] == image[0, 0]).all() and (image[4:, 4:] == image[7, 7]).all(), "each value fills a 4x4 block"
    assert heatmap(torch.zeros(3, 5, device=device)).shape[:2] == (128 // 3 * 3 + 3, (128 // 3 + 1) * 5)


def test_panels_pad_white_and_keep_their_pixels(device):
    red = torch.tensor([255, 0, 0], dtype=torch.uint8, device=device).expand(2, 3, 3)
    blue = torch.tensor([0, 0, 255], dtype=torch.uint8, device=device).expand(4, 1, 3)
    across = side_by_side(red, blue, gap=1)
    _is_picture(across, (4, 5))
    assert (across[:2, :3] == red.cpu()).all() and (across[2:, :3] == 255).all() and (across[:, 3] == 255).all()
    assert (across[:, 4] == blue[:, 0].cpu()).all()
    down = stacked(red, blue, gap=1)
    _is_picture(down, (7, 3))
    assert (down[3:, 0] == blue[:, 0].cpu()).all() and (down[3:, 1:] == 255).all() and (down[2] == 255).all()


def test_bars_and_marks_draw_values_and_flags(device):
    strip = bars(torch.tensor([0.0, 0.5, 1.0], device=device), column_width=2, height=4, rgb=(9, 8, 7))
    _is_picture(strip, (4, 6))
    lit = (strip == torch.tensor([9, 8, 7], dtype=torch.uint8)).all(-1)
    assert lit.sum(0).tolist() == [0, 0, 2, 2, 4, 4] and lit[-1, 2] and not lit[0, 2], "bars grow from the bottom"
    flags = marks(torch.tensor([True, False], device=device), column_width=3, height=2, rgb=(1, 2, 3))
    _is_picture(flags, (2, 6))
    assert (flags[:, :3] == torch.tensor([1, 2, 3], dtype=torch.uint8)).all() and (flags[:, 3:] == 255).all()


def test_masks_images_and_overlays(device):
    colours = torch.tensor([[0, 0, 0], [10, 20, 30]], dtype=torch.uint8, device=device)
    mask = colour_mask(torch.tensor([[0, 1], [255, 1]], device=device), colours, ignore_index=255)
    _is_picture(mask, (2, 2))
    assert mask[0, 1].tolist() == [10, 20, 30] and mask[1, 0].tolist() == [128, 128, 128]
    rgb = as_rgb(torch.tensor([[[0.0, 1.0], [2.0, 4.0]]], device=device))
    _is_picture(rgb, (2, 2))
    assert rgb[..., 0].tolist() == [[0, 64], [128, 255]] and (rgb[..., 0] == rgb[..., 2]).all()
    weights = torch.zeros(2, 2, device=device)
    weights[1, 1] = 1.0
    drawn = overlay(torch.zeros(8, 8, 3, dtype=torch.uint8, device=device), weights, (2, 2))
    _is_picture(drawn, (8, 18))
    assert drawn[2, 2].tolist() == [255, 255, 255] and drawn[2, 12].tolist() == [255, 255, 255], "the query is marked"
    assert drawn[7, 17].tolist() == PALETTE[-1].tolist() and drawn[7, 10].tolist() == PALETTE[0].tolist()
