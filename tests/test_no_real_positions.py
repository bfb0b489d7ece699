"""The class of "no real positions", for the losses and reductions over positions: a batch whose
every target is ignored or padded (a row of padding, a label map of void pixels, users with one
training item) gives a finite loss of 0 and a zero gradient, where the mean reductions of torch
give NaN; with some real positions, the loss is torch's mean over them. The attention blocks are
held to the same in ``tests/attention/test_fully_masked.py``.

:data:`LOSSES` lists every loss of ``framework/`` and ``domains/`` that takes a mask or an ignored
target: for each, a function of the scores and of the targets (or mask) and what torch's own mean
gives where the mean is defined.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from domains.audio import SequenceRecognition
from domains.nlp import Ordering, Translation
from domains.recommender import losses as recommender_losses
from domains.vision import Segmentation
from framework.layers import masked_mean, mean_over
from framework.tasks import Classification
from framework.tasks.attention_training import attention_decoupling_loss, attention_supervision_loss

B, N, C = 3, 4, 5


def _tokens(task_losses: Callable, ignore: int) -> tuple[Callable, Callable]:
    """A token loss over (B, N, C) logits and (B, N) targets, and torch's mean over the real ones."""
    return (
        lambda scores, real: task_losses(scores, torch.randint(3, C, (B, N)).masked_fill(~real, ignore))[0],
        lambda scores, real: F.cross_entropy(scores[real], torch.randint(3, C, (B, N))[real]),
    )


def _labels(task_losses: Callable, ignore: int) -> tuple[Callable, Callable]:
    """A loss over (B, C) logits and (B,) labels (one position per example)."""
    return (
        lambda scores, real: task_losses(scores[:, 0], torch.randint(0, C, (B,)).masked_fill(~real[:, 0], ignore))[0],
        lambda scores, real: F.cross_entropy(scores[:, 0][real[:, 0]], torch.randint(0, C, (B,))[real[:, 0]]),
    )


def _pixels(task: Segmentation) -> tuple[Callable, Callable]:
    """Segmentation's cross-entropy over (B, C, H, W) logits (here H = N, W = 1), void 255."""
    maps = lambda scores: scores.permute(0, 2, 1).unsqueeze(-1)
    return (
        lambda scores, real: task.losses(
            maps(scores), torch.randint(0, C, (B, N, 1)).masked_fill(~real[..., None], 255)
        )[0],
        lambda scores, real: F.cross_entropy(scores[real], torch.randint(0, C, (B, N, 1))[..., 0][real]),
    )


def _positions(loss: Callable) -> tuple[Callable, Callable]:
    """A recommender loss over the M real positions of a batch, picked from (B, N, C) scores."""

    def picked(scores: Tensor, real: Tensor) -> Tensor:
        chosen = scores[real]  # (M, C): column 0 the target's score, the others its negatives
        return loss(chosen[:, 0], chosen[:, 1:], torch.zeros_like(chosen[:, 1:], dtype=torch.bool))

    return picked, None


def _seeded(make: Callable[[], tuple[Callable, Callable]]) -> tuple[Callable, Callable]:
    """Both functions of a case draw the same random targets."""
    loss, reference = make()

    def again(function: Callable) -> Callable:
        def call(scores: Tensor, real: Tensor) -> Tensor:
            torch.manual_seed(1)
            return function(scores, real)

        return call

    return again(loss), None if reference is None else again(reference)


LOSSES: dict[str, Callable[[], tuple[Callable, Callable]]] = {
    "Classification (ignore_index)": lambda: _labels(Classification(num_classes=C).losses, -100),
    "Segmentation (void pixels)": lambda: _pixels(Segmentation(num_classes=C, aux_weight=0.0)),
    "Translation (padding)": lambda: _tokens(Translation().losses, 0),
    "SequenceRecognition (padding)": lambda: _tokens(SequenceRecognition(vocab_size=C).losses, 0),
    "Ordering (steps past the list)": lambda: (
        lambda scores, real: Ordering().losses(
            scores.log_softmax(-1), torch.randint(0, C, (B, N)).masked_fill(~real, -100)
        )[0],
        lambda scores, real: F.nll_loss(scores.log_softmax(-1)[real], torch.randint(0, C, (B, N))[real]),
    ),
    "recommender bce": lambda: _positions(recommender_losses.bce),
    "recommender sampled_softmax": lambda: _positions(recommender_losses.sampled_softmax),
    "recommender softmax": lambda: (
        lambda scores, real: recommender_losses.full_softmax(
            scores[real], torch.zeros(int(real.sum()), dtype=torch.long)
        ),
        lambda scores, real: F.cross_entropy(scores[real], torch.zeros(int(real.sum()), dtype=torch.long)),
    ),
    "attention supervision": lambda: (
        lambda scores, real: attention_supervision_loss(scores.softmax(-1), real[..., None].expand(-1, -1, C)),
        None,
    ),
    "attention decoupling": lambda: (
        lambda scores, real: attention_decoupling_loss(scores.softmax(-1), real[..., None].expand(-1, -1, C)),
        None,
    ),
    "masked_mean": lambda: (lambda scores, real: masked_mean(scores, real).sum(), None),
    "mean_over": lambda: (
        lambda scores, real: mean_over(scores.square().sum(-1), real),
        lambda scores, real: scores.square().sum(-1)[real].mean(),
    ),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_no_real_position_gives_zero_and_no_gradient(name):
    loss, _ = _seeded(LOSSES[name])
    scores = torch.randn(B, N, C, requires_grad=True)
    value = loss(scores, torch.zeros(B, N, dtype=torch.bool))
    value.backward()
    assert torch.isfinite(value) and value == 0, f"{name}: {value}"
    assert scores.grad is None or not scores.grad.any(), f"{name}: a gradient reached padding"


@pytest.mark.parametrize("name", [name for name in LOSSES if LOSSES[name]()[1] is not None])
def test_with_real_positions_the_loss_is_torchs_mean_over_them(name):
    loss, reference = _seeded(LOSSES[name])
    scores = torch.randn(B, N, C)
    real = torch.rand(B, N) < 0.6
    real[0, 0] = True
    torch.testing.assert_close(loss(scores, real), reference(scores, real))
