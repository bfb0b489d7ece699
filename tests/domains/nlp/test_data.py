"""Tokenisers, the generated data sets, the readers of the real corpora, and the collators."""

from __future__ import annotations

import datetime

import pytest
import torch

from domains.nlp.data import (
    TREC,
    ClassificationCollator,
    DateNormalization,
    GeneratedReviews,
    LabelledText,
    Multi30k,
    TranslationCollator,
    date_pairs,
    read_labelled,
    split_sentences,
)
from domains.nlp.data.dates import FORMATS, human_date_spans, ordinal
from domains.nlp.data.reviews import SENTIMENT, VERDICTS
from domains.nlp.data.tokenization import EOS, PAD, SPECIAL_TOKENS, UNK, train_tokenizer

# --- tokenisers --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["char", "word", "bpe"])
def test_special_tokens_have_fixed_ids_and_the_vocabulary_stays_within_its_bound(kind):
    texts = ["the cat sat on the mat", "a dog sat on a log", "Zwei junge Männer"] * 5
    tokenizer = train_tokenizer(texts, kind, vocab_size=40)
    assert [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert tokenizer.get_vocab_size() <= 40


def test_char_and_bpe_tokenisers_decode_to_the_original_text():
    dates = ["Saturday, 9 May 1998", "09/05/98", "may 9th 98"]
    char = train_tokenizer(dates, "char", vocab_size=64)
    assert [char.decode(char.encode(d).ids) for d in dates] == dates
    assert char.encode("9 May").tokens == ["9", " ", "M", "a", "y"]
    sentences = ["Zwei junge weiße Männer sind im Freien.", "Ein kleines Mädchen klettert."]
    bpe = train_tokenizer(sentences * 3, "bpe", vocab_size=200)
    assert [bpe.decode(bpe.encode(s).ids) for s in sentences] == sentences


def test_word_tokeniser_lowercases_and_maps_unknown_words_to_unk():
    tokenizer = train_tokenizer(["How far is it ?"], "word", vocab_size=50, lowercase=True)
    assert tokenizer.encode("HOW far is Denver ?").tokens == ["how", "far", "is", "<unk>", "?"]


def test_a_vocabulary_smaller_than_the_texts_alphabet_is_refused():
    with pytest.raises(
        ValueError, match=r"data.vocab_size=10 is too small for the bpe tokeniser of these texts: it needs 24 tokens"
    ):
        train_tokenizer(["the quick brown fox jumps"], "bpe", vocab_size=10)


def test_an_unknown_tokeniser_kind_names_the_key():
    with pytest.raises(ValueError, match=r"data.tokenizer must be one of char, word, bpe, got 'sentencepiece'"):
        train_tokenizer(["the quick brown fox"], "sentencepiece", vocab_size=50)


# --- generated data ----------------------------------------------------------------------


def test_human_dates_in_every_format_written_out():
    date = datetime.date(1998, 5, 9)  # a Saturday
    written = [human_date_spans(date, f)[0] for f in FORMATS]
    assert written == [
        "Saturday, 9 May 1998",
        "09/05/98",
        "May 9th 98",
        "9 May 1998",
        "May 9, 1998",
        "09.05.1998",
        "Sat 9 May 1998",
        "9th of May 1998",
        "9 May 98",
        "May 09, 1998",
        "9-May-1998",
        "Saturday 9th May 1998",
    ]
    assert human_date_spans(date, "{mon} {nth} {yy}", lower=True)[0] == "may 9th 98"
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "23rd",
        "31st",
    ]


def test_date_pairs_are_deterministic_distinct_and_correct():
    pairs = date_pairs(300, seed=3)
    assert pairs == date_pairs(300, seed=3) and pairs != date_pairs(300, seed=4)
    assert len({source for source, _ in pairs}) == 300
    for source, target in pairs:
        date = datetime.date.fromisoformat(target)
        assert datetime.date(1950, 1, 1) <= date <= datetime.date(2049, 12, 31)
        assert str(date.day) in source and (f"{date.year % 100:02d}" in source)
    data = DateNormalization(train_size=50, val_size=20, test_size=20)
    data.setup("fit")
    sources = [{s for s, _ in data.split(name)} for name in ("train", "val", "test")]
    assert not (sources[0] & sources[1] or sources[0] & sources[2] or sources[1] & sources[2])


def test_generated_reviews_put_the_label_in_the_verdict_sentence():
    data = GeneratedReviews(train_size=200, val_size=10, test_size=10)
    data.setup("fit")
    assert data.labels() == ["negative", "neutral", "positive"]
    cues = [v.split("{")[0].strip() for v in VERDICTS]
    for text, label in data.split("train"):
        verdicts = [s for s in split_sentences(text) if any(s.startswith(c) for c in cues)]
        assert len(verdicts) == 1
        assert verdicts[0].split()[-2] in SENTIMENT[data.labels()[label]]


# --- real corpora ------------------------------------------------------------------------


def test_trec_reader_gives_the_standard_counts(shared_data):
    data = TREC(root=str(shared_data("TREC")), val_size=500)
    data.setup("fit")
    assert data.labels() == ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    assert (len(data.split("train")), len(data.split("val")), len(data.split("test"))) == (4952, 500, 500)
    every = data.split("train") + data.split("val")
    counts = [sum(label == i for _, label in every) for i in range(6)]
    assert counts == [86, 1162, 1250, 1223, 835, 896]
    assert data.split("test")[0] == ("How far is it from Denver to Aspen ?", data.labels().index("NUM"))
    fine = TREC(root=str(shared_data("TREC")), fine=True)
    fine.setup("fit")
    assert len(fine.labels()) == 50 and "NUM:dist" in fine.labels()


def test_multi30k_reader_gives_aligned_pairs(shared_data):
    data = Multi30k(root=str(shared_data("multi30k")), train_size=100)
    data.setup("fit")
    assert (len(data.split("train")), len(data.split("val")), len(data.split("test"))) == (100, 1014, 1000)
    assert data.split("train")[0] == (
        "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
        "Two young, White males are outside near many bushes.",
    )
    reverse = Multi30k(root=str(shared_data("multi30k")), source_lang="en", target_lang="de", train_size=1)
    reverse.setup("fit")
    assert reverse.split("train")[0][0].startswith("Two young")


def test_missing_data_folder_says_where_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="multi30k"):
        Multi30k(root=str(tmp_path / "nowhere")).setup("fit")


def test_labelled_text_reads_tsv_and_text_plus_label_files(tmp_path):
    (tmp_path / "train.tsv").write_text("pos\tgood film\nneg\tbad film\npos\tgreat\nneg\tawful\n")
    (tmp_path / "test.txt").write_text("fine film\nboring\n")
    (tmp_path / "test.labels").write_text("pos\nneg\n")
    data = LabelledText(
        root=str(tmp_path), splits={"train": ["train.tsv"], "test": ["test.txt", "test.labels"]}, val_size=1
    )
    data.setup("fit")
    assert data.labels() == ["neg", "pos"]
    assert len(data.split("train")) == 3 and len(data.split("val")) == 1
    assert data.split("test") == [("fine film", 1), ("boring", 0)]
    (tmp_path / "bad.tsv").write_text("no tab here\n")
    with pytest.raises(ValueError, match=r"bad.tsv:1: expected 'label<TAB>text'"):
        read_labelled([tmp_path / "bad.tsv"])
    with pytest.raises(ValueError, match="data.splits must name a 'train' split"):
        LabelledText(root=str(tmp_path), splits={"test": ["test.txt"]})


# --- collators ---------------------------------------------------------------------------


def test_classification_batches_are_padded_with_masks_flat_and_by_sentence():
    tokenizer = train_tokenizer(["a b c . d e .", "f"], "word", vocab_size=50)
    flat = ClassificationCollator(tokenizer, max_length=4)([("a b c . d e .", 1), ("f", 0), ("", 0)])
    assert flat["tokens"].shape == (3, 4) and flat["mask"].sum(1).tolist() == [4, 1, 1]
    assert flat["tokens"][2, 0] == UNK and flat["target"].tolist() == [1, 0, 0]
    nested = ClassificationCollator(tokenizer, max_length=8, sentences=True)([("a b c . d e .", 1), ("f", 0)])
    assert nested["tokens"].shape == (2, 2, 4)
    assert nested["mask"].sum(-1).tolist() == [[4, 3], [1, 0]]
    assert (nested["tokens"][~nested["mask"]] == PAD).all()


def test_translation_batches_end_targets_with_eos_and_keep_raw_references():
    tokenizer = train_tokenizer(["9 May 1998", "1998-05-09"], "char", vocab_size=64)
    batch = TranslationCollator(tokenizer, max_length=32)([("9 May 1998", "1998-05-09"), ("98", "1998")])
    assert batch["references"] == ["1998-05-09", "1998"]
    assert batch["target"].shape == (2, 11) and batch["target"][0, -1] == EOS and batch["target"][1, 4] == EOS
    assert batch["mask"].sum(1).tolist() == [10, 2]
    assert tokenizer.decode(batch["target"][0, :-1].tolist()) == "1998-05-09"
    predict = TranslationCollator(tokenizer, max_length=32)([("9 May 1998", None)])
    assert set(predict) == {"tokens", "mask"}
    assert torch.equal(predict["tokens"], batch["tokens"][:1])
