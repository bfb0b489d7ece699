"""How a model names its attention block in a config.

A model's ``attention`` parameter takes any of

* a registry name, ``"cbam"`` (``"none"`` gives the no-attention baseline),
* a dotted class path, ``"timm.layers.EcaModule"``,
* a LightningCLI spec, ``{class_path: my_pkg.MyBlock, init_args: {...}}``, which
  jsonargparse turns into a callable that the model calls with its width.

The types below check a name while the config is parsed, so a typo fails before
anything is built, with the config key and the close names in the message::

    model.attention: unknown feature_map block 'cbma'; did you mean: cbam?
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Callable, ClassVar, Optional, Union

from jsonargparse.typing import register_type
from torch import nn

from .registry import available, create, info, unknown_name_message

NONE = "none"
DOTTED_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


class BlockName(str):
    """A registry name (or a dotted class path), checked when it is made."""

    kind: ClassVar[Optional[str]] = None

    def __new__(cls, value: str) -> BlockName:
        value = str(value)
        names = available(cls.kind)
        if value != NONE and value not in names and not DOTTED_PATH.fullmatch(value):
            what = f"{cls.kind} block" if cls.kind else "attention block"
            raise ValueError(unknown_name_message(value, names, what))
        return super().__new__(cls, value)


class FeatureMapName(BlockName):
    kind = "feature_map"


class SequenceName(BlockName):
    kind = "sequence"


class CrossName(BlockName):
    kind = "cross"


class PoolingName(BlockName):
    kind = "pooling"


class GraphName(BlockName):
    kind = "graph"


class MemoryName(BlockName):
    kind = "memory"


for _name_type in (BlockName, FeatureMapName, SequenceName, CrossName, PoolingName, GraphName, MemoryName):
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


class BlockArgumentsError(ValueError):
    """A block that does not take the arguments its slot gives (it is a block of another kind)."""


class NoAttention(nn.Module):
    """The no-attention baseline (``attention: none``): returns its first input unchanged."""

    def forward(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        return x


def build(spec: Union[str, BlockFactory, None], *args: Any, kind: Optional[str] = None, **kwargs: Any) -> nn.Module:
    """Instantiate a block from a config value; ``args``/``kwargs`` are the model's (width first).

    ``None`` and ``"none"`` give :class:`NoAttention`. With ``kind`` given, a registry
    name of another kind is an error that lists the names of the right kind.
    """
    if spec is None or spec == NONE:
        return NoAttention()
    if callable(spec):
        return _call(spec, spec, kind, *args, **kwargs)
    if spec in available():
        entry = info(spec)
        if kind is not None and entry.kind != kind:
            raise ValueError(
                f"attention block {spec!r} is a {entry.kind} block; this slot takes {kind} blocks: "
                f"{', '.join(available(kind))}"
            )
        return create(spec, *args, **kwargs)
    if DOTTED_PATH.fullmatch(spec):
        module, _, attr = spec.rpartition(".")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as err:
            raise ValueError(f"attention block {spec!r}: cannot import it ({err})") from None
        return _call(factory, spec, kind, *args, **kwargs)
    raise ValueError(unknown_name_message(spec, available(kind), f"{kind} block" if kind else "attention block"))


def _call(factory: BlockFactory, spec: object, kind: Optional[str], *args: Any, **kwargs: Any) -> nn.Module:
    """Build a user's block with the model's arguments; arguments it does not take mean it is a
    block of another kind (a graph slot given ``torch.nn.MultiheadAttention``), said as such."""
    try:
        return factory(*args, **kwargs)
    except TypeError as err:
        name = getattr(spec, "__name__", spec)
        wanted = f"a {kind} block ({', '.join(available(kind))}, or a class taking their arguments)" if kind else "a block"
        raise BlockArgumentsError(f"attention block {name!r} does not take this model's arguments {_signature(args, kwargs)} "
                         f"({err}): the model needs {wanted}") from None


def _signature(args: tuple, kwargs: dict) -> str:
    return "(" + ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())]) + ")"
