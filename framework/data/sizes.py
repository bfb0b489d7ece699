"""Sizes stated once: a data module states the sizes of its data, the CLI gives them to the model
and the task.

A model's vocabulary, class, item or input-channel count is a fact of the data set, and so are the
meta-paths of a heterogeneous graph (their names, in the data's order). Configs leave
such an argument unset (``None``); when a run starts, the CLI builds the data module first and
fills every unset argument named in :data:`SIZES` from the data module's attribute of that name,
so ``--data.name=CiteSeer`` or ``compare --grid data.name=[Cora,CiteSeer,PubMed]`` needs no
hand-edited sizes. A size given in the config is kept, and checked against the data's when the
run starts (:meth:`framework.tasks.Task.check`).

A data module states a size as an attribute (or property) of the same name: known at
construction (a generated set, a fixed label set) or once ``setup("fit")`` has read the data
(a vocabulary, the classes of a corpus). The CLI runs ``setup("fit")`` first when a size it
needs is not known yet; data modules keep what ``setup`` built, so Lightning's own call later
costs nothing.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Union

from ..errors import ConfigError

#: The sizes a data module may state, as model and task arguments of the same name, and how a size
#: given in a config must compare with the data's: a model's vocabulary may be larger than the
#: data's, the other sizes (and the list of meta-paths) must be equal (:meth:`framework.tasks.Task.check`).
SIZES = {
    "vocab_size": "at least",
    "num_classes": "equal",
    "in_channels": "equal",
    "num_items": "equal",
    "metapaths": "equal",
}


def fill_sizes(arguments: dict[str, MutableMapping[str, Any]], data: Any) -> dict[str, Any]:
    """Fill the unset (``None``) :data:`SIZES` among ``arguments`` from ``data``.

    Args:
        arguments: config section (``"model"``, ``"task"``) -> its init arguments, changed in place.
        data: the data module.

    Returns:
        ``"<section>.<name>" -> value`` for every size filled.

    Raises:
        ConfigError: a size is unset and the data module does not state it, naming the key.
    """
    unset = [
        (section, name) for section, args in arguments.items() for name in SIZES if name in args and args[name] is None
    ]
    if unset and any(stated(data, name) is None for _, name in unset) and hasattr(data, "setup"):
        data.setup("fit")  # the sizes some data modules know only once they have read the data
    filled = {}
    for section, name in unset:
        value = stated(data, name)
        if value is None:
            raise ConfigError(
                f"{section}.{name} is not set and the data ({type(data).__name__}) does not state it: "
                f"set {section}.{name}"
            )
        arguments[section][name] = filled[f"{section}.{name}"] = value
    return filled


def stated(data: Any, name: str) -> Union[int, list[str], None]:
    """What ``data`` states of :data:`SIZES`' ``name``: a count (int), a list of names, or None."""
    value = getattr(data, name, None)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, (list, tuple)) and value and all(isinstance(item, str) for item in value):
        return list(value)
    return None


def require_sizes(owner: str, **sizes: Any) -> None:
    """Raise a one-line :class:`ConfigError` naming ``<owner>.<name>`` for each size left unset
    (None): a model or task built in Python must be given its sizes, which the command line
    fills from the data module (``require_sizes("model", vocab_size=vocab_size)``)."""
    unset = [f"{owner}.{name}" for name, value in sizes.items() if value is None]
    if unset:
        one = len(unset) == 1
        raise ConfigError(
            f"{', '.join(unset)} {'is' if one else 'are'} not set: give {'it' if one else 'them'}, or "
            f"leave {'it' if one else 'them'} to the command line, which takes "
            f"{'it' if one else 'them'} from the data module"
        )
