"""Every block of a kind placed in every host of that kind: it builds and trains one step, or the host
refuses it as the model is built, in one line naming the key or the blocks the slot takes (never a raw
TypeError or a shape error half-way through a step).

The hosts are found, not listed: each model class that a domain config names (``domains/*/*.yaml``,
the first config of the class, so embedded data where there is some) and each of its parameters
typed by a kind's block type (``SequenceBlock``, ``FeatureMapBlock`` ...; a union of several takes
each). The blocks of a kind are the registry's (``framework.attention.available(kind)``), so a new
block or a new host is swept without a list to edit.
"""

from __future__ import annotations

import copy
import importlib
import math
import typing

import pytest
import yaml
from jsonargparse import dict_to_namespace
from lightning.pytorch import Trainer, seed_everything
from lightning.pytorch.cli import LightningArgumentParser
from torch import nn

from framework import quiet
from framework.attention import available, build, info
from framework.attention.registry import FORMS
from framework.attention.spec import BlockFormError, BlockName
from framework.commands.fit.cli import instantiate_data, instantiate_task
from framework.errors import user_error
from framework.task_module import TaskModule
from tests.conftest import ROOT
from tests.test_configs import cut, real_data_folder, resolved


def model_class(config: str) -> str:
    return yaml.safe_load((ROOT / config).read_text())["model"]["class_path"]


def block_kinds(cls_path: str) -> dict[str, list[str]]:
    """The parameters of a model class that take a block, each with the kinds it takes."""
    module, _, name = cls_path.rpartition(".")
    hints = typing.get_type_hints(getattr(importlib.import_module(module), name).__init__)
    kinds = {
        param: sorted(
            {
                kind
                for t in typing.get_args(hint)
                if isinstance(t, type) and issubclass(t, BlockName)
                for kind in t.kinds
            }
        )
        for param, hint in hints.items()
    }
    return {param: found for param, found in kinds.items() if found}


def hosts() -> list[tuple[str, str, str]]:
    """(config, parameter, kind) per model class and block parameter: the class's first config
    with embedded data (else its first)."""
    configs = sorted(path.relative_to(ROOT).as_posix() for path in ROOT.glob("domains/*/*.yaml"))
    first: dict[str, str] = {}
    for config in sorted(configs, key=lambda c: real_data_folder(c) is not None):
        first.setdefault(model_class(config), config)
    return [
        (config, param, kind)
        for cls_path, config in sorted(first.items())
        for param, kinds in block_kinds(cls_path).items()
        for kind in kinds
    ]


def refused_as_built(message: str, param: str) -> bool:
    """Whether ``message`` is a refusal as the model is built: it names the key (a model's own check)
    or what the slot takes (:func:`framework.attention.build`'s checks of the kind, the form and the
    arguments; the encoders' of causal blocks)."""
    return any(said in message for said in (f"model.{param}", "this slot takes", "the model needs", "encoder needs"))


#: Placements that fail for a known reason, not yet fixed (xfail, strict: they fail the sweep once fixed).
KNOWN_MISFITS: dict[tuple[str, str, str], tuple[type[Exception], str]] = {}
PLACEMENTS = [
    pytest.param(
        config,
        param,
        block,
        marks=[pytest.mark.xfail(raises=why[0], strict=True, reason=why[1])]
        if (why := KNOWN_MISFITS.get((config, param, block)))
        else [],
        id=f"{config.split('/', 1)[1]}:{param}={block}",
    )
    for config, param, kind in hosts()
    for block in available(kind)
]


#: Each host config as the command line resolves it (its sizes filled), cut down to a few examples
#: and small batches as in the configs sweep: resolved once, on the host's first case.
HOSTS: dict[str, dict] = {}


def host(config: str, capsys) -> dict:
    """The resolved, cut-down config of ``config`` (a resolution is most of a case's time)."""
    if config not in HOSTS:
        spec = resolved(config, capsys)
        for section, values in cut(spec).items():
            if values:
                spec[section].setdefault("init_args", {}).update(values)
        HOSTS[config] = spec
    return HOSTS[config]


def built_model(spec: dict) -> nn.Module:
    """The model of a resolved config's ``model`` section, built as the command line builds it (its
    task and data: :func:`~framework.commands.fit.cli.instantiate_task` and ``instantiate_data``)."""
    parser = LightningArgumentParser(exit_on_error=False)
    parser.add_subclass_arguments(nn.Module, "model", fail_untyped=False)
    return parser.instantiate_classes(parser.parse_object({"model": spec})).model


def test_the_hosts_cover_every_kind_of_block():
    found = {kind for _, _, kind in hosts()}
    assert found == {"sequence", "cross", "pooling", "feature_map", "graph", "memory"}, found
    assert ("domains/nlp/selfattentive.yaml", "attention", "pooling") in hosts()


@pytest.mark.slow
@pytest.mark.parametrize("config,param,block", PLACEMENTS)
def test_a_block_placed_in_a_host_of_its_kind_trains_one_step_or_is_refused_in_one_line(
    config, param, block, shared_data, capsys, tmp_path
):
    """The host's model, task and data as its config resolves them (the command line's own
    parsing is swept by the configs tests), the block in the slot, one step of Lightning's loop.
    Every block's pictures and statistics are tested on the block (tests/test_pictures.py,
    tests/attention/test_probes.py)."""
    if folder := real_data_folder(config):
        shared_data(folder)
    quiet.install()  # the libraries' harmless warnings, as the command line leaves them out
    spec = host(config, capsys)
    model_spec = copy.deepcopy(spec["model"])
    model_spec["init_args"][param] = block
    seed_everything(spec.get("seed_everything") or 0, verbose=False)
    try:
        model = built_model(model_spec)
    except Exception as error:  # noqa: BLE001 - what the command line would say of it is checked
        said = user_error(error)
        assert said is not None, f"{block} in {config}: {type(error).__name__} would reach the user as a traceback"
        lines = str(said).strip().splitlines()
        assert len(lines) == 1, f"{block} in {config}: not one line: {lines}"
        assert refused_as_built(lines[0], param), f"{block} in {config}: not refused as the model is built: {lines[0]}"
        return
    trainer = Trainer(
        accelerator="cpu",
        max_steps=1,
        limit_train_batches=1,
        limit_val_batches=1,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    task, data = instantiate_task(dict_to_namespace(spec["task"])), instantiate_data(dict_to_namespace(spec["data"]))
    trainer.fit(TaskModule(model, task), datamodule=data)
    assert trainer.global_step == 1
    assert math.isfinite(trainer.callback_metrics["train/loss"])


FORMED = [name for name in available() if info(name).form is not None]


@pytest.mark.parametrize("name", FORMED)
def test_a_block_of_another_form_is_refused_by_a_slot_that_does_not_name_it_and_built_where_named(name):
    entry = info(name)
    with pytest.raises(BlockFormError, match=f"'{name}' is a {entry.kind} block of another form \\({entry.form}:"):
        build(name, 8, kind=entry.kind)
    assert entry.form in FORMS
    assert build(name, 8, kind=entry.kind, forms=(entry.form,)).block_name == name
