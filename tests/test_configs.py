"""Every experiment config (``domains/*/*.yaml``, found when the tests are collected, so a new
config is swept without a list to edit): it parses, composes with the presets, and two epochs of one
batch of ``fit`` (two validations; the second draws the pictures and statistics, one image per
picture key), then ``validate`` and ``predict`` from the fit's checkpoint, run on every device.
That a key keeps one image per validation and one size across them is the ``attention_maps``
callback's rule, tested in tests/test_drawing.py; a picture is about a second of matplotlib.

Configs that read a real data set (their data section names ``$FRAMEWORK_DATA_DIR/<folder>``)
run on ``../shared/data`` and are skipped, saying so, where it is absent. Data sets are cut to a
few examples through the data module's own size arguments where it has them, so each config
takes seconds. On a GPU machine ``pytest tests/test_configs.py -k cuda`` is the "one batch of
every config" lane of ``python -m tools.gpu_check``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import yaml

from framework.__main__ import main
from framework.attention import AttentionBlock
from tests.conftest import ONE_BATCH, ROOT
from tests.image_logger import ImageLogger, logged_pictures, one_image_per_key_per_validation

CONFIGS = sorted(path.relative_to(ROOT).as_posix() for path in ROOT.glob("domains/*/*.yaml"))
#: Presets only parsed here (they need GPUs or several processes); cpu, debug and csv are parsed
#: and run by every run below, gpu on CUDA.
PARSED_ONLY = [
    "configs/trainer/gpu.yaml",
    "configs/trainer/ddp.yaml",
    "configs/trainer/fsdp.yaml",
    "configs/logger/tensorboard.yaml",
    "configs/logger/wandb.yaml",
]
#: By config section, the arguments that size a data set, a batch, an image or a picture, and the few
#: a sweep run needs: a config is cut down to these where its resolved value is larger (a list where
#: any of its entries is).
TINY = {
    "data": {
        "train_size": 32,
        "val_size": 8,
        "test_size": 8,
        "num_users": 200,
        "max_images": 4,
        "events_per_digit": 2,
        "batch_size": 4,
        "eval_batch_size": 4,
        "base_scale": 0.25,  # CamVid read at 120 x 90
        "crop_size": [64, 64],
    },
    "task": {"num_images": 1},  # examples drawn per picture (a picture is about 1 s of matplotlib)
}
#: Configs that fail for a known reason outside the sweep (xfail, strict: they fail the sweep once fixed).
KNOWN_FAILURES = {
    config: pytest.mark.xfail(
        raises=TypeError,
        strict=True,
        reason="BitSequences has no write_predictions: predict cannot write its bit vectors",
    )
    for config in ("domains/memory/hopfield_recall.yaml", "domains/memory/ntm_recall.yaml")
}
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
#: fit: pictures and statistics at the second validation only.
SECOND_VALIDATION = ["--attention_maps.every_n_epochs=2", "--attention_stats.every_n_epochs=2"]
#: validate and predict from the fit's checkpoint: without pictures and statistics (the fit drew and
#: checked them), one batch, no logger.
FROM_CHECKPOINT = [
    "--attention_maps.every_n_epochs=0",
    "--attention_stats.every_n_epochs=0",
    "--trainer.logger=false",
    "--trainer.limit_val_batches=1",
    "--trainer.limit_predict_batches=1",
]


def text_of_data(config: str) -> str:
    """The text that defines a config's data: its ``data:`` file, or the config itself."""
    data = yaml.safe_load((ROOT / config).read_text()).get("data")
    return (ROOT / config).parent.joinpath(data).read_text() if isinstance(data, str) else (ROOT / config).read_text()


def real_data_folder(config: str) -> str | None:
    """The folder under ``$FRAMEWORK_DATA_DIR`` that a config reads, ``None`` for embedded data."""
    found = re.search(r"\$FRAMEWORK_DATA_DIR/(\w[\w.-]*\w)", text_of_data(config))
    return found and found.group(1)


def domain_presets(config: str) -> list[str]:
    """The presets of a config's domain that compose with it: ``domains/<domain>/presets/<data>_*.yaml``
    where the config's data is ``datasets/<data>.yaml`` (Multi30k sized for a CPU ...)."""
    data = yaml.safe_load((ROOT / config).read_text()).get("data")
    if not isinstance(data, str):
        return []
    found = (ROOT / config).parent.glob(f"presets/{Path(data).stem}_*.yaml")
    return sorted(path.relative_to(ROOT).as_posix() for path in found)


PRESETS = sorted(path.relative_to(ROOT).as_posix() for path in ROOT.glob("domains/*/presets/*.yaml"))


def resolved(config: str, capsys, *presets: str) -> dict:
    """The config as the command line resolves it (``fit --print_config``), with ``presets`` composed."""
    with pytest.raises(SystemExit) as exit:
        main(["fit", "--config", config, *(arg for p in presets for arg in ("--config", p)), "--print_config"])
    out = capsys.readouterr().out
    assert exit.value.code in (0, None), out
    return yaml.safe_load(out)


def tiny(config: dict) -> list[str]:
    """``--data.*`` and ``--task.*`` flags that cut a resolved config down (:func:`cut`)."""
    return [
        f"--{section}.{key}={json.dumps(value)}"
        for section, cut_to in cut(config).items()
        for key, value in cut_to.items()
    ]


def cut(config: dict) -> dict[str, dict[str, object]]:
    """The arguments of :data:`TINY` that a resolved config's classes have with larger values, by section."""
    cuts = {}
    for section, tiny_values in TINY.items():
        given = (config.get(section) or {}).get("init_args") or {}
        cuts[section] = {key: value for key, value in tiny_values.items() if larger(given.get(key), value)}
    return cuts


def larger(given: object, tiny: object) -> bool:
    """Whether a resolved value is larger than its cut-down: a number, or a list in any entry."""
    if isinstance(given, list) and isinstance(tiny, list) and len(given) == len(tiny):
        return any(larger(g, t) for g, t in zip(given, tiny))
    return isinstance(given, (int, float)) and not isinstance(given, bool) and given > tiny


@pytest.mark.parametrize("config", CONFIGS)
def test_the_config_parses_and_composes_with_the_presets(config, shared_data, capsys):
    if folder := real_data_folder(config):  # --print_config builds the data module, which reads its folder
        shared_data(folder)
    sized = domain_presets(config)
    composed = resolved(config, capsys, *sized, *PARSED_ONLY)  # each preset's keys checked against the config's classes
    assert composed["model"]["class_path"] and composed["task"]["class_path"] and composed["data"]["class_path"]
    for preset in sized:  # a domain preset's every value reaches the resolved config
        for section, values in yaml.safe_load((ROOT / preset).read_text()).items():
            given = composed[section]["init_args"]
            assert {k: given.get(k) for k in values["init_args"]} == values["init_args"], (preset, section)
    trainer = composed["trainer"]  # the presets composed in order, the last one's strategy winning
    assert trainer["strategy"] == "fsdp" and trainer["logger"]["class_path"].endswith("WandbLogger")


@pytest.mark.parametrize("preset", PRESETS)
def test_every_domain_preset_composes_with_a_config_of_its_data(preset):
    assert any(preset in domain_presets(config) for config in CONFIGS), (
        f"{preset}: named <data>_<size>.yaml, it composes with the configs whose data is datasets/<data>.yaml"
    )


@pytest.mark.parametrize("config", [pytest.param(c, marks=KNOWN_FAILURES.get(c, ())) for c in CONFIGS])
@pytest.mark.slow
def test_one_batch_of_fit_then_validate_and_predict_from_its_checkpoint(config, device, shared_data, capsys):
    folder = real_data_folder(config)
    if folder:
        shared_data(folder)
    hardware = "configs/trainer/gpu.yaml" if device == "cuda" else "configs/trainer/cpu.yaml"
    presets = ["--config", hardware, "--config", "configs/trainer/debug.yaml", "--config", "configs/logger/csv.yaml"]
    flags = [*presets, *tiny(resolved(config, capsys)), *QUIET]

    fitted = main(["fit", "--config", config, *flags, *ONE_BATCH, *SECOND_VALIDATION, "--trainer.max_epochs=2"])
    metrics = fitted.trainer.callback_metrics
    monitor = fitted.model.task.monitor
    assert fitted.trainer.state.finished and fitted.trainer.global_step == 2
    assert math.isfinite(metrics["train/loss"]) and monitor in metrics, sorted(metrics)
    directions = fitted.model.task.directions()  # every metric the run logged says whether higher is better
    assert [name for name in metrics if name.split("/")[0] in ("train", "val") and name not in directions] == []
    checkpoint = fitted.trainer.checkpoint_callback
    assert checkpoint.mode == directions[checkpoint.monitor], "the best checkpoint goes the metric's way"
    pictures = logged_pictures(fitted.trainer)  # each checked to be an (H, W, 3) uint8 image
    blocks = [type(m).__name__ for m in fitted.model.model.modules() if isinstance(m, AttentionBlock)]
    assert pictures or not blocks, f"attention blocks {blocks} but no picture drawn"
    (logger,) = [logger for logger in fitted.trainer.loggers if isinstance(logger, ImageLogger)]
    one_image_per_key_per_validation(logger)  # one image per key per validation, one size per key
    assert {step for _, step, _, _ in logger.calls} <= {1}, "logged at the second validation's step"
    best = Path(fitted.trainer.default_root_dir) / "checkpoints" / "best.ckpt"
    assert best.is_file()

    after = ["--ckpt_path", str(best), *FROM_CHECKPOINT]
    validated = main(["validate", "--config", config, *flags, *after])
    assert monitor in validated.trainer.callback_metrics, sorted(validated.trainer.callback_metrics)
    predicted = main(["predict", "--config", config, *flags, *after])
    written = Path(predicted.trainer.default_root_dir) / "predictions"
    assert predicted.trainer.predict_loop.predictions and any(written.iterdir()), f"nothing predicted into {written}"
