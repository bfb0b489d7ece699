"""Which parameters weight decay applies to.

By default (``weight_decay_on: matrices``) the optimizer decays the weight matrices and
convolution kernels only, as timm and nanoGPT do: a parameter is decayed when

* it has at least two dimensions (a bias, a norm layer's scale, a gate are vectors) and is
  not named as a bias (``bias``, ``content_bias``, ``hidden_biases.0``: per-head biases are
  matrices), and
* it belongs to no embedding (``nn.Embedding``, ``nn.EmbeddingBag``) and no normalisation layer
  (batch, instance, layer, group and RMS norm), and
* no module above it lists it in ``no_weight_decay()`` (timm's convention: names relative to
  that module, glob patterns allowed; a learned position table or a [CLS] token opts out so).

The others form a second group with ``weight_decay: 0``; the decayed group keeps the optimizer's
``weight_decay``. ``weight_decay_on: all`` gives the optimizer every parameter in one group
(torch's plain behaviour), as does an optimizer that takes no ``weight_decay`` (LBFGS, Rprop).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from fnmatch import fnmatchcase
from typing import Any, Literal, Union

from torch import nn

#: What ``--weight_decay_on`` takes.
DecayOn = Literal["matrices", "all"]
#: The name of a bias: ``bias``, ``out_bias``, an element of a list ``hidden_biases``.
BIAS = re.compile(r"bias(es)?(\.\d+)?$")
#: Layers whose parameters are never decayed (whatever their shape).
SPARED_LAYERS = (
    nn.Embedding,
    nn.EmbeddingBag,
    nn.modules.batchnorm._NormBase,
    nn.LayerNorm,
    nn.GroupNorm,
    nn.RMSNorm,
    nn.LocalResponseNorm,
)


def spared(module: nn.Module) -> set[int]:
    """The ids of ``module``'s parameters that weight decay leaves alone (see the module's docstring)."""
    ids = {id(p) for name, p in module.named_parameters() if p.ndim < 2 or BIAS.search(name)}
    for layer in module.modules():
        if isinstance(layer, SPARED_LAYERS):
            ids.update(id(p) for p in layer.parameters(recurse=False))
        if callable(getattr(layer, "no_weight_decay", None)):
            patterns = list(layer.no_weight_decay())
            ids.update(id(p) for name, p in layer.named_parameters() if any(fnmatchcase(name, x) for x in patterns))
    return ids


def parameter_groups(
    module: nn.Module, decay_on: DecayOn = "matrices"
) -> Union[list[nn.Parameter], list[dict[str, Any]]]:
    """What an optimizer of ``module`` takes: ``[{"params": decayed}, {"params": others,
    "weight_decay": 0.0}]`` (empty groups left out), or every parameter for ``decay_on="all"``."""
    if decay_on not in ("matrices", "all"):
        raise ValueError(f"weight_decay_on must be 'matrices' or 'all', got {decay_on!r}")
    parameters = list(module.parameters())
    if decay_on == "all":
        return parameters
    others = spared(module)
    groups = [
        {"params": [p for p in parameters if id(p) not in others]},
        {"params": [p for p in parameters if id(p) in others], "weight_decay": 0.0},
    ]
    return [group for group in groups if group["params"]]


@contextmanager
def offered_in_groups(module: nn.Module, decay_on: DecayOn, optimizer: Any) -> Iterator[None]:
    """Within the block, ``module.parameters()`` gives :func:`parameter_groups` when the config
    section ``optimizer`` (``class_path`` and ``init_args``, or None) names an optimizer that takes
    a ``weight_decay``: LightningCLI builds that optimizer from ``model.parameters()``."""
    init_args = (optimizer.get("init_args") if optimizer is not None else None) or {}
    if decay_on == "all" or "weight_decay" not in init_args:
        yield
        return
    groups = parameter_groups(module, decay_on)
    module.parameters = lambda *args, **kwargs: iter(groups)  # an instance attribute, shadowing the method
    try:
        yield
    finally:
        del module.parameters
