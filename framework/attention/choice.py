"""A model's attention blocks, found once for every tool that chooses among them (capture,
ablation, block ablation, the tasks' evaluation hooks).

A block is a module with a ``block_name`` (every :class:`~framework.attention.AttentionBlock`);
blocks are named by their module names ("" for the model itself) and chosen with glob patterns
over those names or with registry names: ``"encoder.layers.*.attention"``, ``"mhsa"``.
"""

from __future__ import annotations

from fnmatch import fnmatch

from torch import nn


def blocks_in(model: nn.Module, *patterns: str, outermost: bool = False) -> dict[str, nn.Module]:
    """The attention blocks of ``model`` by module name, in module order: all of them (nested ones
    included), or with ``outermost`` only those inside no other block (MemN2N's ``read``, not the
    scorer inside it); with ``patterns`` those that match one.

    Raises:
        ValueError: ``patterns`` match no block; the message names the model's blocks.
    """
    found: dict[str, nn.Module] = {}
    for name, module in model.named_modules():
        if not hasattr(module, "block_name"):
            continue
        if outermost and any(not outer or name.startswith(f"{outer}.") for outer in found):
            continue
        found[name] = module
    chosen = {
        name: m
        for name, m in found.items()
        if not patterns or any(fnmatch(name, p) or p == m.block_name for p in patterns)
    }
    if patterns and not chosen:
        listed = ", ".join(f"{name or '<root>'} ({m.block_name})" for name, m in found.items()) or "none"
        raise ValueError(f"no attention block matches {list(patterns)}; blocks in the model: {listed}")
    return chosen
