"""Sequence-to-sequence translation: teacher forcing in training, decoded outputs judged by BLEU and exact match."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.text import Perplexity, SacreBLEUScore

from framework.attention import capture
from framework.errors import ConfigError
from framework.evaluation.protocol import GoldView
from framework.tasks.attention_training import AttentionTraining
from framework.tasks import Task

from ..data.tokenization import EOS, PAD, token_names
from ..decoding import beam_search, greedy_decode
from ..metrics import ExactMatch, TokenAccuracy
from ..models.seq2seq import teacher_inputs
from ..pictures import alignment_image
from .tokenizer import TokenizerState

DECODINGS = ("greedy", "beam")


class Supervised(NamedTuple):
    """A translation model's logits with the alignment it attended with and the gold it is
    trained towards or away from (``task.attention_supervision``, ``task.decouple_attention``)."""

    logits: Tensor
    alignment: Tensor
    gold: Tensor
    keys: Tensor
    evidence: Tensor


class Translation(AttentionTraining, TokenizerState, Task):
    """Train a sequence-to-sequence model with teacher forcing; judge it by what it decodes.

    Every stage logs the loss (token cross-entropy, ``<pad>`` ignored), ``token_acc``
    (next-token accuracy under teacher forcing) and ``ppl`` (perplexity). Validation and
    test also decode each source (greedy, or beam search with ``beam_size``) and log
    ``bleu`` (corpus BLEU of the detokenised outputs against the raw references,
    sacreBLEU's 13a tokenisation, in [0, 1]) and ``exact`` (exact match of the strings).
    ``predict`` returns the decoded strings; ``images`` the alignment of the first
    validation example (target x source tokens) from the model's attention.

    BLEU and exact match are corpus metrics (:meth:`generation_metrics`): each batch's decoded
    outputs (:meth:`decode`) add their statistics to the stage's, which are logged at the end of
    the epoch.

    Args:
        decoding: ``greedy`` or ``beam``. beam_size: K. length_penalty: GNMT's alpha.
        max_length: output tokens at most.
        label_smoothing: as in ``torch.nn.functional.cross_entropy``.
        monitor: the validation metric that picks the best checkpoint (``val/bleu``,
            ``val/exact``, ``val/loss`` ...).
        attention_supervision: weight lambda of supervised attention (Liu et al., COLING 2016):
            the loss adds lambda x the cross-entropy of the model's alignment (the last layer's
            cross-attention, heads averaged, for the Transformer) against the gold alignment
            vectors of data that has them (``DateNormalization``): uniform over an output
            token's sure links, or its possible ones when it has no sure link. Logged as
            ``<stage>/attention_loss``. 0 = off.
        decouple_attention: weight mu of the decoupled family: the loss adds mu x -log(1 - m),
            m the alignment's mass on all the source tokens an output token is linked to, sure or
            possible (the whole field it comes from), logged as ``<stage>/decoupling_loss``. 0 = off.
        random_attention: every attention block's weights drawn at random, in training and at test.
        (:mod:`framework.tasks.attention_training` says what the three families are for.)

    Evaluation (``python -m framework evaluate``): on data with gold alignments, the alignment
    error rate and attention correctness of the model's alignment, and for a Transformer of
    every decoder layer and head (:meth:`gold_views`).
    """

    def __init__(self, decoding: str = "greedy", beam_size: int = 4, length_penalty: float = 0.0, max_length: int = 64,
                 label_smoothing: float = 0.0, monitor: str = "val/bleu", attention_supervision: float = 0.0,
                 decouple_attention: float = 0.0, random_attention: bool = False) -> None:
        super().__init__()
        self.attention_options(attention_supervision, decouple_attention, random_attention)
        if decoding not in DECODINGS:
            raise ConfigError(f"task.decoding must be one of {', '.join(DECODINGS)}, got {decoding!r}")
        if beam_size < 1 or max_length < 1:
            raise ConfigError(f"task.beam_size and task.max_length must be at least 1, got {beam_size} and {max_length}")
        self.decoding, self.beam_size, self.length_penalty = decoding, beam_size, length_penalty
        self.max_length, self.label_smoothing = max_length, label_smoothing
        self.monitor, self.mode = monitor, "min" if monitor.endswith(("loss", "ppl")) else "max"

    def metrics(self) -> MetricCollection:
        return MetricCollection({"token_acc": TokenAccuracy(PAD), "ppl": Perplexity(ignore_index=PAD)})

    def generation_metrics(self) -> MetricCollection:
        return MetricCollection({"bleu": SacreBLEUScore(tokenize="13a"), "exact": ExactMatch()})

    def decode(self, model: nn.Module, batch: Any) -> tuple[list[str], list[list[str]]]:
        """The decoded strings of a batch's sources and each one's reference (a list of one, as
        BLEU takes references)."""
        return self.translate(model, batch["tokens"], batch["mask"]), [[r] for r in batch["references"]]

    def split(self, batch: Any) -> tuple[Any, Tensor]:
        return batch, batch["target"]

    def check(self, model: nn.Module, data: Any) -> None:
        """Beyond the base's sizes: the attention losses need data with gold alignments; random
        attention is set on the model."""
        super().check(model, data)
        if self.trains_on_gold and not getattr(data, "gold_alignments", False):
            raise ConfigError(f"{self.gold_options()} needs data with gold alignments (domains.nlp.DateNormalization); "
                              f"{type(data).__name__} has none: set them to 0")
        self.randomise(model)

    def run_model(self, model: nn.Module, batch: Any) -> Any:
        """Next-token logits (B, M, V) under teacher forcing; with an attention loss a
        :class:`Supervised` that also carries the alignment and its gold (the attention losses)."""
        if not (self.trains_on_gold and "alignment" in batch):
            return model(batch["tokens"], batch["mask"], teacher_inputs(batch["target"]))
        output = model(batch["tokens"], batch["mask"], teacher_inputs(batch["target"]), need_weights=True)
        if output.alignment is None:
            raise ConfigError(f"{self.gold_options()} needs a model with attention; {type(model).__name__}'s attention "
                              "is off")
        links = batch["alignment"]
        gold = torch.where((links == 2).any(-1, keepdim=True), links == 2, links >= 1)
        return Supervised(output.logits, output.alignment, gold, batch["mask"].bool().unsqueeze(1), links >= 1)

    def preds(self, output: Any) -> Tensor:
        return output.logits if isinstance(output, Supervised) else output

    def losses(self, output: Any, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        logits = self.preds(output)
        loss = F.cross_entropy(logits.transpose(1, 2), target, ignore_index=PAD, label_smoothing=self.label_smoothing)
        if not isinstance(output, Supervised):
            return loss, {}
        extra, logs = self.gold_losses(output.alignment.float(), output.gold, output.keys, output.evidence)
        return loss + extra, logs

    def gold_views(self, model: nn.Module, batch: Any) -> list[GoldView]:
        """The model's attention against the batch's gold alignment (data such as the dates):
        the alignment the model returns (``alignment``) and, per decoder layer of cross
        attention, each head and their mean (``layer<l>/head<h>``, ``layer<l>/mean``)."""
        if "alignment" not in batch:
            return []
        links = batch["alignment"]
        sure, possible = links == 2, links >= 1
        keys, queries = batch["mask"].bool().unsqueeze(1), possible.any(-1)
        inputs = teacher_inputs(batch["target"])
        cross = [name for name, m in model.named_modules() if getattr(m, "block_name", None) and name.endswith("cross_attention")]
        with capture(model, *cross) if cross else nullcontext() as maps:
            output = model(batch["tokens"], batch["mask"], inputs, need_weights=True)
        views = []
        for layer, name in enumerate(cross):
            records = maps.get(name) if maps is not None else None
            if not records or not isinstance(records[0].weights, Tensor) or records[0].weights.dim() != 4:
                continue
            weights = records[0].weights.float()  # (B, heads, M, N)
            for head in range(weights.shape[1]):
                views.append(GoldView(f"layer{layer}/head{head}", weights[:, head], sure, keys, queries, possible))
            views.append(GoldView(f"layer{layer}/mean", weights.mean(1), sure, keys, queries, possible))
        if not views and output.alignment is not None:
            views.append(GoldView("alignment", output.alignment.float(), sure, keys, queries, possible))
        return views

    def generate(self, model: nn.Module, tokens: Tensor, mask: Tensor) -> Tensor:
        """Output ids (B, L) by the configured decoding."""
        if self.decoding == "greedy":
            return greedy_decode(model, tokens, mask, self.max_length)
        return beam_search(model, tokens, mask, self.beam_size, self.max_length, self.length_penalty)[0]

    def translate(self, model: nn.Module, tokens: Tensor, mask: Tensor) -> list[str]:
        """Decoded strings of a batch of sources."""
        tokenizer = self.require_tokenizer()
        outputs = self.generate(model, tokens, mask).tolist()
        return tokenizer.decode_batch([row[: row.index(EOS)] if EOS in row else row for row in outputs])

    def predict(self, model: nn.Module, batch: Any) -> list[str]:
        return self.translate(model, batch["tokens"], batch["mask"])

    def write_predictions(self, prediction: list[str], batch: Any, sink: Any) -> None:
        """``translations.txt``: one decoded output per line, in the order of the sources."""
        sink.take(len(prediction))
        sink.lines("translations.txt", prediction)

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        """``alignment``: attention of the first example's decoded tokens over its source tokens."""
        if self.tokenizer is None:
            return {}
        tokens, mask = batch["tokens"][:1], batch["mask"][:1]
        output = self.generate(model, tokens, mask)[0].tolist()
        output = output[: output.index(EOS) + 1] if EOS in output else output
        decoded = tokens.new_tensor(output).unsqueeze(0)
        alignment = model(tokens, mask, teacher_inputs(decoded), need_weights=True).alignment
        if alignment is None:
            return {}
        source, target = token_names(self.tokenizer, tokens[0][mask[0]].tolist()), token_names(self.tokenizer, output)
        return {"alignment": [alignment_image(alignment[0, :, : len(source)], source, target,
                                              "first validation example: attention of each decoded token")]}
