"""The titles of the option groups in the help of the commands built on the CLI.

jsonargparse titles a config section's group with the first line of its class's docstring ("Base
class of tasks. One step (:meth:`step`), the same for every task::"); the help shows instead what
each section of a run's config sets, from :data:`TITLES`.
"""

from __future__ import annotations

from jsonargparse import ArgumentParser

#: A section of the config -> the title of its group of options.
TITLES: dict[str, str] = {
    "trainer": "trainer: Lightning's Trainer (epochs, devices, precision, loggers, callbacks ...)",
    "model": "model: the network, any nn.Module (class_path and init_args; --model.attention swaps the block)",
    "task": "task: loss, metrics and predictions (a framework.tasks.Task)",
    "data": "data: the data module and its splits",
    "checkpoint": "checkpoint: best.ckpt and last.ckpt (the monitored metric and its mode come from the task)",
    "attention_maps": "attention_maps: pictures of the blocks' attention and the task's, to every logger",
    "attention_stats": "attention_stats: statistics of the blocks' attention rows, every validation",
    "attention_collapse": "attention_collapse: a warning when a head's attention collapses",
    "early_stopping": "early_stopping: stop when the monitored metric stops improving (off until patience is set)",
    "resume": "resume: resume points within long epochs",
    "optimizer": "optimizer: any torch.optim.Optimizer (default: AdamW)",
    "lr_scheduler": "lr_scheduler: the learning-rate schedule (default: none)",
    "fit": "fit: the checkpoint a fit resumes",
    "validate": "validate: the checkpoint validated",
    "test": "test: the checkpoint tested",
    "predict": "predict: the checkpoint that predicts",
}


def retitle(parser: ArgumentParser) -> None:
    """Give the groups of ``parser`` and of its subcommands' parsers their titles (a section
    :data:`TITLES` does not name is titled by its key; tests/test_console.py checks there is none)."""
    for each in (parser, *sections(parser)):
        for key, group in each.groups.items():
            group.title = TITLES.get(key, key)


def sections(parser: ArgumentParser) -> list[ArgumentParser]:
    """The parsers of ``parser``'s subcommands (none without subcommands)."""
    action = getattr(parser, "_subcommands_action", None)
    return list(action._name_parser_map.values()) if action is not None else []
