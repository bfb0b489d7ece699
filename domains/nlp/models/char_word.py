"""A text classifier that reads words and their characters: dynamic meta-embeddings over a word
table and hashed character n-grams, and a read-out by capsules, by attention-via-attention
(words, then the characters they point to) or by self-attentive pooling."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, Optional, Union, get_args

import torch
from torch import Tensor, nn

from framework.attention import build
from framework.attention.cross.score import ScoreName
from framework.data.sizes import require_sizes
from framework.errors import ConfigError
from framework.layers import masked_mean
from framework.values import Fraction, PositiveInt

from ..data.tokenization import CHARACTER_VOCAB, PAD
from .common import ClassifierOutput, uniform_weights
from .recurrent import RecurrentEncoder

#: The token representations the classifier can embed with, its read-outs, and how it combines representations.
Embedding = Literal["word", "ngrams"]
Readout = Literal["pooling", "capsule", "attention_via_attention", "none"]
Combination = Literal["meta_embedding", "concat"]
EMBEDDINGS: tuple[str, ...] = get_args(Embedding)

#: Word-boundary marks around a word's bytes for its n-grams (the byte ids are 1 .. 256).
BEGIN, END = CHARACTER_VOCAB, CHARACTER_VOCAB + 1


class CapsuleOutput(NamedTuple):
    """What capsule training needs (``domains.nlp.CapsuleClassification``): the capsules'
    probabilities p (B, C), reconstructions r (B, C, D) and the average of the states they
    attended, fbar (B, D)."""

    probabilities: Tensor
    reconstructions: Tensor
    summary: Tensor


def character_ngrams(chars: Tensor, n: int, buckets: int) -> tuple[Tensor, Tensor]:
    """Hashed character n-grams of each word, fastText style: the bytes between a begin and an
    end mark, every window of n, hashed into ``buckets`` ids.

    Shapes: chars (B, N, C) long (byte + 1, 0 = padding) -> ids (B, N, C + 3 - n) long and
    valid (B, N, C + 3 - n) bool (windows inside the marked word).
    """
    lengths = chars.ne(PAD).sum(-1, keepdim=True)
    marked = torch.cat([torch.full_like(chars[..., :1], BEGIN), chars, torch.zeros_like(chars[..., :1])], -1)
    marked = marked.scatter(-1, lengths + 1, END)  # the end mark after the last byte
    windows = marked.unfold(-1, n, 1)  # (B, N, C + 3 - n, n)
    valid = windows.ne(PAD).all(-1)
    ids = torch.zeros_like(windows[..., 0])
    for k in range(n):  # a polynomial hash of the window's ids, kept small so it never overflows
        ids = (ids * (CHARACTER_VOCAB + 2) + windows[..., k]) % buckets
    return ids, valid


class CharacterWordClassifier(nn.Module):
    """Words and characters, a BiLSTM over the tokens, an attentive read-out, a linear head.

    ::

        x_t = meta_embedding(E_word w_t, mean of E_ngram over w_t's character n-grams)   (``embeddings``)
        H   = BiLSTM(x)                                                                  (B, N, D)
        read-out (``attention``):
          pooling                   s = sum_t softmax_t(u^T tanh(W h_t + b)) h_t
          capsule                   one capsule per class over H; the class scores are p_c
          attention_via_attention   c_w = attend(q, H), c_c = attend([q; c_w], characters),
                                    s = [c_w; c_c], q learned, characters = a convolution
                                    (width 3, ReLU) over each word's byte embeddings
          none                      s = mean_t h_t
        logits = W s + b

    With one embedding set there is nothing to combine; with several, ``combine`` is the
    ``meta_embedding`` block (Kiela et al.'s DME, the default) or ``concat`` (the baseline:
    the projected sets concatenated). The n-gram set and ``attention_via_attention`` read the
    batch's ``chars`` (the data's ``characters: C``).

    Args:
        vocab_size, num_classes: sizes of the vocabulary and of the output.
        embed_dim: the features of the (meta-)embedding of a token.
        dim: D of the BiLSTM (two directions of D / 2).
        embeddings: the token representations, a list of ``word`` (a learned table) and
            ``ngrams`` (hashed character n-grams, their mean).
        combine: how several representations become one (``meta_embedding`` or ``concat``).
        ngram: n of the character n-grams; ngram_buckets: hash buckets.
        attention: the read-out, one of :data:`Readout`.
        char_dim: features of the byte embeddings and character states (``attention_via_attention``).
        score: the score function of ``attention_via_attention`` (``additive``, ``deep`` ...).
        score_kwargs: its options (``hidden``, ``layers`` ...), passed through to the score function.
        dropout: on the token features and before the head.

    Shapes: tokens (B, N) long, mask (B, N) bool (True = token), chars (B, N, C) long
    -> logits (B, K) (the capsules' p for ``capsule``); with ``need_weights=True`` a
    :class:`ClassifierOutput` (token weights: the read-out's weights over the tokens, capsules
    averaged); with ``capsules=True`` a :class:`CapsuleOutput`.
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        num_classes: Optional[PositiveInt] = None,
        embed_dim: PositiveInt = 64,
        dim: PositiveInt = 128,
        embeddings: Sequence[Embedding] = ("word", "ngrams"),
        combine: Combination = "meta_embedding",
        ngram: PositiveInt = 3,
        ngram_buckets: PositiveInt = 4096,
        attention: Readout = "capsule",
        char_dim: PositiveInt = 32,
        score: ScoreName = "additive",
        score_kwargs: Optional[dict[str, Any]] = None,
        dropout: Fraction = 0.3,
    ) -> None:
        require_sizes("model", vocab_size=vocab_size, num_classes=num_classes)
        super().__init__()
        embeddings = list(embeddings)
        if not embeddings or len(set(embeddings)) < len(embeddings):
            raise ConfigError(f"model.embeddings must be distinct names of {EMBEDDINGS}, got {embeddings}")
        self.vocab_size, self.num_classes = vocab_size, num_classes
        self.embedding_names, self.readout = embeddings, attention
        self.ngram, self.ngram_buckets = ngram, ngram_buckets
        self.needs_chars = "ngrams" in embeddings or attention == "attention_via_attention"
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD) if "word" in embeddings else None
        self.ngrams = nn.Embedding(ngram_buckets, embed_dim) if "ngrams" in embeddings else None
        self.combine: Optional[nn.Module] = None
        if len(embeddings) > 1:
            widths = [embed_dim] * len(embeddings)
            self.combine = (
                build("meta_embedding", embed_dim, embedding_dims=widths, kind="pooling", forms=("embedding sets",))
                if combine == "meta_embedding"
                else nn.Linear(sum(widths), embed_dim)
            )
        self.dropout = nn.Dropout(dropout)
        self.encoder = RecurrentEncoder(embed_dim, dim, "lstm")
        width = dim
        self.query: Optional[nn.Parameter] = None
        self.chars_embed: Optional[nn.Embedding] = None
        if attention == "pooling":
            self.attention = build("pooling", dim, kind="pooling")
        elif attention == "capsule":
            self.attention = build("capsule", dim, num_capsules=num_classes, kind="pooling", forms=("class capsules",))
        elif attention == "attention_via_attention":
            self.query = nn.Parameter(torch.randn(dim) / dim**0.5)
            self.chars_embed = nn.Embedding(CHARACTER_VOCAB, char_dim, padding_idx=PAD)
            self.char_encoder = nn.Conv1d(char_dim, char_dim, 3, padding=1)
            self.attention = build(
                "attention_via_attention",
                dim,
                dim,
                char_dim,
                score=score,
                score_kwargs=score_kwargs,
                kind="cross",
                forms=("words and characters",),
            )
            width = dim + char_dim
        else:
            self.attention = None
        self.head = None if attention == "capsule" else nn.Linear(width, num_classes)

    def _tokens(self, tokens: Tensor, chars: Optional[Tensor]) -> Tensor:
        """The token features (B, N, embed_dim): one set, the meta-embedding or the concatenation."""
        sets = []
        if self.embed is not None:
            sets.append(self.embed(tokens))
        if self.ngrams is not None:
            ids, valid = character_ngrams(chars, self.ngram, self.ngram_buckets)
            sets.append(masked_mean(self.ngrams(ids), valid))
        if self.combine is None:
            return sets[0]
        if isinstance(self.combine, nn.Linear):
            return self.combine(torch.cat(sets, -1))
        return self.combine(*sets)

    def _characters(self, chars: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Character states (B, N C, char_dim), a convolution over each word's bytes, and their mask."""
        b, n, c = chars.shape
        char_mask = chars.ne(PAD) & mask.unsqueeze(-1)
        embedded = self.chars_embed(chars.reshape(b * n, c)).transpose(1, 2)  # (B N, char_dim, C)
        states = torch.relu(self.char_encoder(embedded)).transpose(1, 2) * char_mask.reshape(b * n, c, 1)
        return states.reshape(b, n * c, -1), char_mask.reshape(b, n * c)

    def forward(
        self,
        tokens: Tensor,
        mask: Tensor,
        chars: Optional[Tensor] = None,
        need_weights: bool = False,
        capsules: bool = False,
    ) -> Union[Tensor, ClassifierOutput, CapsuleOutput]:
        if self.needs_chars and (chars is None or chars.shape[:2] != tokens.shape):
            got = "none" if chars is None else tuple(chars.shape)
            raise ValueError(
                f"CharacterWordClassifier: embeddings {self.embedding_names} with attention "
                f"{self.readout!r} read the characters of the tokens, chars (B, N, C) with (B, N) = "
                f"{tuple(tokens.shape)}; got {got} (set data.characters, e.g. 16)"
            )
        if capsules and self.readout != "capsule":
            raise ValueError(
                f"CharacterWordClassifier: capsules=True needs model.attention=capsule, got {self.readout!r}"
            )
        states, _ = self.encoder(self.dropout(self._tokens(tokens, chars)), mask)
        rows: Optional[Tensor] = None
        if self.readout == "capsule":
            result = self.attention(states, mask, need_weights=need_weights)
            (p, r), rows = (result.output, result.weights) if need_weights else (result, None)
            if capsules:
                return CapsuleOutput(p, r, masked_mean(states, mask))
            logits = p
        else:
            if self.readout == "pooling":
                result = self.attention(states, mask, need_weights=need_weights)
            elif self.readout == "attention_via_attention":
                characters, char_mask = self._characters(chars, mask)
                query = self.query.expand(states.shape[0], -1)
                result = self.attention(query, states, characters, mask, char_mask, need_weights=need_weights)
            else:
                result = masked_mean(states, mask)
            summary = result.output if need_weights and self.attention is not None else result
            logits = self.head(self.dropout(summary))
            if need_weights and self.attention is not None:
                rows = result.weights if self.readout == "pooling" else result.weights[0].unsqueeze(1)
        if not need_weights:
            return logits
        weights = uniform_weights(mask, logits.dtype) if rows is None else rows.mean(1)
        return ClassifierOutput(logits, weights)
