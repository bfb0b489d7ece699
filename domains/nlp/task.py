"""Tasks of the NLP domain: text classification and sequence-to-sequence translation, both
keeping their tokeniser (and class names) in the checkpoint."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import torch
import torch.nn.functional as F
from lightning.pytorch.utilities import rank_zero_warn
from tokenizers import Tokenizer
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.text import Perplexity, SacreBLEUScore

from framework.attention import AttentionBlock, capture
from framework.attention.pooling import frobenius_penalty
from framework.attention.pooling.capsule import capsule_losses
from framework.evaluation.protocol import GoldView, ItemAttention, erase_tokens
from framework.evaluation.supervision import attention_supervision_loss
from framework.tasks import Classification, Step, Task, call_model, inputs_of, split_batch

from .data.tokenization import EOS, PAD, token_names, tokens_of
from .decoding import beam_search, greedy_decode
from .metrics import ExactMatch, TokenAccuracy
from .models.char_word import CapsuleOutput
from .models.common import ClassifierOutput
from .models.seq2seq import teacher_inputs
from .pictures import alignment_image, highlight_image

DECODINGS = ("greedy", "beam")
DECODED_STAGES = ("val", "test")


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


class TokenizerState:
    """Mixin of the text tasks (listed before the Task class): holds the tokeniser that the
    data module trained (and the class names of a classification task) as the module's
    extra state, so that both are saved in every checkpoint, as JSON
    (``Tokenizer.to_str()``) and a list of strings.

    A restored task therefore decodes model outputs on its own
    (``TaskModule.load_from_checkpoint(path).task.tokenizer``), and the data modules of this
    domain encode with the checkpoint's tokeniser instead of training one
    (:meth:`domains.nlp.data.TextData.resolve_tokenizer`).
    """

    tokenizer: Optional[Tokenizer] = None
    labels: Sequence[str] = ()

    def attach(self, tokenizer: Tokenizer, labels: Sequence[str] = ()) -> None:
        """Take the tokeniser (and class names) that the data module built."""
        self.tokenizer, self.labels = tokenizer, list(labels)

    def require_tokenizer(self) -> Tokenizer:
        if self.tokenizer is None:
            raise RuntimeError(
                f"{type(self).__name__} has no tokenizer: it comes from a checkpoint or from a data module of "
                "domains.nlp.data when a trainer runs (or call task.attach(tokenizer))"
            )
        return self.tokenizer

    def get_extra_state(self) -> dict[str, Any]:
        return {"tokenizer": "" if self.tokenizer is None else self.tokenizer.to_str(), "labels": list(self.labels)}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        self.tokenizer = Tokenizer.from_str(state["tokenizer"]) if state.get("tokenizer") else None
        self.labels = list(state.get("labels", []))


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

    def __init__(self, num_classes: Optional[int] = None, penalty: float = 0.0, label_smoothing: float = 0.0) -> None:
        super().__init__(num_classes, label_smoothing)
        if penalty < 0:
            raise ValueError(f"task.penalty must be >= 0, got {penalty}")
        self.penalty = penalty

    def check(self, model: nn.Module, data: Any) -> None:
        """Beyond the base's sizes: ``num_classes`` is the number of the data's class names
        (``data.labels()``, named in the message: checked before the base's sizes), and a
        penalty has attention rows to act on."""
        labels = list(data.labels()) if callable(getattr(data, "labels", None)) else []
        if labels and len(labels) != self.num_classes:
            raise ValueError(f"task.num_classes={self.num_classes} but {type(data).__name__} has {len(labels)} classes "
                             f"({', '.join(labels[:8])}{' ...' if len(labels) > 8 else ''})")
        super().check(model, data)
        rows = getattr(model, "returns_attention_rows", None)
        if self.penalty and rows is None:
            raise ValueError(f"task.penalty={self.penalty} needs a model that returns attention rows (B, r, N) with "
                             f"need_weights=True (SelfAttentiveClassifier); {type(model).__name__} does not: set "
                             "task.penalty=0")
        if self.penalty and not rows:
            rank_zero_warn(f"task.penalty={self.penalty} is skipped: the model's attention is off, so it has no "
                           "attention rows to penalise")

    def run_model(self, model: nn.Module, inputs: Any) -> Any:
        """Logits, or with the penalty on a :class:`ClassifierOutput` that carries the attention rows."""
        if not self.penalty or getattr(model, "returns_attention_rows", True) is False:
            return call_model(model, inputs)
        output = call_model(model, {**inputs, "need_weights": True})
        if getattr(output, "attention", None) is None:
            raise ValueError(f"task.penalty={self.penalty} needs a model that returns attention rows (B, r, N) with "
                             f"need_weights=True (SelfAttentiveClassifier); {type(model).__name__} does not")
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
        title = (f"first validation text, the read-out's weight of each word: true {self._name(int(target[0]))}, "
                 f"predicted {self._name(int(output.logits[0].argmax()))}")
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


class Supervised(NamedTuple):
    """A translation model's logits with the alignment it attended with and the gold it is
    supervised towards (``task.attention_supervision``)."""

    logits: Tensor
    alignment: Tensor
    gold: Tensor
    keys: Tensor


class Translation(TokenizerState, Task):
    """Train a sequence-to-sequence model with teacher forcing; judge it by what it decodes.

    Every stage logs the loss (token cross-entropy, ``<pad>`` ignored), ``token_acc``
    (next-token accuracy under teacher forcing) and ``ppl`` (perplexity). Validation and
    test also decode each source (greedy, or beam search with ``beam_size``) and log
    ``bleu`` (corpus BLEU of the detokenised outputs against the raw references,
    sacreBLEU's 13a tokenisation, in [0, 1]) and ``exact`` (exact match of the strings).
    ``predict`` returns the decoded strings; ``images`` the alignment of the first
    validation example (target x source tokens) from the model's attention.

    BLEU and exact match are corpus metrics: each batch adds its statistics to the stage's
    metric, which is logged (computed) at the end of the epoch. A batch is counted once,
    even when the ``attention_maps`` callback runs it through :meth:`step` again.

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

    Evaluation (``python -m framework evaluate``): on data with gold alignments, the alignment
    error rate and attention correctness of the model's alignment, and for a Transformer of
    every decoder layer and head (:meth:`gold_views`).
    """

    def __init__(self, decoding: str = "greedy", beam_size: int = 4, length_penalty: float = 0.0, max_length: int = 64,
                 label_smoothing: float = 0.0, monitor: str = "val/bleu", attention_supervision: float = 0.0) -> None:
        super().__init__()
        if attention_supervision < 0:
            raise ValueError(f"task.attention_supervision must be >= 0, got {attention_supervision}")
        self.attention_supervision = attention_supervision
        if decoding not in DECODINGS:
            raise ValueError(f"task.decoding must be one of {', '.join(DECODINGS)}, got {decoding!r}")
        if beam_size < 1 or max_length < 1:
            raise ValueError(f"task.beam_size and task.max_length must be at least 1, got {beam_size} and {max_length}")
        self.decoding, self.beam_size, self.length_penalty = decoding, beam_size, length_penalty
        self.max_length, self.label_smoothing = max_length, label_smoothing
        self.monitor, self.mode = monitor, "min" if monitor.endswith(("loss", "ppl")) else "max"
        self._counted: dict[str, Tensor] = {}  # the last batch whose decodings a stage counted
        self.decoded = nn.ModuleDict(
            {stage: nn.ModuleDict({"bleu": SacreBLEUScore(tokenize="13a"), "exact": ExactMatch()}) for stage in DECODED_STAGES}
        )

    def metrics(self) -> MetricCollection:
        return MetricCollection({"token_acc": TokenAccuracy(PAD), "ppl": Perplexity(ignore_index=PAD)})

    def split(self, batch: Any) -> tuple[Any, Tensor]:
        return batch, batch["target"]

    def check(self, model: nn.Module, data: Any) -> None:
        """Beyond the base's sizes: supervised attention needs data with gold alignments."""
        super().check(model, data)
        if self.attention_supervision and not getattr(data, "gold_alignments", False):
            raise ValueError(f"task.attention_supervision={self.attention_supervision} needs data with gold alignments "
                             f"(domains.nlp.DateNormalization); {type(data).__name__} has none: set "
                             "task.attention_supervision=0")

    def run_model(self, model: nn.Module, batch: Any) -> Any:
        """Next-token logits (B, M, V) under teacher forcing; with supervised attention a
        :class:`Supervised` that also carries the alignment and its gold."""
        if not (self.attention_supervision and "alignment" in batch):
            return model(batch["tokens"], batch["mask"], teacher_inputs(batch["target"]))
        output = model(batch["tokens"], batch["mask"], teacher_inputs(batch["target"]), need_weights=True)
        if output.alignment is None:
            raise ValueError(f"task.attention_supervision={self.attention_supervision} needs a model with attention; "
                             f"{type(model).__name__}'s attention is off")
        links = batch["alignment"]
        gold = torch.where((links == 2).any(-1, keepdim=True), links == 2, links >= 1)
        return Supervised(output.logits, output.alignment, gold, batch["mask"].bool().unsqueeze(1))

    def preds(self, output: Any) -> Tensor:
        return output.logits if isinstance(output, Supervised) else output

    def losses(self, output: Any, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        logits = self.preds(output)
        loss = F.cross_entropy(logits.transpose(1, 2), target, ignore_index=PAD, label_smoothing=self.label_smoothing)
        if not isinstance(output, Supervised):
            return loss, {}
        supervision = attention_supervision_loss(output.alignment.float(), output.gold, output.keys)
        return loss + self.attention_supervision * supervision, {"attention_loss": supervision.detach()}

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
        with capture(model, *cross) if cross else _nothing() as maps:
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

    def step(self, model: nn.Module, batch: Any, stage: str) -> Step:
        """The teacher-forced step; in validation and test also the decoded outputs' BLEU and exact match."""
        step = super().step(model, batch, stage)
        if stage not in self.decoded:
            return step
        metrics = self.decoded[stage]
        if batch["tokens"] is not self._counted.get(stage):  # the attention_maps callback runs a batch again
            hypotheses, references = self.translate(model, batch["tokens"], batch["mask"]), batch["references"]
            metrics["bleu"].update(hypotheses, [[r] for r in references])
            metrics["exact"].update(hypotheses, references)
            self._counted[stage] = batch["tokens"]
        return step._replace(logs=dict(metrics.items()))

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


class _nothing:
    """A context that records nothing (a model without cross-attention blocks)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


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

    LOSSES = ("bce", "hinge")

    def __init__(self, num_classes: Optional[int] = None, loss: str = "bce", reconstruction: float = 0.1) -> None:
        super().__init__(num_classes)
        if loss not in self.LOSSES:
            raise ValueError(f"task.loss must be one of {', '.join(self.LOSSES)}, got {loss!r}")
        if reconstruction < 0:
            raise ValueError(f"task.reconstruction must be >= 0, got {reconstruction}")
        self.loss, self.reconstruction = loss, reconstruction

    def check(self, model: nn.Module, data: Any) -> None:
        super().check(model, data)
        if getattr(model, "readout", None) != "capsule":
            raise ValueError(f"domains.nlp.CapsuleClassification trains capsules: the model must read out with them "
                             f"(domains.nlp.CharacterWordClassifier with model.attention=capsule); {type(model).__name__} "
                             f"reads out with {getattr(model, 'readout', 'something else')!r}")

    def run_model(self, model: nn.Module, inputs: Any) -> Any:
        return call_model(model, {**inputs, "capsules": True})

    def preds(self, output: Any) -> Tensor:
        return output.probabilities if isinstance(output, CapsuleOutput) else super().preds(output)

    def losses(self, output: Any, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        hinge, reconstruction = capsule_losses(output.probabilities, output.reconstructions, output.summary, target)
        if self.loss == "bce":
            truth = F.one_hot(target, output.probabilities.shape[-1]).to(output.probabilities.dtype)
            probability = F.binary_cross_entropy(output.probabilities.float(), truth.float())
        else:
            probability = hinge
        logs = {"probability_loss": probability.detach(), "reconstruction_loss": reconstruction.detach()}
        return probability + self.reconstruction * reconstruction, logs
