"""Listen, attend and spell over spoken digit strings: a subsampling encoder of log-mel frames and
an attention decoder that emits one token per step (Chan, Jaitly, Le & Vinyals, ICASSP 2016;
with Chorowski et al.'s location-aware attention, NeurIPS 2015)."""

from __future__ import annotations

from typing import NamedTuple, Optional, Union

import torch
from torch import Tensor, nn

from framework.attention import CrossBlock, NoAttention, build
from framework.attention.cross.alignment import RecurrentAlignment
from framework.decoding import State
from framework.errors import ConfigError
from framework.layers import run_packed
from framework.values import Fraction, NonNegativeInt, PositiveInt

from .frames import shrink_mask
from .frontend import Frontend
from .transformer import ConvSubsampling


class RecognizerOutput(NamedTuple):
    """Logits (B, M, V) and the alignment (B, M, N') of each output step over the encoder frames."""

    logits: Tensor
    alignment: Tensor


class PyramidalEncoder(nn.Module):
    """The listener: a convolutional stem, a bidirectional GRU, then pyramidal layers that join
    every two adjacent frames before their bidirectional GRU (Chan et al.'s pBLSTM)::

        h^0 = BiGRU(ConvSubsampling(features))               (B, N / 2^s, D)
        h^l = BiGRU([h^{l-1}_{2t}; h^{l-1}_{2t+1}])           (B, N / 2^(s+l), D)

    Args:
        num_features: F of the front end. dim: D (each direction D / 2).
        stem_layers: s, stride-2 convolutions of the stem. pyramid_layers: halvings after it.
        stem_channels: the stem's channels.

    Shapes: features (B, F, N), mask (B, N) or None -> states (B, N', D), mask (B, N') or None,
    N' = ceil(N / 2^s) / 2^l (an odd frame at the end of a layer is dropped).
    """

    def __init__(
        self,
        num_features: PositiveInt,
        dim: PositiveInt,
        stem_layers: NonNegativeInt = 1,
        pyramid_layers: NonNegativeInt = 1,
        stem_channels: PositiveInt = 16,
    ) -> None:
        super().__init__()
        if dim % 2:
            raise ConfigError(f"model.dim must be even (two directions of dim / 2), got {dim}")
        self.stem = ConvSubsampling(num_features, dim, stem_channels, stem_layers)
        self.layers = nn.ModuleList(
            nn.GRU(dim if i == 0 else 2 * dim, dim // 2, batch_first=True, bidirectional=True)
            for i in range(pyramid_layers + 1)
        )

    def forward(self, features: Tensor, mask: Optional[Tensor]) -> tuple[Tensor, Optional[Tensor]]:
        x, mask = self.stem(features, mask)
        for i, layer in enumerate(self.layers):
            if i:  # join pairs of frames: (B, N, D) -> (B, N // 2, 2 D)
                pairs = x.shape[1] // 2
                x = x[:, : 2 * pairs].reshape(x.shape[0], pairs, 2 * x.shape[2])
                mask = shrink_mask(mask, 2, pairs)
            x = layer(x)[0] if mask is None else run_packed(layer, x, mask.sum(1))[0]
        return x, mask


class ListenAttendSpell(nn.Module):
    """An attention-based recogniser: the listener encodes the spectrogram, the speller attends
    its frames once per output token.

    ::

        H = PyramidalEncoder(Frontend(waveform))                       (B, N', D)
        c_i, a_i = attend(s_{i-1}, H, a_{i-1})                          the cross block ``attention``
        s_i = GRU([E y_{i-1}; c_i], s_{i-1})
        p(y_i) = softmax(W_o tanh(W [s_i; c_i]))

    ``attention`` is any cross block: ``location_aware`` (Chorowski et al., the default: it
    reads where it attended at the previous step), ``mocha`` (monotonic chunkwise, which
    decodes online), ``additive`` (content only) ... Blocks whose alignment carries over steps
    keep it in the decoding state. s_0 = tanh(W_0 mean(H)).

    Args:
        vocab_size: V (tokens of :mod:`domains.audio.data.digit_strings`, 13).
        frontend: the waveform front end (default :class:`Frontend` ()).
        dim: D, the encoder states and the decoder state.
        embed_dim: E. stem_layers, pyramid_layers: the listener's time reduction (2^(s + l)).
        attention: the cross block. dropout: on the embeddings and before the output layer.

    Shapes: waveform (B, T), lengths (B,), target_in (B, M) (``<s>`` then the target shifted
    right) -> logits (B, M, V); with ``need_weights=True`` a :class:`RecognizerOutput`.
    ``start``/``step`` decode one token at a time (:mod:`framework.decoding`).
    """

    def __init__(
        self,
        vocab_size: PositiveInt = 13,
        frontend: Optional[Frontend] = None,
        dim: PositiveInt = 128,
        embed_dim: PositiveInt = 32,
        stem_layers: NonNegativeInt = 1,
        pyramid_layers: NonNegativeInt = 1,
        attention: CrossBlock = "location_aware",
        dropout: Fraction = 0.1,
    ) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.frontend = frontend or Frontend()
        self.encoder = PyramidalEncoder(self.frontend.num_features, dim, stem_layers, pyramid_layers)
        self.attention = build(attention, dim, dim, kind="cross")
        if isinstance(self.attention, NoAttention):
            raise ConfigError(
                "model.attention: the recogniser reads the frames only through attention; none is not an option"
            )
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.bridge = nn.Linear(dim, dim)
        self.rnn = nn.GRUCell(embed_dim + dim, dim)
        self.readout = nn.Linear(2 * dim, dim)
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(dim, vocab_size)

    def start(self, waveform: Tensor, lengths: Optional[Tensor] = None) -> State:
        """Encode the waveforms: frames (B, N', D), their mask, the first decoder state (and alignment)."""
        features, mask = self.frontend(waveform, lengths)
        memory, mask = self.encoder(features, mask)
        if mask is None:
            mask = torch.ones(memory.shape[:2], dtype=torch.bool, device=memory.device)
        average = (memory * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        state = {"memory": memory, "mask": mask, "hidden": torch.tanh(self.bridge(average))}
        if isinstance(self.attention, RecurrentAlignment):
            state["alignment"] = self.attention.initial_state(mask)
        return state

    def _attend(self, state: State, want: bool) -> tuple[Tensor, Optional[Tensor], State]:
        """The context (B, D) of the decoder state, its weights (B, N') when wanted, the state."""
        query, memory, mask = state["hidden"], state["memory"], state["mask"]
        if isinstance(self.attention, RecurrentAlignment):
            context, weights, alignment = self.attention.attend(
                query.unsqueeze(1), memory, key_padding_mask=mask, state=state["alignment"]
            )
            weights = weights.reshape(len(query), -1, weights.shape[-1]).mean(1)  # heads averaged, one step
            return context[:, 0], weights, dict(state, alignment=alignment)
        result = self.attention(query, memory, key_padding_mask=mask, need_weights=want)
        if not want:
            return result, None, state
        weights = result[1]
        return result[0], weights.reshape(len(query), -1, weights.shape[-1]).mean(1), state

    def decode(
        self, state: State, inputs: Tensor, need_weights: bool = False
    ) -> tuple[Tensor, Optional[Tensor], State]:
        """Logits (B, M, V) for decoder inputs (B, M), the (B, M, N') weights when wanted, the next state."""
        embedded = self.dropout(self.embed(inputs))
        steps, alignment = [], []
        for t in range(inputs.shape[1]):
            context, weights, state = self._attend(state, need_weights)
            hidden = self.rnn(torch.cat([embedded[:, t], context], dim=-1), state["hidden"])
            state = dict(state, hidden=hidden)
            steps.append(torch.cat([hidden, context], dim=-1))
            alignment.append(weights)
        logits = self.output(self.dropout(torch.tanh(self.readout(torch.stack(steps, dim=1)))))
        return logits, torch.stack(alignment, dim=1) if need_weights else None, state

    def step(self, state: State, previous: Tensor) -> tuple[Tensor, State]:
        """One decoding step: logits (B, V) of the next token after ``previous`` (B,)."""
        logits, _, state = self.decode(state, previous.unsqueeze(1))
        return logits[:, 0], state

    def forward(
        self, waveform: Tensor, lengths: Optional[Tensor], target_in: Tensor, need_weights: bool = False
    ) -> Union[Tensor, RecognizerOutput]:
        logits, weights, _ = self.decode(self.start(waveform, lengths), target_in, need_weights)
        return RecognizerOutput(logits, weights) if need_weights else logits
