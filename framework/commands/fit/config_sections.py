"""A config section that names another class starts from that class's defaults.

jsonargparse keeps a section's ``init_args`` that a new class also accepts when a later config
or flag gives the section another ``class_path`` (``--data=<another data config>`` would keep
the first data set's ``min_user_interactions`` for the new one, said nowhere). Mixing two
classes' arguments is never what a user asked for: here the old section's arguments are all
dropped, and the new class gets its own defaults and what the new config or flags give it.
Later configs and flags for the *same* class still merge key by key.
"""

from __future__ import annotations

from typing import Any

from jsonargparse import _typehints


def discard_all_init_args_on_class_change(parser_or_action: Any, prev_val: Any, value: Any) -> None:
    """Drop every ``init_args`` entry of ``prev_val`` when ``value`` names another class."""
    if prev_val and "init_args" in prev_val and prev_val["class_path"] != value["class_path"]:
        init_args = _typehints.subclass_spec_as_namespace(prev_val).init_args
        for key in list(init_args.keys()):
            init_args.pop(key)


def install() -> None:
    """Make every parser of this process start a section afresh when its class changes."""
    _typehints.discard_init_args_on_class_path_change = discard_all_init_args_on_class_change
