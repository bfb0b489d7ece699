"""Text classification with an optional penalty on the attention rows; the evaluation's items are the tokens."""

from __future__ import annotations

import inspect
from typing import Any, Optional

from lightning.pytorch.utilities import rank_zero_warn
from torch import Tensor, nn

from framework.attention import AttentionBlock
from framework.attention.pooling import frobenius_penalty
from framework.errors import ConfigError
from framework.evaluation.protocol import ItemAttention, erase_tokens
from framework.tasks import Classification, call_model, inputs_of, split_batch
from framework.values import ClassCount, Fraction, NonNegativeFloat

from ..data.tokenization import PAD, tokens_of
from ..models.common import ClassifierOutput
from ..pictures import highlight_image
from .tokenizer import TokenizerState


def readout_blocks(model: nn.Module) -> tuple[str, ...]:
    """The blocks whose weights a text classifier reads out with: its pooling block (the
    Transformer's ``pooling``), its ``attention`` (self-attentive, HAN), or the last encoder
    layer's block (a [CLS] read-out); none for a model without attention."""
    for name in ("pooling", "attention"):
        if isinstance(getattr(model, name, None), AttentionBlock):
            return (name,)
    layers = getattr(getattr(model, "encoder", None), "layers", None)
    if layers is not None and len(layers) and isinstance(getattr(layers[-1], "attention", None), AttentionBlock):
        return (f"encoder.layers.{len(layers) - 1}.attention",)
    return ()


class TextClassification(TokenizerState, Classification):
    """Classification of texts (logs ``acc`` and macro ``f1``), with an optional penalty on
    the model's attention rows A (B, r, N) (Lin et al., ICLR 2017)::

        loss = cross_entropy(logits, y) + penalty * mean_batch ||A A^T - I||_F^2

    The penalty is logged as ``<stage>/penalty``. ``predict`` returns class names;
    ``images`` draws the words of the first example coloured by their attention weight.

    Args:
        num_classes: K (checked against the data's classes when a run starts).
        penalty: the coefficient of the Frobenius penalty (0 = none). The model must return
            attention rows with ``need_weights=True`` (``SelfAttentiveClassifier``); with its
            attention switched off (``--model.attention=none``) the penalty has nothing to act
            on and is skipped, as the run says when it starts.
        label_smoothing: as in ``torch.nn.functional.cross_entropy``.
    """

    logged = {"penalty": "min"}

    def __init__(
        self, num_classes: Optional[ClassCount] = None, penalty: NonNegativeFloat = 0.0, label_smoothing: Fraction = 0.0
    ) -> None:
        super().__init__(num_classes, label_smoothing)
        self.penalty = penalty

    def check(self, model: nn.Module, data: Any) -> None:
        """Beyond the base's sizes: ``num_classes`` is the number of the data's class names
        (``data.labels()``, named in the message: checked before the base's sizes), and a
        penalty has attention rows to act on."""
        labels = list(data.labels()) if callable(getattr(data, "labels", None)) else []
        if labels and len(labels) != self.num_classes:
            raise ConfigError(
                f"task.num_classes={self.num_classes} but {type(data).__name__} has {len(labels)} classes "
                f"({', '.join(labels[:8])}{' ...' if len(labels) > 8 else ''})"
            )
        super().check(model, data)
        rows = getattr(model, "returns_attention_rows", None)
        if self.penalty and rows is None:
            raise ConfigError(
                f"task.penalty={self.penalty} needs a model that returns attention rows (B, r, N) with "
                f"need_weights=True (SelfAttentiveClassifier); {type(model).__name__} does not: set "
                "task.penalty=0"
            )
        if self.penalty and not rows:
            rank_zero_warn(
                f"task.penalty={self.penalty} is skipped: the model's attention is off, so it has no "
                "attention rows to penalise"
            )

    def run_model(self, model: nn.Module, inputs: Any) -> Any:
        """Logits, or with the penalty on a :class:`ClassifierOutput` that carries the attention rows."""
        if not self.penalty or getattr(model, "returns_attention_rows", True) is False:
            return call_model(model, inputs)
        output = call_model(model, {**inputs, "need_weights": True})
        if getattr(output, "attention", None) is None:
            raise ConfigError(
                f"task.penalty={self.penalty} needs a model that returns attention rows (B, r, N) with "
                f"need_weights=True (SelfAttentiveClassifier); {type(model).__name__} does not"
            )
        return output

    def losses(self, output: Any, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        loss, logs = super().losses(self.preds(output), target)
        if isinstance(output, ClassifierOutput):
            penalty = frobenius_penalty(output.attention)
            return loss + self.penalty * penalty, {"penalty": penalty.detach()}
        return loss, logs

    def preds(self, output: Any) -> Tensor:
        return output.logits if isinstance(output, ClassifierOutput) else output

    def _name(self, index: int) -> str:
        return self.labels[index] if index < len(self.labels) else str(index)

    def predict(self, model: nn.Module, batch: Any) -> list[str]:
        """The predicted class name of every text."""
        logits = call_model(model, inputs_of(batch))
        return [self._name(i) for i in logits.argmax(-1).tolist()]

    def write_predictions(self, prediction: list[str], batch: Any, sink: Any) -> None:
        """``predictions.csv``: the index of each text in the split and its predicted class name."""
        sink.rows("predictions.csv", ["example", "class"], zip(sink.take(len(prediction)), prediction))

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        """``word_attention``: the first example's words, coloured by their weight in the read-out."""
        if self.tokenizer is None:
            return {}
        inputs, target = split_batch(batch)
        first = {key: value[:1] for key, value in inputs.items()}
        output = call_model(model, {**first, "need_weights": True})
        tokens, weights = first["tokens"][0], output.token_weights[0]
        rows = [(tokens, weights)] if tokens.dim() == 1 else list(zip(tokens, weights))
        lines = [list(zip(tokens_of(self.tokenizer, ids.tolist()), w.tolist())) for ids, w in rows]
        title = (
            f"first validation text, the read-out's weight of each word: true {self._name(int(target[0]))}, "
            f"predicted {self._name(int(output.logits[0].argmax()))}"
        )
        return {"word_attention": [highlight_image([line for line in lines if line], title)]}

    # Evaluation hooks: the items are the tokens (the words of a document's sentences for HAN).

    def item_attention(self, model: nn.Module, batch: Any) -> Optional[ItemAttention]:
        """The token weights of the read-out (``ClassifierOutput.token_weights``; in HAN word x
        sentence weight), flattened over sentences; None for a model without attention."""
        blocks = readout_blocks(model)
        if not blocks or "need_weights" not in inspect.signature(model.forward).parameters:
            return None
        inputs, _ = self.split(batch)
        weights = getattr(call_model(model, {**inputs, "need_weights": True}), "token_weights", None)
        if weights is None:
            return None
        mask = inputs["mask"].bool()
        return ItemAttention(weights.flatten(1).float(), mask.flatten(1), blocks)

    def erase_items(self, batch: Any, erased: Tensor) -> Optional[Any]:
        """The tokens ``erased`` (B, N), or (B, S W) for sentences of words, cut out of their sequence."""
        tokens, mask = erase_tokens(batch["tokens"], batch["mask"], erased, PAD)
        return {**batch, "tokens": tokens, "mask": mask}

    def item_layer(self, model: nn.Module) -> Optional[nn.Module]:
        """The token embedding."""
        return getattr(model, "embed", None)
