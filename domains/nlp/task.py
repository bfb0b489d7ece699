"""Tasks of the NLP domain: text classification and sequence-to-sequence translation, both
keeping their tokeniser (and class names) in the checkpoint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import torch.nn.functional as F
from lightning.pytorch.utilities import rank_zero_warn
from tokenizers import Tokenizer
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.text import Perplexity, SacreBLEUScore

from framework.attention.pooling import frobenius_penalty
from framework.tasks import Classification, Step, Task, call_model, inputs_of, split_batch

from .data.tokenization import EOS, PAD, token_names, tokens_of
from .decoding import beam_search, greedy_decode
from .metrics import ExactMatch, TokenAccuracy
from .models.common import ClassifierOutput
from .models.seq2seq import teacher_inputs
from .pictures import alignment_image, highlight_image

DECODINGS = ("greedy", "beam")
DECODED_STAGES = ("val", "test")


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

    def __init__(self, num_classes: int, penalty: float = 0.0, label_smoothing: float = 0.0) -> None:
        super().__init__(num_classes, label_smoothing)
        if penalty < 0:
            raise ValueError(f"task.penalty must be >= 0, got {penalty}")
        self.penalty = penalty

    def check(self, model: nn.Module, data: Any) -> None:
        """Beyond the base's sizes: ``num_classes`` is the number of the data's class names
        (``data.labels()``), and a penalty has attention rows to act on."""
        super().check(model, data)
        labels = list(data.labels()) if callable(getattr(data, "labels", None)) else []
        if labels and len(labels) != self.num_classes:
            raise ValueError(f"task.num_classes={self.num_classes} but {type(data).__name__} has {len(labels)} classes "
                             f"({', '.join(labels[:8])}{' ...' if len(labels) > 8 else ''})")
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
        title = f"true: {self._name(int(target[0]))}   predicted: {self._name(int(output.logits[0].argmax()))}"
        return {"word_attention": [highlight_image([line for line in lines if line], title)]}


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
    """

    def __init__(self, decoding: str = "greedy", beam_size: int = 4, length_penalty: float = 0.0, max_length: int = 64,
                 label_smoothing: float = 0.0, monitor: str = "val/bleu") -> None:
        super().__init__()
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

    def run_model(self, model: nn.Module, batch: Any) -> Tensor:
        """Next-token logits (B, M, V) under teacher forcing."""
        return model(batch["tokens"], batch["mask"], teacher_inputs(batch["target"]))

    def losses(self, output: Tensor, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        return F.cross_entropy(output.transpose(1, 2), target, ignore_index=PAD, label_smoothing=self.label_smoothing), {}

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
        return {"alignment": [alignment_image(alignment[0, :, : len(source)], source, target)]}
