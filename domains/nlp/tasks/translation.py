"""Sequence-to-sequence translation: teacher forcing in training, decoded outputs judged by BLEU and exact match."""

from __future__ import annotations

import math
from typing import Any, Literal, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.text import Perplexity, SacreBLEUScore

from framework.attention import blocks_in, capture
from framework.evaluation.protocol import GoldView, ItemAttention, ItemForward, Watched, erase_tokens, replaying
from framework.layers import counted_mean
from framework.tasks import Task
from framework.tasks.attention_training import AttentionTraining
from framework.values import Fraction, NonNegativeFloat, PositiveInt

from ..data.tokenization import EOS, PAD, token_names
from ..decoding import beam_search, greedy_decode
from ..metrics import ExactMatch, TokenAccuracy
from ..models.seq2seq import Seq2SeqOutput, teacher_inputs
from ..pictures import alignment_image
from .tokenizer import TokenizerState

#: How outputs are decoded (``task.decoding``).
Decoding = Literal["greedy", "beam"]

#: The decision's log p is kept at or below log(1 - SATURATED) in its second logit, log(1 - p), which is then finite.
SATURATED = 1e-6


def cross_blocks(model: nn.Module) -> list[str]:
    """The names of a model's cross-attention blocks, one per decoder layer (the Transformer's
    ``decoder.<l>.cross_attention``; none in the recurrent models)."""
    return [name for name in blocks_in(model) if name.endswith("cross_attention")]


def alignment_blocks(model: nn.Module) -> tuple[str, ...]:
    """The block the model's alignment (``Seq2SeqOutput.alignment``) comes from: the last decoder
    layer's cross attention, or the recurrent decoder's ``attention``; none without attention."""
    cross = cross_blocks(model)
    if cross:
        return (cross[-1],)
    return ("attention",) if "attention" in blocks_in(model) else ()


def source_weights(alignment: Tensor, target: Tensor, mask: Tensor) -> Tensor:
    """The weights (B, N) of the source tokens in the whole output: the alignment (B, M, N)
    averaged over the reference's M positions (``target`` (B, M) not ``<pad>``), renormalised
    over the valid source tokens (``mask`` (B, N))::

        w_n = sum_t a_tn / sum_{n' valid} sum_t a_tn'    (t over the reference tokens, </s> included)

    (the mean's 1 / M cancels in the renormalisation; rows of a that sum to 1 need none).
    """
    summed = (alignment.float() * target.ne(PAD).unsqueeze(-1)).sum(1) * mask
    return summed / summed.sum(-1, keepdim=True).clamp(min=torch.finfo(summed.dtype).tiny)


def reference_decision(logits: Tensor, target: Tensor) -> Tensor:
    """The decision (B, 2) that the faithfulness tests perturb, from the next-token logits
    (B, M, V) of the reference ``target`` (B, M) under teacher forcing: "the model gives the
    reference" against "it does not", with the logits [log p, log(1 - p)], so that their
    softmax is (p, 1 - p), where

        log p = mean_t log p(y_t | y_<t, x)     (t over the reference tokens, </s> included)

    is the mean log-probability of the reference's tokens (p its per-token geometric mean
    probability, 1 / the reference's perplexity). log(1 - p) reads log p clamped at
    log(1 - :data:`SATURATED`), so that a saturated p keeps a finite second logit and gradient.
    """
    valid = target.ne(PAD)
    log_p = logits.float().log_softmax(-1).gather(-1, target.unsqueeze(-1)).squeeze(-1).masked_fill(~valid, 0.0)
    mean = log_p.sum(-1) / valid.sum(-1).clamp(min=1)
    return torch.stack([mean, torch.log(-torch.expm1(mean.clamp(max=math.log1p(-SATURATED))))], -1)


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
        decoding: ``greedy`` or ``beam``. beam_size: K. length_penalty: GNMT's alpha (0: none).
        max_length: output tokens at most.
        label_smoothing: as in ``torch.nn.functional.cross_entropy``.
        monitor: the validation metric that picks the best checkpoint (``val/bleu``,
            ``val/exact``, ``val/loss`` ...).
        attention_supervision: weight lambda of supervised attention (Liu et al., COLING 2016):
            the loss adds lambda x the cross-entropy of the model's alignment (the last layer's
            cross-attention, heads averaged, for the Transformer: the trained one of
            :meth:`gold_views`) against the gold alignment vectors of data that has them
            (``DateNormalization``): uniform over an output token's sure links, or its possible
            ones when it has no sure link. Logged as ``<stage>/attention_loss``. 0 = off.
        decouple_attention: weight mu of the decoupled family: the loss adds mu x -log(1 - m),
            m the alignment's mass on all the source tokens an output token is linked to, sure or
            possible (the whole field it comes from), logged as ``<stage>/decoupling_loss``. 0 = off.
        random_attention: every attention block's weights drawn at random, in training and at test.
        (:mod:`framework.tasks.attention_training` says what the three families are for.)

    Evaluation (``python -m framework evaluate``): on data with gold alignments, the alignment
    error rate and attention correctness of the model's alignment, and for a Transformer of
    every decoder layer and head (:meth:`gold_views`). The faithfulness tests (permutation,
    erasure, attributions, ERASER, Captum's infidelity and sensitivity) take the source tokens
    as the items, weighed by the alignment averaged over the reference's tokens
    (:meth:`item_attention`), and as the decision whether the model gives the reference
    (:meth:`decision`).
    """

    gold_data = "data with gold alignments (domains.nlp.DateNormalization)"

    def __init__(
        self,
        decoding: Decoding = "greedy",
        beam_size: PositiveInt = 4,
        length_penalty: NonNegativeFloat = 0.0,
        max_length: PositiveInt = 64,
        label_smoothing: Fraction = 0.0,
        monitor: str = "val/bleu",
        attention_supervision: NonNegativeFloat = 0.0,
        decouple_attention: NonNegativeFloat = 0.0,
        random_attention: bool = False,
    ) -> None:
        super().__init__()
        self.attention_options(attention_supervision, decouple_attention, random_attention)
        self.decoding, self.beam_size, self.length_penalty = decoding, beam_size, length_penalty
        self.max_length, self.label_smoothing = max_length, label_smoothing
        self.monitor = monitor

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

    def run_model(self, model: nn.Module, batch: Any) -> Tensor:
        """Next-token logits (B, M, V) under teacher forcing."""
        return model(batch["tokens"], batch["mask"], teacher_inputs(batch["target"]))

    def preds(self, output: Any) -> Tensor:
        """The next-token logits (B, M, V), also of a :class:`Seq2SeqOutput` (:meth:`watch`'s)."""
        return output.logits if isinstance(output, Seq2SeqOutput) else output

    def losses(self, output: Any, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        logits = self.preds(output)
        return counted_mean(
            F.cross_entropy, logits.transpose(1, 2), target, PAD, label_smoothing=self.label_smoothing
        ), {}

    def watch(self, model: nn.Module, batch: Any, detach: bool = True) -> Watched:
        """The pass that :meth:`gold_views` reads: the model's :class:`Seq2SeqOutput` under teacher
        forcing (logits and alignment), its cross-attention blocks captured (every block where
        it has none: the recurrent models)."""
        with capture(model, *cross_blocks(model), detach=detach) as maps:
            output = model(batch["tokens"], batch["mask"], teacher_inputs(batch["target"]), need_weights=True)
        return Watched(output, maps)

    def gold_views(self, model: nn.Module, batch: Any, watched: Optional[Watched] = None) -> list[GoldView]:
        """The model's attention against the batch's gold alignment (data such as the dates):
        the alignment the model returns (``alignment``) or, per decoder layer of cross
        attention, each head and their mean (``layer<l>/head<h>``, ``layer<l>/mean``). The
        model's alignment is the trained view: ``alignment``, or the last layer's mean."""
        if "alignment" not in batch:
            return []
        links = batch["alignment"]
        sure, possible = links == 2, links >= 1
        keys, queries = batch["mask"].bool().unsqueeze(1), possible.any(-1)
        output, maps = watched or self.watch(model, batch)
        views, source = [], (batch["mask"].shape[1],)
        for layer, name in enumerate(cross_blocks(model)):
            records = maps.get(name)  # weights (B, heads, M, N) over the source tokens (not over areas, say)
            if not records or records[0].keys != source or not isinstance(records[0].weights, Tensor):
                continue
            if records[0].weights.dim() != 4:
                continue
            weights = records[0].weights.float()  # (B, heads, M, N)
            for head in range(weights.shape[1]):
                views.append(GoldView(f"layer{layer}/head{head}", weights[:, head], sure, keys, queries, possible))
            views.append(GoldView(f"layer{layer}/mean", weights.mean(1), sure, keys, queries, possible))
        if views:
            return views[:-1] + [views[-1]._replace(trained=True)]
        if output.alignment is None:
            return []
        return [GoldView("alignment", output.alignment.float(), sure, keys, queries, possible, trained=True)]

    # Evaluation hooks: the items are the source tokens, the decision whether the model gives the reference.

    def decision(self, model: nn.Module, batch: Any) -> Tensor:
        """The logits (B, 2) of "the model gives the reference" against "it does not"
        (:func:`reference_decision`: softmax (p, 1 - p), p the reference's per-token geometric
        mean probability under teacher forcing).

        The tests take a decision as one distribution over K classes per example, while a
        translation makes M decisions over the vocabulary; the item attention summarises all M
        (:meth:`item_attention`), so the decision summarises them too, through the quantity the
        model is trained on (exp of minus its token cross-entropy, length-normalised so that
        examples of any length weigh alike). The decision "flips" when p crosses 1/2 (mean token
        log-probability -log 2); ERASER and the attributions follow p (:meth:`explained_class`).
        """
        target = batch["target"]
        return reference_decision(model(batch["tokens"], batch["mask"], teacher_inputs(target)), target)

    def explained_class(self, decision: Tensor) -> Tensor:
        """(B,) zeros: the reference's class, whatever the model predicts. Its probability p is
        what the source explains; "not the reference" (1 - p) is no decision of the model's, and a
        model that gives few references (p < 1/2: any model early in training) would otherwise
        have ERASER's comprehensiveness measured on 1 - p, with its sign turned: erasing the
        source tokens the model reads lowers p, and so raises 1 - p."""
        return torch.zeros(len(decision), dtype=torch.long, device=decision.device)

    def item_attention(self, model: nn.Module, batch: Any) -> Optional[ItemAttention]:
        """The source tokens' weights (B, N) in the whole reference: the model's alignment
        (``Seq2SeqOutput.alignment`` (B, M, N) under teacher forcing: the recurrent decoder's
        attention, the Transformer's last decoder layer's cross attention with its heads
        averaged, as :meth:`gold_views` reads them) averaged over the reference's M tokens and
        renormalised over the valid source tokens (:func:`source_weights`); None for a model
        without attention."""
        output = model(batch["tokens"], batch["mask"], teacher_inputs(batch["target"]), need_weights=True)
        if output.alignment is None:
            return None
        mask = batch["mask"].bool()
        return ItemAttention(source_weights(output.alignment, batch["target"], mask), mask, alignment_blocks(model))

    def erase_items(self, batch: Any, erased: Tensor) -> Any:
        """The source tokens ``erased`` (B, N) cut out of the source (:func:`erase_tokens`); the
        target, and so the decoder's inputs, stay as they are. The gold alignment, which indexes
        the source tokens, leaves the batch."""
        tokens, mask = erase_tokens(batch["tokens"], batch["mask"], erased, PAD)
        return {**{key: value for key, value in batch.items() if key != "alignment"}, "tokens": tokens, "mask": mask}

    def item_layer(self, model: nn.Module) -> Optional[nn.Module]:
        """The token embedding, which serves source and target alike."""
        return getattr(model, "embed", None)

    def item_forward(self, model: nn.Module, batch: Any) -> Optional[ItemForward]:
        """The source tokens' embeddings (B, N, E) and :meth:`decision` and
        :meth:`item_attention` as their functions. The embedding is shared: a forward pass calls
        it on the source first (the encoder, ``start``), then on the decoder's inputs; the given
        vectors replace the first call's output alone, and the target's embedding stays the model's."""
        layer = self.item_layer(model)
        if layer is None:
            return None
        with torch.no_grad():
            vectors = layer(batch["tokens"])

        def swap(given: Tensor) -> Any:
            calls: list[None] = []

            def source_only(module: nn.Module, args: Any, output: Tensor) -> Optional[Tensor]:
                calls.append(None)
                return given if len(calls) == 1 else None

            return layer.register_forward_hook(source_only)

        size = len(vectors)
        return ItemForward(
            vectors.detach(),
            replaying(batch, size, swap, lambda b: self.decision(model, b)),
            replaying(batch, size, swap, lambda b: self.item_attention(model, b).weights),
        )

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
        return {
            "alignment": [
                alignment_image(
                    alignment[0, :, : len(source)],
                    source,
                    target,
                    "first validation example: attention of each decoded token",
                )
            ]
        }
