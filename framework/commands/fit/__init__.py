"""``python -m framework fit|validate|test|predict``: the training command line (:mod:`.cli`), and
the checks of its configs before and while they are parsed: the ``--config`` files
(:mod:`.config_files`), sections that change class (:mod:`.config_sections`) and the trainer's,
optimizer's and schedule's values (:mod:`.config_values`). The other commands build on its CLI."""

from .cli import FrameworkCLI, instantiate_data, main, resolve_run_values, run_command
from .config_values import check_machine

__all__ = ["FrameworkCLI", "check_machine", "instantiate_data", "main", "resolve_run_values", "run_command"]
