"""Story data: the bAbI reader (a literal file and the real folder), the generator checked by
replaying its stories, padding and truncation, and errors that name the config key."""

from __future__ import annotations

import re

import pytest
import torch

from domains.memory import BabiStories, GeneratedStories, generate_stories, parse_babi
from domains.memory.data.generated import lexicon
from domains.memory.data.stories import StoryDataset, Vocabulary
from framework.data import DataError, DataNotFoundError

FILE = """1 Mary moved to the bathroom.
2 Sandra journeyed to the bedroom.
3 Mary got the football there.
4 Where is Mary? \tbathroom\t1
5 Mary went back to the garden.
6 Where is the football? \tgarden\t3 5
1 John went to the office.
2 Where is John? \toffice\t1
"""


def test_parse_babi_makes_one_example_per_question_with_the_story_before_it():
    first, second, third = parse_babi(FILE.splitlines(), task=2)
    assert first.story == [
        ["mary", "moved", "to", "the", "bathroom"],
        ["sandra", "journeyed", "to", "the", "bedroom"],
        ["mary", "got", "the", "football", "there"],
    ]
    assert (first.question, first.answer, first.support, first.task) == (["where", "is", "mary"], "bathroom", [0], 2)
    assert len(second.story) == 4 and second.support == [2, 3] and second.answer == "garden"
    assert third.story == [["john", "went", "to", "the", "office"]] and third.support == [0]


@pytest.mark.parametrize(
    "line, problem",
    [
        ("Mary went home.", "expected 'ID sentence' or"),
        ("x Mary went home.", "expected 'ID sentence' or"),
        ("2 Where is Mary?\tbathroom", "expected 'ID sentence' or"),
        ("2 Where is Mary?\t\t1", "expected 'ID sentence' or"),
        ("2 Where is Mary?\tbathroom\t1\t1", "expected 'ID sentence' or"),
        (
            "2 Where is Mary?\tbathroom\t9",
            "supporting ID 9 is out of range: expected the ID of a sentence of this story before the question (1)",
        ),
        ("3 Mary went home.", "line ID 3 follows 1: the IDs count up from 1 in each story"),
    ],
)
def test_parse_babi_names_the_bad_line(line, problem):
    with pytest.raises(DataError, match=re.escape(f"story.txt:2: {problem}")):
        parse_babi(["1 Mary moved to the bathroom.", line], task=1, source="story.txt")


def vocabulary_of(examples):
    return Vocabulary(
        [w for ex in examples for s in [*ex.story, ex.question] for w in s] + [ex.answer for ex in examples]
    )


def test_dataset_keeps_the_most_recent_sentences_and_moves_the_support():
    examples = parse_babi(FILE.splitlines(), task=2)
    vocab = vocabulary_of(examples)
    data = StoryDataset(examples, vocab, memory_size=2)
    assert data.story.shape[1] == 2
    kept = [[vocab.words[i] for i in row if i] for row in data.story[1]]
    assert kept == [["mary", "got", "the", "football", "there"], ["mary", "went", "back", "to", "the", "garden"]]
    assert data.support[1].tolist() == [True, True]
    assert data.support[0].tolist() == [False, False]  # sentence 1 fell out of the window


def test_a_batch_is_cut_to_the_padding_its_examples_use():
    examples = parse_babi(FILE.splitlines(), task=2)
    data = StoryDataset(examples, vocabulary_of(examples), memory_size=50)
    batch = data.__getitems__([2])  # one sentence of five words
    assert batch["story"].shape == (1, 1, 5) and batch["support"].shape == (1, 1) and batch["question"].shape == (1, 3)
    both = data.__getitems__([2, 1])
    assert both["story"].shape == (2, 4, 6) and torch.equal(both["story"][0, :1, :5], batch["story"][0])
    assert torch.equal(both["story"][1], data[1]["story"][:4, :6]) and torch.equal(both["target"], data.target[[2, 1]])


def replay(example):
    """Where the asked person or object is, by following the story word by word."""
    place, holder, lying = {}, {}, {}
    for words in example.story:
        person, rest = words[0], words[1:]
        if rest[-1] in {"kitchen", "garden", "hallway", "bathroom", "office", "bedroom"}:
            place[person] = rest[-1]
        else:
            thing = rest[-2] if rest[-1] == "there" else rest[-1]
            if rest[-1] == "there":
                holder[thing] = person
                lying.pop(thing, None)
            else:
                lying[thing] = place[person]
                holder.pop(thing, None)
    asked = example.question[-1]
    return place[asked] if asked in place else lying.get(asked) or place[holder[asked]]


def test_generated_answers_follow_from_the_stories_and_supports_mention_the_asked():
    examples = generate_stories(300, (1, 2), 2, 12, seed=3)
    assert {ex.task for ex in examples} == {1, 2}
    for ex in examples:
        assert ex.answer == replay(ex)
        assert len(ex.support) == ex.task
        assert any(ex.answer in ex.story[i] for i in ex.support)
        assert any(ex.question[-1] in ex.story[i] for i in ex.support)


def test_generated_splits_are_deterministic_in_the_seed_and_fit_the_lexicon():
    make = lambda seed: GeneratedStories(train_size=50, val_size=10, test_size=10, seed=seed)
    first, again, other = make(0), make(0), make(1)
    for dm in (first, again, other):
        dm.setup("fit")
    assert torch.equal(first.split("train").story, again.split("train").story)
    assert not torch.equal(first.split("train").story[:10], other.split("train").story[:10])
    assert int(first.split("train").story.max()) < len(lexicon()) == 34


def test_babi_reads_the_official_files(shared_data):
    shared_data("babi/tasks_1-20_v1-2/en")
    dm = BabiStories(tasks=2)
    dm.setup("fit")
    assert [len(dm.split(s)) for s in ("train", "val", "test")] == [900, 100, 1000]
    words = dm.vocabulary().words
    assert len(words) == 175
    train = dm.split("train")
    # qa2 train, first question: "Where is the football? garden 3 6"
    first = [" ".join(words[i] for i in row if i) for row in train.story[0] if row.any()]
    assert first[2] == "mary got the football there" and len(first) == 6
    assert train.support[0].nonzero().flatten().tolist() == [2, 5] and words[train.target[0]] == "garden"


def test_babi_joint_truncates_long_stories_to_fifty_sentences(shared_data):
    shared_data("babi/tasks_1-20_v1-2/en")
    dm = BabiStories(tasks=[1, 3], memory_size=50)
    dm.setup("fit")
    train = dm.split("train")
    assert train.story.shape[1] == 50 and set(train.task.tolist()) == {1, 3}
    assert len(dm.split("test")) == 2000


def test_bad_settings_name_the_key():
    """An empty list, and settings that relate two values (a value outside its key's domain is
    refused while parsing: tests/domains/memory/test_training.py)."""
    with pytest.raises(ValueError, match="data.tasks must be bAbI task numbers"):
        BabiStories(tasks=[])
    with pytest.raises(ValueError, match="data.tasks must list generated tasks"):
        GeneratedStories(tasks=[])
    with pytest.raises(ValueError, match="min_sentences <= max_sentences"):
        GeneratedStories(min_sentences=5, max_sentences=2)


def test_a_missing_babi_folder_says_where_to_put_it(tmp_path):
    with pytest.raises(DataNotFoundError, match="data.root"):
        BabiStories(root=str(tmp_path / "nowhere")).setup("fit")
    (tmp_path / "qa1_single-supporting-fact_train.txt").write_text(FILE)
    with pytest.raises(DataNotFoundError, match="lacks 39 of the 40 files"):
        BabiStories(root=str(tmp_path)).setup("fit")
