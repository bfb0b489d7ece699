"""Text classification by capsules (Wang et al., WWW 2018): a probability loss and a reconstruction loss."""

from __future__ import annotations

from typing import Any, Literal, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from framework.attention.pooling.capsule import capsule_losses
from framework.errors import ConfigError
from framework.tasks import call_model
from framework.values import ClassCount, NonNegativeFloat

from ..models.char_word import CapsuleOutput
from .classification import TextClassification

#: The probability loss of the capsules (``task.loss``).
Loss = Literal["bce", "hinge"]


class CapsuleClassification(TextClassification):
    """Text classification by capsules (Wang et al., WWW 2018), trained with a joint loss::

        loss = P + reconstruction * U
        P = mean_c BCE(p_c, [c = y])                       (``loss: bce``, the default)
          or max(0, 1 - p_y + sum_{c != y} p_c)             (``loss: hinge``, Wang et al.'s J)
        U = max(0, 1 - fbar . r_y + sum_{c != y} fbar . r_c)  (framework.attention.pooling.capsule.capsule_losses)

    The model is called with ``capsules=True`` and returns the capsules' probabilities p,
    reconstructions r and the average fbar of the states they attended
    (``domains.nlp.models.char_word.CapsuleOutput``); the predicted class is the capsule with
    the highest p. With six classes the hinge J has a dead point, every p near 0 (J = 1 and
    sigmoids without gradient), which TREC training reaches within an epoch; the one-vs-rest
    cross-entropy of each capsule's p has none. ``P`` and ``U`` are logged as
    ``<stage>/probability_loss`` and ``<stage>/reconstruction_loss``.

    Args:
        num_classes: K, one capsule each.
        loss: the probability loss, ``bce`` or ``hinge``.
        reconstruction: the weight of U (0 = the probability loss alone).
    """

    logged = {"probability_loss": "min", "reconstruction_loss": "min"}

    def __init__(
        self, num_classes: Optional[ClassCount] = None, loss: Loss = "bce", reconstruction: NonNegativeFloat = 0.1
    ) -> None:
        super().__init__(num_classes)
        self.loss, self.reconstruction = loss, reconstruction

    def check(self, model: nn.Module, data: Any) -> None:
        super().check(model, data)
        if getattr(model, "readout", None) != "capsule":
            raise ConfigError(
                f"domains.nlp.CapsuleClassification trains capsules: the model must read out with them "
                f"(domains.nlp.CharacterWordClassifier with model.attention=capsule); {type(model).__name__} "
                f"reads out with {getattr(model, 'readout', 'something else')!r}"
            )

    def run_model(self, model: nn.Module, inputs: Any) -> Any:
        return call_model(model, {**inputs, "capsules": True})

    def preds(self, output: Any) -> Tensor:
        return output.probabilities if isinstance(output, CapsuleOutput) else super().preds(output)

    def losses(self, output: Any, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        hinge, reconstruction = capsule_losses(output.probabilities, output.reconstructions, output.summary, target)
        if self.loss == "bce":
            truth = F.one_hot(target, output.probabilities.shape[-1]).float()
            # in float32 outside mixed precision: CUDA's autocast refuses binary_cross_entropy on probabilities
            with torch.autocast(output.probabilities.device.type, enabled=False):
                probability = F.binary_cross_entropy(output.probabilities.float(), truth)
        else:
            probability = hinge
        logs = {"probability_loss": probability.detach(), "reconstruction_loss": reconstruction.detach()}
        return probability + self.reconstruction * reconstruction, logs
