"""Tokenisers of the NLP domain (the ``tokenizers`` library), trained on a training split.

Every tokeniser has the same four special tokens at fixed ids, so models and decoders can
name them without a tokeniser at hand::

    <pad> = 0   <unk> = 1   <s> = 2 (begin of sequence)   </s> = 3 (end of sequence)

Kinds:

* ``char``: one token per character (spaces included); the date task.
* ``word``: one token per whitespace-separated word (pre-tokenised corpora such as TREC).
* ``bpe``: byte-pair encoding over words marked with ``▁`` (SentencePiece style, so that
  decoding restores the spaces); translation.

A trained tokeniser never has more than ``vocab_size`` tokens (fewer when the corpus has
fewer distinct units), which is what lets a config fix the model's vocabulary before the
tokeniser exists; the one exception is ``bpe`` with a ``vocab_size`` below the number of
distinct characters of the training texts plus the four special tokens (about 107 for
Multi30k), since its trainer keeps every character. Tokenisers travel with checkpoints as their JSON
(``Tokenizer.to_str()``), see :class:`domains.nlp.tasks.TokenizerState`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal, get_args

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from framework.errors import ConfigError
from framework.values import declare

PAD, UNK, BOS, EOS = 0, 1, 2, 3
#: Character ids of token spellings (``data.characters``): a UTF-8 byte b is b + 1, 0 is padding.
CHARACTER_VOCAB = 257
SPECIAL_TOKENS = ("<pad>", "<unk>", "<s>", "</s>")
#: A tokeniser's kind (``data.tokenizer``).
TokenizerKind = Literal["char", "word", "bpe"]
KINDS: tuple[str, ...] = get_args(TokenizerKind)
#: The largest vocabulary a tokeniser may learn (``data.vocab_size``): the special tokens and one more at least.
VocabularySize = declare(
    "VocabularySize",
    int,
    f"an int > {len(SPECIAL_TOKENS)} (the special tokens and one more at least)",
    low=len(SPECIAL_TOKENS) + 1,
)


def _char() -> tuple[Tokenizer, Callable[..., trainers.Trainer]]:
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    return tokenizer, trainers.WordLevelTrainer


def _word() -> tuple[Tokenizer, Callable[..., trainers.Trainer]]:
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tokenizer, trainers.WordLevelTrainer


def _bpe() -> tuple[Tokenizer, Callable[..., trainers.Trainer]]:
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    return tokenizer, trainers.BpeTrainer


_BUILDERS = {"char": _char, "word": _word, "bpe": _bpe}


def check_kind(kind: str, key: str = "data.tokenizer") -> None:
    if kind not in KINDS:
        raise ConfigError(f"{key} must be one of {', '.join(KINDS)}, got {kind!r}")


def train_tokenizer(
    texts: Iterable[str], kind: str, vocab_size: int, lowercase: bool = False, min_frequency: int = 1
) -> Tokenizer:
    """A tokeniser of ``kind`` trained on ``texts``, with at most ``vocab_size`` tokens.

    The special tokens take ids 0-3 (:data:`SPECIAL_TOKENS`); ``lowercase`` adds a
    lower-casing normaliser (NFKC normalisation is always on).
    """
    check_kind(kind)
    if vocab_size <= len(SPECIAL_TOKENS):
        raise ConfigError(f"data.vocab_size must exceed the {len(SPECIAL_TOKENS)} special tokens, got {vocab_size}")
    tokenizer, trainer_class = _BUILDERS[kind]()
    steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if lowercase else [])
    tokenizer.normalizer = normalizers.Sequence(steps)
    trainer = trainer_class(
        vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), min_frequency=min_frequency, show_progress=False
    )
    tokenizer.train_from_iterator(texts, trainer)
    assert [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == [PAD, UNK, BOS, EOS]
    if tokenizer.get_vocab_size() > vocab_size:  # BPE keeps every character of the training texts
        raise ConfigError(
            f"data.vocab_size={vocab_size} is too small for the {kind} tokeniser of these texts: it needs "
            f"{tokenizer.get_vocab_size()} tokens (every character and the special tokens); raise "
            "data.vocab_size (and model.vocab_size) to at least that"
        )
    return tokenizer


def token_names(tokenizer: Tokenizer, ids: Iterable[int]) -> list[str]:
    """The token string of every id (``<unk>`` for ids beyond the tokeniser's vocabulary,
    which an untrained model with a larger ``vocab_size`` may produce)."""
    return [tokenizer.id_to_token(int(i)) or "<unk>" for i in ids]


def tokens_of(tokenizer: Tokenizer, ids: Iterable[int]) -> list[str]:
    """The token strings of ``ids``, up to the first end-of-sequence, without padding."""
    kept = []
    for i in ids:
        if i == EOS:
            break
        if i != PAD:
            kept.append(i)
    return token_names(tokenizer, kept)
