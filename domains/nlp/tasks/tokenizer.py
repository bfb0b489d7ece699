"""The tokeniser (and class names) that a text task keeps in its checkpoint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from tokenizers import Tokenizer


class TokenizerState:
    """Mixin of the text tasks (listed before the Task class): holds the tokeniser that the
    data module trained (and the class names of a classification task) as the module's
    extra state, so that both are saved in every checkpoint, as JSON
    (``Tokenizer.to_str()``) and a list of strings.

    A restored task therefore decodes model outputs on its own
    (``TaskModule.load_from_checkpoint(path).task.tokenizer``), and the data modules of this
    domain encode with the checkpoint's tokeniser instead of training one
    (:meth:`domains.nlp.data.TextData.resolve_tokenizer`).
    """

    tokenizer: Optional[Tokenizer] = None
    labels: Sequence[str] = ()

    def attach(self, tokenizer: Tokenizer, labels: Sequence[str] = ()) -> None:
        """Take the tokeniser (and class names) that the data module built."""
        self.tokenizer, self.labels = tokenizer, list(labels)

    def require_tokenizer(self) -> Tokenizer:
        if self.tokenizer is None:
            raise RuntimeError(
                f"{type(self).__name__} has no tokenizer: it comes from a checkpoint or from a data module of "
                "domains.nlp.data when a trainer runs (or call task.attach(tokenizer))"
            )
        return self.tokenizer

    def get_extra_state(self) -> dict[str, Any]:
        return {"tokenizer": "" if self.tokenizer is None else self.tokenizer.to_str(), "labels": list(self.labels)}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        self.tokenizer = Tokenizer.from_str(state["tokenizer"]) if state.get("tokenizer") else None
        self.labels = list(state.get("labels", []))
