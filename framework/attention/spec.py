"""How a model names its attention block in a config.

A model's ``attention`` parameter takes any of

* a registry name, ``"cbam"`` (``"none"`` gives the no-attention baseline of the slot: its input
  unchanged, or the mean of the real positions in a pooling slot),
* a dotted class path, ``"timm.layers.EcaModule"``,
* a LightningCLI spec, ``{class_path: my_pkg.MyBlock, init_args: {...}}``, which
  jsonargparse turns into a callable that the model calls with its width.

The types below check a name while the config is parsed, so a typo fails before
anything is built, with the config key and the close names in the message::

    model.attention: unknown feature_map block 'cbma'; did you mean: cbam?
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from typing import Any, ClassVar, Optional, Union

import torch
from jsonargparse.typing import register_type
from torch import Tensor, nn

from .base import AttentionOutput, ShapeError
from .registry import FORMS, aliases, available, create, info, unknown_name_message

NONE = "none"
DOTTED_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


class BlockName(str):
    """A registry name (or a dotted class path), checked when it is made; an alias (timm's
    ``nl``) becomes the name it stands for. ``kinds``: the kinds the slot takes (empty: any); a
    registered block of another kind is said to be one, with the names the slot takes."""

    kinds: ClassVar[tuple[str, ...]] = ()

    def __new__(cls, value: str) -> BlockName:
        if type(value).__name__ == "NestedArg":  # --model.attention.init_args.k=v on a block given by name
            raise ValueError(
                f"{value.key}={value.val} sets an argument of a block given by its name: give the block "
                'and its arguments as a spec instead, \'{"class_path": "<its class>", "init_args": '
                f'{{"{value.key.split(".")[-1]}": {value.val}}}}}\' (`python -m framework blocks` says where '
                "each block is defined)"
            )
        if isinstance(value, dict) and isinstance(value.get("class_path"), str):  # a spec whose class did not resolve
            path = value["class_path"]
            raise ValueError(f"attention block {path!r}: cannot import it ({_import_error(path)})")
        value = str(value)
        kinds = cls.kinds or (None,)
        names = sorted(n for kind in kinds for n in available(kind))
        known = {alias: name for kind in kinds for alias, name in aliases(kind).items()}
        value = known.get(value, value)
        if value != NONE and value not in names and not DOTTED_PATH.fullmatch(value):
            what = f"{' or '.join(cls.kinds)} block" if cls.kinds else "attention block"
            if value in available() or value in aliases():
                entry = info(value)
                raise ValueError(
                    f"attention block {value!r} is a {entry.kind} block; this slot takes {what}s: {', '.join(names)}"
                )
            raise ValueError(unknown_name_message(value, names, what, known))
        if value not in names and DOTTED_PATH.fullmatch(value) and (why := _import_error(value)) != IMPORTS:
            raise ValueError(f"attention block {value!r}: cannot import it ({why})")
        return super().__new__(cls, value)


def _import(path: str) -> Any:
    module, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module), attr)


#: What :func:`_import_error` says of a path that imports.
IMPORTS = "it imports, but does not take the block's arguments"


def _import_error(path: str) -> str:
    """Why ``path`` does not import (or :data:`IMPORTS`)."""
    try:
        _import(path)
    except (ImportError, AttributeError, ValueError) as err:
        return str(err)
    return IMPORTS


class FeatureMapName(BlockName):
    kinds = ("feature_map",)


class SequenceName(BlockName):
    kinds = ("sequence",)


class CrossName(BlockName):
    kinds = ("cross",)


class PoolingName(BlockName):
    kinds = ("pooling",)


class GraphName(BlockName):
    kinds = ("graph",)


class MemoryName(BlockName):
    kinds = ("memory",)


class PoolingOrCrossName(BlockName):
    """A pooling block, or a cross block queried by learned vectors (the self-attentive encoder's slot)."""

    kinds = ("pooling", "cross")


for _name_type in (
    BlockName,
    FeatureMapName,
    SequenceName,
    CrossName,
    PoolingName,
    GraphName,
    MemoryName,
    PoolingOrCrossName,
):
    register_type(_name_type, serializer=str, deserializer=_name_type)

BlockFactory = Callable[..., nn.Module]
#: Type of a model parameter that takes any block.
BlockSpec = Union[BlockName, BlockFactory]
FeatureMapBlock = Union[FeatureMapName, BlockFactory]
SequenceBlock = Union[SequenceName, BlockFactory]
CrossBlock = Union[CrossName, BlockFactory]
PoolingBlock = Union[PoolingName, BlockFactory]
GraphBlock = Union[GraphName, BlockFactory]
MemoryBlock = Union[MemoryName, BlockFactory]


class BlockFormError(ValueError):
    """A block of its slot's kind whose form (how it is called, what it gives back) the slot does not take."""


class BlockArgumentsError(ValueError):
    """A block that does not take the arguments its slot gives (it is a block of another kind)."""


class NoAttention(nn.Module):
    """The no-attention baseline (``attention: none``) of a slot whose blocks keep their input's
    shape (sequence, cross, feature map, graph, memory): returns its first input unchanged.
    A pooling slot's baseline is :class:`MeanPooling`."""

    def forward(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        return x


class MeanPooling(NoAttention):
    """The no-attention baseline of a pooling slot: the mean of the real positions, the
    unweighted average that attention pooling replaces by a weighted one.

    Shapes: x (..., N, D), ``mask`` (..., N) boolean, True = a real position -> (..., D);
    zeros where no position is real. With ``need_weights=True``
    ``AttentionOutput(output, weights (..., 1, N))``: 1 / n over the n real positions, laid
    out as the weights of ``pooling`` with one query.
    """

    def forward(self, x: Tensor, mask: Optional[Tensor] = None, *, need_weights: bool = False) -> Any:  # type: ignore[override]
        if x.dim() < 2 or (mask is not None and tuple(mask.shape) != tuple(x.shape[:-1])):
            got = "" if mask is None else f" and mask {tuple(mask.shape)}"
            raise ShapeError(
                f"none (mean pooling): x must have shape (..., N, D) and mask (..., N), got x {tuple(x.shape)}{got}"
            )
        weights = torch.ones_like(x[..., 0]) if mask is None else mask.to(x.dtype)
        weights = weights / weights.sum(-1, keepdim=True).clamp(min=1)
        out = (weights.unsqueeze(-1) * x).sum(-2)
        return AttentionOutput(out, weights.unsqueeze(-2)) if need_weights else out


def build(
    spec: Union[str, BlockFactory, None],
    *args: Any,
    kind: Optional[str] = None,
    forms: tuple[str, ...] = (),
    calls_with: tuple[str, ...] = (),
    **kwargs: Any,
) -> nn.Module:
    """Instantiate a block from a config value; ``args``/``kwargs`` are the model's (width first).

    ``None`` and ``"none"`` give the no-attention baseline of the slot's ``kind``:
    :class:`MeanPooling` for pooling, else :class:`NoAttention`. With ``kind`` given, a
    registry name of another kind is an error that lists the names of the right kind, and so is
    a block of a form (:data:`~framework.attention.registry.FORMS`) that the slot does not name in
    ``forms``: the kind's own form is what a slot calls, unless it says otherwise. ``calls_with``: the
    keyword arguments beyond its kind's that the slot passes (DIN's ``attn_mask``); a registered
    block whose ``forward`` takes one of them not is refused likewise, naming the blocks that take them.
    """
    if spec is None or spec == NONE:
        return MeanPooling() if kind == "pooling" else NoAttention()
    if callable(spec):
        return _call(spec, spec, kind, *args, **kwargs)
    if spec in available() or spec in aliases():
        entry = info(spec)
        if kind is not None and entry.kind != kind:
            raise ValueError(
                f"attention block {spec!r} is a {entry.kind} block; this slot takes {kind} blocks: "
                f"{', '.join(available(kind))}"
            )
        if kind is not None and entry.form is not None and entry.form not in forms:
            fitting = [n for n in available(kind) if info(n).form is None or info(n).form in forms]
            raise BlockFormError(
                f"attention block {spec!r} is a {kind} block of another form ({entry.form}: {FORMS[entry.form]}); "
                f"this slot takes {', '.join(fitting)}"
            )
        missing = [argument for argument in calls_with if not takes(entry.builder, argument)]
        if missing:
            fitting = [
                name
                for name in available(kind or entry.kind)
                if (info(name).form is None or info(name).form in forms)
                and all(takes(info(name).builder, argument) for argument in calls_with)
            ]
            raise BlockFormError(
                f"attention block {spec!r} does not take {', '.join(missing)}, which this slot passes; "
                f"this slot takes {', '.join(fitting)}"
            )
        return _call(lambda *a, **k: create(spec, *a, **k), spec, kind, *args, **kwargs)
    if DOTTED_PATH.fullmatch(spec):
        try:
            factory = _import(spec)
        except (ImportError, AttributeError) as err:
            raise ValueError(f"attention block {spec!r}: cannot import it ({err})") from None
        return _call(factory, spec, kind, *args, **kwargs)
    raise ValueError(
        unknown_name_message(spec, available(kind), f"{kind} block" if kind else "attention block", aliases(kind))
    )


def takes(block: Callable[..., nn.Module], argument: str, method: str = "forward") -> bool:
    """Whether a block class's ``method`` (``forward``, or ``__init__``: its constructor) takes the
    keyword ``argument`` (by name, or any ``**kwargs``)."""
    parameters = inspect.signature(getattr(block, method)).parameters.values()
    return any(p.name == argument or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _call(factory: BlockFactory, spec: object, kind: Optional[str], *args: Any, **kwargs: Any) -> nn.Module:
    """Build a user's block with the model's arguments; arguments it does not take mean it is a
    block of another kind (a graph slot given ``torch.nn.MultiheadAttention``), said as such."""
    try:
        return factory(*args, **kwargs)
    except TypeError as err:
        name = getattr(spec, "__name__", spec)
        fitting = (
            [n for n in available(kind) if all(takes(info(n).builder, k, "__init__") for k in kwargs)] if kind else []
        )
        wanted = (
            f"a {kind} block that takes them ({', '.join(fitting)}, or a class taking them)"
            if fitting
            else f"a {kind} block (none in the catalogue takes them: a class taking them)"
            if kind
            else "a block"
        )
        raise BlockArgumentsError(
            f"attention block {name!r} does not take this model's arguments {_signature(args, kwargs)} "
            f"({err}): the model needs {wanted}"
        ) from None


def _signature(args: tuple, kwargs: dict) -> str:
    return "(" + ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())]) + ")"
