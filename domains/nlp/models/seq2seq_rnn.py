"""Recurrent encoder-decoder with attention: Bahdanau et al. (ICLR 2015) and Luong et al. (EMNLP 2015)."""

from __future__ import annotations

from typing import Literal, Optional, Union

import torch
from torch import Tensor, nn

from framework.attention import CrossBlock, NoAttention, build, weights_over_keys
from framework.attention.cross.alignment import RecurrentAlignment
from framework.attention.cross.pointer import PointerGenerator
from framework.data.sizes import require_sizes
from framework.decoding import State
from framework.errors import ConfigError
from framework.values import Fraction, PositiveInt

from ..data.tokenization import PAD
from .common import query_key_weights
from .recurrent import Cell, RecurrentEncoder, recurrent_cell
from .seq2seq import Seq2SeqOutput

#: Where the decoder attends (``model.style``).
Style = Literal["bahdanau", "luong"]


class RecurrentSeq2Seq(nn.Module):
    """A bidirectional GRU/LSTM encoder and a recurrent decoder that attends its states.

    ``style: bahdanau`` -- the previous decoder state queries the source, the context
    enters the recurrence (one block call per output step)::

        c_t = attend(s_{t-1}, H),   s_t = RNN([E y_{t-1}; c_t], s_{t-1}),
        p(y_t) = softmax(W_o tanh(W_t [s_t; c_t; E y_{t-1}]))

    ``style: luong`` -- the new decoder state queries the source after the recurrence,
    so with teacher forcing all M steps attend in one block call::

        h_t = RNN(E y_{t-1}, h_{t-1}),   c_t = attend(h_t, H),
        p(y_t) = softmax(W_o tanh(W_c [c_t; h_t]))

    ``attend`` is the cross block ``attention`` with the decoder state (B, M, D) as query
    and the encoder states H (B, N, D) as keys and values: ``additive`` (Bahdanau),
    ``dot``, ``general``, ``concat``, ``location`` (Luong, global), ``local_p`` (Luong,
    local-p) or any cross block of the catalogue. ``none`` is the encoder-decoder without
    attention (Cho et al., 2014): the context is the same encoder summary at every step.
    Blocks whose alignment carries over steps (``location_aware``, ``mocha``, ``monotonic``:
    :class:`~framework.attention.cross.alignment.RecurrentAlignment`) keep it in the decoding
    state. The decoder starts from s_0 = tanh(W_b [forward last; backward first]) of the encoder.

    ``copy: true`` adds the copy mechanism of pointer-generator networks (See et al., ACL 2017,
    :class:`~framework.attention.cross.pointer.PointerGenerator`): a gate p_gen on the readout's
    features f_t mixes the vocabulary distribution with the attention over the source tokens,
    P(w) = p_gen softmax(logits)(w) + (1 - p_gen) sum_{i: x_i = w} a_ti, and the model returns
    log P in place of the logits (cross-entropy, argmax and beam search read them unchanged).
    Source and target share the vocabulary, so no extended ids are needed.

    Args:
        vocab_size: the joint source/target vocabulary (one embedding serves both sides).
        dim: D, the decoder state and the encoder output (two directions of D / 2).
        embed_dim: E. cell: ``gru`` or ``lstm``. style: ``bahdanau`` or ``luong``.
        attention: the cross block. dropout: on embeddings and before the output layer.
        copy: add the copy mechanism (needs attention weights over the source tokens).

    Shapes: tokens (B, N) long, mask (B, N) bool, target_in (B, M) long (``<s>`` then the
    target shifted right) -> logits (B, M, V); with ``need_weights=True`` a
    :class:`Seq2SeqOutput` with the alignment (B, M, N).
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        dim: PositiveInt = 128,
        embed_dim: PositiveInt = 64,
        cell: Cell = "gru",
        attention: CrossBlock = "additive",
        style: Style = "bahdanau",
        dropout: Fraction = 0.1,
        copy: bool = False,
    ) -> None:
        require_sizes("model", vocab_size=vocab_size)
        super().__init__()
        self.vocab_size, self.style, self.cell = vocab_size, style, cell
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.encoder = RecurrentEncoder(embed_dim, dim, cell)
        self.bridge = nn.Linear(dim, dim)
        self.attention = build(attention, dim, dim, kind="cross")
        bahdanau = style == "bahdanau"
        self.rnn = recurrent_cell(cell)(embed_dim + (dim if bahdanau else 0), dim, batch_first=True)
        self.readout = nn.Linear(2 * dim + (embed_dim if bahdanau else 0), dim)
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(dim, vocab_size)
        self.copy = None
        if copy:
            if isinstance(self.attention, NoAttention) or not getattr(self.attention, "key_positions", True):
                raise ConfigError(
                    f"model.copy needs attention weights over the source tokens; model.attention={attention!r} "
                    "has none (no attention, or weights over areas)"
                )
            self.copy = PointerGenerator(self.readout.in_features)

    def start(self, tokens: Tensor, mask: Tensor) -> State:
        """Encode the source: memory (B, N, D), its mask, the summary and the first decoder state."""
        memory, final = self.encoder(self.dropout(self.embed(tokens)), mask)
        summary = self.bridge(final)
        state = {"memory": memory, "mask": mask, "summary": summary, "hidden": torch.tanh(summary)}
        if self.cell == "lstm":
            state["cell"] = torch.zeros_like(summary)
        if isinstance(self.attention, RecurrentAlignment):
            state["alignment"] = self.attention.initial_state(mask)
        if self.copy is not None:
            state["tokens"] = tokens
        return state

    def _attend(self, query: Tensor, state: State, want: bool) -> tuple[Tensor, Optional[Tensor], State]:
        """Context (B, M, D) for queries (B, M, D), the (B, M, N) weights over the source tokens
        when wanted, and the state (with the alignment a recurrent alignment carries on)."""
        memory, mask = state["memory"], state["mask"]
        if isinstance(self.attention, NoAttention):
            return state["summary"].unsqueeze(1).expand_as(query), None, state
        if isinstance(self.attention, RecurrentAlignment):
            context, weights, alignment = self.attention.attend(
                query, memory, key_padding_mask=mask, state=state["alignment"]
            )
            return context, query_key_weights(weights) if want else None, dict(state, alignment=alignment)
        result = self.attention(query, memory, key_padding_mask=mask, need_weights=want)
        if not want:
            return result, None, state
        weights = weights_over_keys(self.attention, result[1], memory.shape[1])  # area attention's areas folded
        return result[0], query_key_weights(weights), state

    def _recur(self, inputs: Tensor, state: State) -> tuple[Tensor, State]:
        """Run the decoder RNN over inputs (B, M, *) from the state's hidden (and cell) state."""
        hidden = state["hidden"].unsqueeze(0)
        hx = (hidden, state["cell"].unsqueeze(0)) if self.cell == "lstm" else hidden
        outputs, hx = self.rnn(inputs, hx)
        new = dict(state, hidden=(hx[0] if self.cell == "lstm" else hx)[0])
        if self.cell == "lstm":
            new["cell"] = hx[1][0]
        return outputs, new

    def decode(
        self, state: State, inputs: Tensor, need_weights: bool = False
    ) -> tuple[Tensor, Optional[Tensor], State]:
        """Logits (B, M, V) (log-probabilities with ``copy``) for decoder inputs (B, M), the
        (B, M, N) weights when wanted, the next state."""
        embedded = self.dropout(self.embed(inputs))
        want = need_weights or self.copy is not None
        if self.style == "luong":
            outputs, state = self._recur(embedded, state)
            context, weights, state = self._attend(outputs, state, want)
            features = torch.cat([context, outputs], dim=-1)
        else:
            steps, step_weights = [], []
            for t in range(inputs.shape[1]):
                context, weights, state = self._attend(state["hidden"].unsqueeze(1), state, want)
                output, state = self._recur(torch.cat([embedded[:, t : t + 1], context], dim=-1), state)
                steps.append(torch.cat([output, context, embedded[:, t : t + 1]], dim=-1))
                step_weights.append(weights)
            features = torch.cat(steps, dim=1)
            weights = torch.cat(step_weights, dim=1) if want and step_weights[0] is not None else None
        logits = self.output(self.dropout(torch.tanh(self.readout(features))))
        if self.copy is not None:
            logits = self.copy(features, weights, state["tokens"], logits, key_padding_mask=state["mask"])
        return logits, weights, state

    def step(self, state: State, previous: Tensor) -> tuple[Tensor, State]:
        """One decoding step: logits (B, V) of the next token after ``previous`` (B,)."""
        logits, _, state = self.decode(state, previous.unsqueeze(1))
        return logits[:, 0], state

    def forward(
        self, tokens: Tensor, mask: Tensor, target_in: Tensor, need_weights: bool = False
    ) -> Union[Tensor, Seq2SeqOutput]:
        logits, weights, _ = self.decode(self.start(tokens, mask), target_in, need_weights)
        return Seq2SeqOutput(logits, weights) if need_weights else logits
