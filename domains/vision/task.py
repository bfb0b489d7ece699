"""Semantic segmentation (per-pixel cross-entropy with CCNet's auxiliary loss, mIoU and pixel
accuracy) and image classification with pictures of where the model looks."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassJaccardIndex

from framework.attention import Record, capture
from framework.data.sizes import require_sizes
from framework.errors import ConfigError
from framework.evaluation.protocol import GoldView, ItemAttention, ItemForward, Watched, replaying
from framework.layers import counted_mean
from framework.tasks import Classification, Task, call_model, split_batch
from framework.tasks.attention_training import AttentionTraining
from framework.values import AnyInt, ClassCount, Fraction, NonNegativeFloat, NonNegativeInt, Probability, declare

from .data.palettes import as_palette, voc_palette
from .models import SegmentationOutput
from .pictures import looked_at, masks, token_attention

#: A colour channel's level, 0 to 255, and a class's colour (red, green, blue) in ``task.palette``.
ColourLevel = declare("ColourLevel", int, "an int in [0, 255] (a colour channel)", low=0, high=255)
RGB = tuple[ColourLevel, ColourLevel, ColourLevel]


def dense_weights(block: nn.Module, record: Record) -> Optional[Tensor]:
    """(B, Q, K): where every query pixel of a record looks over the key pixels (the block's
    :meth:`~framework.attention.AttentionBlock.looks`, query by query); None when the record
    relates no pixel grids."""
    if record.queries is None or len(record.queries) != 2 or record.keys is None:
        return None
    height, width = record.queries
    maps = [block.looks(record, (i, j)) for i in range(height) for j in range(width)]
    if any(m is None for m in maps):
        return None
    return torch.stack([m.flatten(1) for m in maps], 1).float()


def pixel_blocks(model: nn.Module, maps: Any) -> list[tuple[str, nn.Module, list[Record]]]:
    """The captured blocks whose records relate pixel grids, outer blocks only (DANet, not its
    position module), in module order."""
    modules, found = dict(model.named_modules()), []
    for name, records in maps.items():
        if any(name.startswith(f"{outer}.") for outer, _, _ in found):
            continue
        if records and records[-1].queries is not None and len(records[-1].queries) == 2:
            found.append((name, modules[name], records))
    return found


class PixelMaps(NamedTuple):
    """The first block of a model that relates pixel grids: its name and module, the dense (B, Q, K)
    weights of every pass (:func:`dense_weights`), and its last record (the grids)."""

    name: str
    block: nn.Module
    dense: list[Tensor]
    record: Record


def first_pixel_maps(model: nn.Module, maps: Any) -> Optional[PixelMaps]:
    """The :class:`PixelMaps` of the first captured pixel block whose passes all give dense weights."""
    for name, block, records in pixel_blocks(model, maps):
        dense = [dense_weights(block, record) for record in records]
        if dense and all(d is not None for d in dense):
            return PixelMaps(name, block, dense, records[-1])
    return None


def has_gold(batch: Any) -> bool:
    """Whether a batch is ``(image, target, gold)`` (the digit scenes' gold masks)."""
    return isinstance(batch, (tuple, list)) and len(batch) == 3


def _logits(output: Any) -> tuple[Tensor, Tensor | None]:
    """(logits, aux logits or None) of a model's output: a SegmentationOutput or bare logits."""
    if isinstance(output, SegmentationOutput):
        return output.logits, output.aux
    return output, None


class Segmentation(AttentionTraining, Task):
    """Labels per pixel: loss = CE(logits, y) + aux_weight * CE(aux logits, y), pixels equal to
    ``ignore_index`` excluded from both and from the metrics.

    Metrics: ``miou`` (mean over classes of TP / (TP + FP + FN), accumulated over the whole
    split) and ``pixel_acc`` (correct labelled pixels / labelled pixels). The best checkpoint
    is the one with the highest ``val/miou``.

    Pictures (``images``): for the first ``num_images`` examples, the image, the truth and the
    prediction side by side; and the attention of the feature pixel at relative position
    ``pixel`` (row, column in [0, 1]) in every block whose weights relate pixels (criss-cross,
    non-local, DANet position), drawn beside the image.

    Args:
        num_classes: K.
        ignore_index: the label of unlabelled pixels (255 in VOC, Cityscapes and our CamVid reader).
        aux_weight: weight of the auxiliary loss (CCNet and PSPNet: 0.4).
        num_images: examples drawn per picture.
        pixel: the query pixel of the attention pictures, as fractions of height and width.
        palette: K RGB colours of the classes in the pictures (default: Pascal VOC's colour map,
            which the digit scenes use too).
        attention_supervision, decouple_attention, random_attention: the attention-training
            families of :mod:`framework.tasks.attention_training`, for batches with gold
            (``DigitScenes`` with ``data.gold=true``): the loss adds lambda x the cross-entropy,
            or mu x -log(1 - m), of the hidden tiles' feature pixels' weights over the key pixels
            against the drawn digit's pixels, the views that :meth:`gold_views` scores and trains
            (every pass of the first pixel block, and the passes composed), averaged over the
            views; or every block's weights are drawn at random. Off by default.

    Shapes: batch (image (B, C, H, W), target (B, H, W) long), or with gold attention
    (image, target, gold (B, 2, H, W) bool) as :meth:`DigitScenes.evaluation_dataloader` gives
    it (and every loader with ``data.gold=true``); model output logits (B, K, H, W) or a
    SegmentationOutput; ``predict`` gives label maps (B, H, W).

    Evaluation (``python -m framework evaluate``): the decision tested is one pixel's class (a
    hidden tile's pixel where the batch has gold, else ``pixel``); the items are the key pixels
    of the first block that relates pixels, with that pixel's attention (criss-cross: its
    passes composed, A_R ... A_1), erased and attributed at the block's input (a pixel's
    vector set to zero). On digit scenes, attention correctness is the weight that the hidden
    tiles' pixels put on the drawn digit's pixels, per pass and composed.
    """

    monitor = "val/miou"
    logged = {"aux_loss": "min"}
    gold_data = "batches with gold attention (domains.vision.DigitScenes with data.gold=true)"
    gold_model = "a model with a block that relates pixels"

    def __init__(
        self,
        num_classes: Optional[ClassCount] = None,
        ignore_index: AnyInt = 255,
        aux_weight: NonNegativeFloat = 0.4,
        num_images: NonNegativeInt = 4,
        pixel: Sequence[Probability] = (0.5, 0.5),
        palette: Optional[Sequence[RGB]] = None,
        attention_supervision: NonNegativeFloat = 0.0,
        decouple_attention: NonNegativeFloat = 0.0,
        random_attention: bool = False,
    ) -> None:
        require_sizes("task", num_classes=num_classes)
        super().__init__()
        self.attention_options(attention_supervision, decouple_attention, random_attention)
        if len(pixel) != 2:
            raise ConfigError(f"task.pixel must be (row, column) fractions in [0, 1], got {list(pixel)}")
        self.num_classes, self.ignore_index, self.aux_weight = num_classes, ignore_index, aux_weight
        self.num_images, self.pixel = num_images, tuple(pixel)
        if palette is not None and len(palette) != num_classes:
            raise ConfigError(f"task.palette must give {num_classes} colours (task.num_classes), got {len(palette)}")
        self.colours = as_palette(palette) if palette is not None else voc_palette(num_classes)
        self.class_names = [str(k) for k in range(num_classes)]  # the data's, once checked against it

    def check(self, model: nn.Module, data: Any) -> None:
        """Beyond the base's sizes: the data's class names (``data.class_names``), which the masks'
        colour bar shows."""
        super().check(model, data)
        names = list(getattr(data, "class_names", None) or [])
        if len(names) == self.num_classes:
            self.class_names = names

    def carries_gold(self, batch: Any) -> bool:
        """A batch of DigitScenes(gold=true) is (image, mask, gold); other batches carry none."""
        return has_gold(batch)

    def split(self, batch: Any) -> tuple[Any, Any]:
        """``(image, target)``; a batch with gold attention gives its first two."""
        if has_gold(batch):
            return batch[0], batch[1]
        return split_batch(batch)

    def losses(self, output: Any, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        logits, aux = _logits(output)
        if logits.shape[1] != self.num_classes:
            raise ConfigError(
                f"segmentation: the model gives {logits.shape[1]} classes but task.num_classes={self.num_classes}"
            )
        if logits.shape[-2:] != target.shape[-2:]:
            raise ValueError(
                f"segmentation: logits are {tuple(logits.shape[-2:])} but the target mask is {tuple(target.shape[-2:])}"
            )
        loss = counted_mean(F.cross_entropy, logits, target, self.ignore_index)
        if aux is None or not self.aux_weight:
            return loss, {}
        aux_loss = counted_mean(F.cross_entropy, aux, target, self.ignore_index)
        return loss + self.aux_weight * aux_loss, {"aux_loss": aux_loss.detach()}

    def preds(self, output: Any) -> Tensor:
        """Label maps (B, H, W): the arg-max taken once for both metrics (each would take it again
        from the (B, K, H, W) logits, the largest cost of a CPU step's metric update)."""
        return _logits(output)[0].argmax(1)

    def metrics(self) -> MetricCollection:
        # No per-update checks of the values (two thirds of an update's time at 32 x 64 x 64 pixels):
        # the predictions are arg-maxes, and the loss already refuses a target outside the classes.
        options = dict(num_classes=self.num_classes, ignore_index=self.ignore_index, validate_args=False)
        return MetricCollection(
            {
                "miou": MulticlassJaccardIndex(average="macro", **options),
                "pixel_acc": MulticlassAccuracy(average="micro", **options),
            }
        )

    def predict(self, model: nn.Module, batch: Any) -> Tensor:
        """Label maps (B, H, W)."""
        return super().predict(model, batch)

    def write_predictions(self, prediction: Tensor, batch: Any, sink: Any) -> None:
        """``masks/<example>.png``: one paletted PNG per image whose pixel values are the predicted
        labels (the colours are the task's palette), numbered in the order of the split."""
        for index, mask in zip(sink.take(len(prediction)), prediction.cpu().numpy()):
            sink.image(f"masks/{index:06d}.png", mask, palette=self.colours.numpy())

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        inputs, target = self.split(batch)
        inputs, target = inputs[: self.num_images], target[: self.num_images]
        with capture(model) as maps:
            prediction = _logits(call_model(model, inputs))[0].argmax(1)
        pictures = {
            "masks": [
                masks(x, t, p, self.colours, self.class_names, self.ignore_index, f"validation example {k + 1}")
                for k, (x, t, p) in enumerate(zip(inputs, target, prediction))
            ]
        }
        return {**pictures, **looked_at(model, maps, inputs, self.pixel)}

    # ------------------------------------------------------------------ evaluation hooks

    def query_pixels(self, batch: Any) -> Tensor:
        """(B, 2) the (row, column) of the pixel whose decision is tested: with gold, the middle
        (in reading order) of the example's tile pixels, else the task's ``pixel``."""
        images = self.split(batch)[0]
        height, width = images.shape[-2:]
        default = torch.tensor(
            [min(int(self.pixel[0] * height), height - 1), min(int(self.pixel[1] * width), width - 1)]
        )
        pixels = default.expand(len(images), 2).clone()
        if has_gold(batch):
            for row, tiles in enumerate(batch[2][:, 1].cpu()):
                where = tiles.nonzero()
                if len(where):
                    pixels[row] = where[len(where) // 2]
        return pixels.to(images.device)

    def decision(self, model: nn.Module, batch: Any) -> Tensor:
        """The logits (B, K) of each example's tested pixel (:meth:`query_pixels`)."""
        logits = _logits(self.run_model(model, self.split(batch)[0]))[0]
        pixels = self.query_pixels(batch)
        return logits[torch.arange(len(logits), device=logits.device), :, pixels[:, 0], pixels[:, 1]]

    def _pixel_maps(self, model: nn.Module, batch: Any, watched: Optional[Watched] = None) -> Optional[PixelMaps]:
        """The first pixel block's :class:`PixelMaps` in the decision of a batch (of the pass
        ``watched``, where given)."""
        return first_pixel_maps(model, (watched or self.watch(model, batch)).maps)

    @staticmethod
    def _composed(dense: list[Tensor]) -> Tensor:
        """The passes' weights composed, A_R ... A_1 (one pass: itself)."""
        composed = dense[0]
        for later in dense[1:]:
            if later.shape[-1] != composed.shape[-2]:
                return dense[-1]
            composed = later @ composed
        return composed

    def item_attention(self, model: nn.Module, batch: Any) -> Optional[ItemAttention]:
        """Where the tested pixel's feature pixel looks over the key pixels (passes composed)."""
        found = self._pixel_maps(model, batch)
        if found is None:
            return None
        composed = self._composed(found.dense)
        images = self.split(batch)[0]
        side = int(round(math.sqrt(composed.shape[1] * images.shape[-1] / images.shape[-2])))  # query grid width
        rows, cols = composed.shape[1] // side, side
        pixels = self.query_pixels(batch)
        query = (pixels[:, 0] * rows // images.shape[-2]) * cols + pixels[:, 1] * cols // images.shape[-1]
        weights = composed[torch.arange(len(composed), device=composed.device), query]
        return ItemAttention(weights, torch.ones_like(weights, dtype=torch.bool), (found.name,))

    def item_forward(self, model: nn.Module, batch: Any) -> Optional[ItemForward]:
        """The key pixels' vectors at the pixel block's input (B, h w, C) and the tested pixel's
        logits as their function."""
        found = self._pixel_maps(model, batch)
        if found is None:
            return None
        block = found.block
        seen: list[Tensor] = []
        hook = block.register_forward_pre_hook(lambda module, args: seen.append(args[0]))
        try:
            with torch.no_grad():
                self.decision(model, batch)
        finally:
            hook.remove()
        features = seen[0]  # (B, C, h, w)

        def swap(vectors: Tensor) -> Any:
            replaced = vectors.transpose(1, 2).reshape(len(vectors), *features.shape[1:]).to(features.dtype)
            return block.register_forward_pre_hook(lambda module, args: (replaced, *args[1:]))

        return ItemForward(
            features.flatten(2).transpose(1, 2).detach(),
            replaying(batch, len(features), swap, lambda b: self.decision(model, b)),
            replaying(batch, len(features), swap, lambda b: self.item_attention(model, b).weights),
        )

    def gold_views(self, model: nn.Module, batch: Any, watched: Optional[Watched] = None) -> list[GoldView]:
        """With gold (digit scenes): each pass of the first pixel block, and the passes composed,
        over the key pixels, against the drawn digits' pixels, all trained; the queries are the
        feature pixels mostly covered by hidden tiles."""
        if not has_gold(batch):
            return []
        found = self._pixel_maps(model, batch, watched)
        if found is None:
            return []
        name, dense, record = found.name, found.dense, found.record
        drawn, tiles = batch[2][:, 0].float(), batch[2][:, 1].float()
        keys = F.adaptive_avg_pool2d(drawn[:, None], record.keys)[:, 0].flatten(1) > 0  # (B, K)
        queries = F.adaptive_avg_pool2d(tiles[:, None], record.queries)[:, 0].flatten(1) >= 0.5  # (B, Q)
        # the keys a pass can reach (criss-cross: the query's row and column), where its softmax is not 0
        views = [
            GoldView(
                f"{name} pass {r + 1}" if len(dense) > 1 else name,
                weights,
                keys.unsqueeze(1),
                weights > 0,
                queries,
                trained=True,
            )
            for r, weights in enumerate(dense)
        ]
        if len(dense) > 1:
            composed = self._composed(dense)
            views.append(
                GoldView(
                    f"{name} passes composed",
                    composed,
                    keys.unsqueeze(1),
                    torch.ones_like(composed).bool(),
                    queries,
                    trained=True,
                )
            )
        return views


class ImageClassification(Classification):
    """Image classification (cross-entropy, ``acc`` and macro ``f1``, as
    :class:`framework.tasks.Classification`), with pictures of where the model looks.

    Pictures (``images``), for the first ``num_images`` examples: where the feature pixel at
    relative position ``pixel`` (row, column in [0, 1]) looks in every block whose weights
    relate pixels (non-local, criss-cross, axial, stand-alone ... in a ResNet), beside the
    image; and for a model with a ``rollout`` method (:class:`~domains.vision.ViTClassifier`),
    where its [CLS] token looks, by attention rollout over the patches (``rollout``).

    Args:
        num_classes, label_smoothing: as for :class:`framework.tasks.Classification`.
        num_images: examples drawn per picture.
        pixel: the query pixel of the pixel pictures, as fractions of height and width.
    """

    def __init__(
        self,
        num_classes: Optional[ClassCount] = None,
        label_smoothing: Fraction = 0.0,
        num_images: NonNegativeInt = 4,
        pixel: Sequence[Probability] = (0.5, 0.5),
    ) -> None:
        super().__init__(num_classes, label_smoothing)
        if len(pixel) != 2:
            raise ConfigError(f"task.pixel must be (row, column) fractions in [0, 1], got {list(pixel)}")
        self.num_images, self.pixel = num_images, tuple(pixel)

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        inputs = split_batch(batch)[0][: self.num_images]
        with capture(model) as maps:
            call_model(model, inputs)
        pictures = looked_at(model, maps, inputs, self.pixel)
        rollout = getattr(model, "rollout", None)
        weights = rollout(inputs) if callable(rollout) else None
        if weights is not None:
            pictures["rollout"] = token_attention(inputs, weights)
        return pictures
