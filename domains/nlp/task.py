"""Sequence-to-sequence learning: teacher forcing in training, decoding in validation, test and predict."""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.text import Perplexity, SacreBLEUScore

from framework.tasks import Step, Task

from ..decoding import beam_search, greedy_decode
from ..metrics import ExactMatch, TokenAccuracy
from ..models.seq2seq import teacher_inputs
from ..tokenization import EOS, PAD, token_names
from ..pictures import alignment_image
from .state import TokenizerState

DECODINGS = ("greedy", "beam")
DECODED_STAGES = ("val", "test")


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
