"""Sequence recognition: transcribe an utterance token by token, judged by word and character error rates."""

from __future__ import annotations

from typing import Any, Literal

import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy
from torchmetrics.text import CharErrorRate, WordErrorRate

from framework.decoding import beam_search, greedy_decode, shift_right
from framework.layers import counted_mean
from framework.tasks import Task
from framework.values import Fraction, PositiveInt

from ..data.digit_strings import BOS, PAD, SPECIALS, VOCAB_SIZE, transcript
from ..models.frontend import check_sample_rate
from ..pictures import spectrogram_with_alignment

#: How the recogniser's tokens are decoded (``task.decoding``).
Decoding = Literal["greedy", "beam"]


class SequenceRecognition(Task):
    """Train an attention-based recogniser with teacher forcing; judge it by what it decodes.

    Every stage logs the loss (token cross-entropy, ``<pad>`` ignored) and ``token_acc``
    (the next token is the most probable one under teacher forcing). Validation and test
    also decode every utterance (greedy, or beam search with ``beam_size``), write the
    tokens as words (``three five one``), and log ``wer`` (word error rate: one digit, one
    word) and ``cer`` (character error rate of the same transcripts), torchmetrics' edit
    distances over the stage. ``predict`` returns the transcripts; ``images`` draws the
    alignment of the first validation utterance (decoded tokens x encoder frames) under its
    spectrogram.

    Args:
        vocab_size: V (checked against the data's and the model's).
        decoding: ``greedy`` or ``beam``. beam_size: K. max_length: output tokens at most.
        label_smoothing: as in ``torch.nn.functional.cross_entropy``.
        monitor: the validation metric that picks the best checkpoint.
    """

    def __init__(
        self,
        vocab_size: PositiveInt = VOCAB_SIZE,
        decoding: Decoding = "greedy",
        beam_size: PositiveInt = 4,
        max_length: PositiveInt = 10,
        label_smoothing: Fraction = 0.0,
        monitor: str = "val/wer",
    ) -> None:
        super().__init__()
        self.vocab_size, self.decoding, self.beam_size, self.max_length = vocab_size, decoding, beam_size, max_length
        self.label_smoothing, self.monitor = label_smoothing, monitor

    def check(self, model: nn.Module, data: Any) -> None:
        check_sample_rate(model, data)
        super().check(model, data)

    def metrics(self) -> MetricCollection:
        return MetricCollection(
            {
                "token_acc": MulticlassAccuracy(
                    num_classes=self.vocab_size, average="micro", ignore_index=PAD, multidim_average="global"
                )
            }
        )

    def generation_metrics(self) -> MetricCollection:
        # two edit distances with equal state names: no compute groups, which would merge them
        return MetricCollection({"wer": WordErrorRate(), "cer": CharErrorRate()}, compute_groups=False)

    def decode(self, model: nn.Module, batch: Any) -> tuple[list[str], list[str]]:
        """The decoded transcripts of a batch and the true ones, as words."""
        return self.transcribe(model, batch), [transcript(row) for row in batch["target"].tolist()]

    def split(self, batch: Any) -> tuple[Any, Tensor]:
        return batch, batch["target"]

    def run_model(self, model: nn.Module, batch: Any) -> Tensor:
        """Next-token logits (B, M, V) under teacher forcing."""
        return model(batch["waveform"], batch["lengths"], shift_right(batch["target"], BOS))

    def losses(self, output: Tensor, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        return counted_mean(
            F.cross_entropy, output.transpose(1, 2), target, PAD, label_smoothing=self.label_smoothing
        ), {}

    def preds(self, output: Tensor) -> Tensor:
        return output.argmax(-1)

    def generate(self, model: nn.Module, batch: Any) -> Tensor:
        """Output ids (B, L) by the configured decoding."""
        if self.decoding == "greedy":
            return greedy_decode(model, batch["waveform"], batch["lengths"], self.max_length, specials=SPECIALS)
        return beam_search(
            model, batch["waveform"], batch["lengths"], self.beam_size, self.max_length, specials=SPECIALS
        )[0]

    def transcribe(self, model: nn.Module, batch: Any) -> list[str]:
        """The decoded transcripts of a batch, as words."""
        return [transcript(row) for row in self.generate(model, batch).tolist()]

    def predict(self, model: nn.Module, batch: Any) -> list[str]:
        return self.transcribe(model, batch)

    def write_predictions(self, prediction: list[str], batch: Any, sink: Any) -> None:
        """``transcripts.txt``: one decoded transcript per line, in the order of the utterances."""
        sink.take(len(prediction))
        sink.lines("transcripts.txt", prediction)

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        """``alignment``: the first utterance's spectrogram, with the attention of each decoded
        token over the encoder frames under it; the caption gives the reference transcript and
        the decoded one."""
        first = {key: batch[key][:1] for key in ("waveform", "lengths", "target")}
        output = self.generate(model, first)
        alignment = model(first["waveform"], first["lengths"], shift_right(output, BOS), need_weights=True).alignment
        features, mask = model.frontend(first["waveform"], first["lengths"])
        frames = int(mask[0].sum()) if mask is not None else features.shape[-1]
        keep = -(-frames * alignment.shape[-1] // features.shape[-1])  # the encoder frames of the real audio
        tokens = [transcript([t]) or {SPECIALS.eos: "</s>", PAD: "<pad>"}.get(t, "?") for t in output[0].tolist()]
        return {
            "alignment": [
                spectrogram_with_alignment(
                    features[0, :, :frames],
                    alignment[0, :, :keep],
                    tokens,
                    "first validation utterance: attention of each decoded token\n"
                    f"reference: {transcript(first['target'][0].tolist()) or '(empty)'}; "
                    f"decoded: {transcript(output[0].tolist()) or '(empty)'}",
                )
            ]
        }
