"""The question-answering task: per-task metrics against counts by hand, the hop picture,
the linear-start callback's decisions, and a clear error for a vocabulary mismatch."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from domains.memory import AnswerMetric, GeneratedStories, LinearStart, MemN2N, QuestionAnswering
from domains.memory.data.generated import lexicon
from domains.memory.pictures import SUPPORT_COLOUR, hop_image
from tests.conftest import on
from tests.image_logger import readable


def logits_for(answers):
    return torch.nn.functional.one_hot(torch.tensor(answers), 5).float()


def test_per_task_and_mean_error_match_counts_by_hand():
    # task 1: 3 questions, 1 wrong; task 4: 1 question, right; task 7 never asked.
    answers, asked = torch.tensor([1, 2, 3, 4]), torch.tensor([1, 1, 1, 4])
    logits = logits_for([1, 2, 0, 4])
    tasks = [1, 4, 7]
    figures = {}
    for figure in ("acc", "error", "mean_error", 1, 4, 7):
        metric = AnswerMetric(tasks, figure)
        metric.update(logits[:2], answers[:2], asked[:2])  # two batches
        metric.update(logits[2:], answers[2:], asked[2:])
        figures[figure] = float(metric.compute())
    assert figures["acc"] == pytest.approx(3 / 4) and figures["error"] == pytest.approx(1 / 4)
    assert figures[1] == pytest.approx(1 / 3) and figures[4] == 0.0
    assert figures["mean_error"] == pytest.approx((1 / 3 + 0) / 2)  # over the asked tasks only
    assert figures[7] != figures[7]  # NaN: no question of task 7


def test_a_task_the_metric_does_not_know_is_an_error_naming_the_key():
    with pytest.raises(ValueError, match=r"task 3, but task.tasks = \[1, 2\]"):
        AnswerMetric([1, 2], "acc").update(logits_for([1]), torch.tensor([1]), torch.tensor([3]))


def test_task_logs_overall_and_per_task_figures():
    names = set(QuestionAnswering([1, 2, 20]).metrics().keys())
    assert names == {"acc", "error", "mean_error", "error_task1", "error_task2", "error_task20"}
    with pytest.raises(ValueError, match="task.tasks must be distinct task numbers"):
        QuestionAnswering([1, 1])


def test_hop_image_reads_the_story_down_its_sentences_and_marks_the_supporting_facts():
    weights = torch.tensor([[0.1, 0.7, 0.2], [0.0, 0.1, 0.9]])
    sentences = ["mary went to the garden", "john took the milk", "john went to the office"]
    fig = hop_image(weights, torch.tensor([False, True, True]), sentences, "a story")
    readable(fig)
    ax = fig.axes[0]
    assert (ax.images[0].get_array() == weights.T.numpy()).all() and ax.get_xlabel() == "hop"
    labels = ax.get_yticklabels()
    assert [label.get_text() for label in labels] == [sentences[0], f"{sentences[1]} *", f"{sentences[2]} *"]
    assert [label.get_color() for label in labels] == ["black", SUPPORT_COLOUR, SUPPORT_COLOUR]
    numbered = hop_image(weights, torch.tensor([False, True, True]), title="no vocabulary")
    assert [label.get_text() for label in numbered.axes[0].get_yticklabels()] == ["1", "2 *", "3 *"]


@pytest.fixture(scope="module")
def generated_batch():
    dm = GeneratedStories(train_size=32, val_size=8, test_size=8)
    dm.setup("fit")
    return next(iter(dm.val_dataloader()))


def test_images_draw_the_first_validation_question_with_its_story_in_words(generated_batch, device):
    batch = on(device, generated_batch)
    task, model = QuestionAnswering(), MemN2N(34).eval()
    task.check(model, GeneratedStories(train_size=8, val_size=4, test_size=4))  # reads the vocabulary
    (fig,) = task.images(on(device, model), batch)["memory_hops"]
    readable(fig)
    sentences = int(generated_batch["story"][0].ne(0).any(-1).sum())
    assert fig.axes[0].images[0].get_array().shape == (sentences, 3)  # the real sentences by MemN2N's three hops
    words = lexicon().words
    first = " ".join(words[i] for i in generated_batch["story"][0, 0].tolist() if i)
    assert fig.axes[0].get_yticklabels()[0].get_text().rstrip(" *") == first
    question = " ".join(words[i] for i in generated_batch["question"][0].tolist() if i)
    assert f"question: {question}? answer {words[int(generated_batch['target'][0])]}" in fig._suptitle.get_text()
    assert QuestionAnswering().images(on(device, MemN2N(34, attention="none")), batch) == {}


def test_a_vocabulary_or_tasks_mismatch_names_the_setting():
    data = GeneratedStories(train_size=8, val_size=4, test_size=4)
    with pytest.raises(ValueError, match="model.vocab_size is 10 but the data has 34: set model.vocab_size=34"):
        QuestionAnswering().check(MemN2N(10), data)
    with pytest.raises(ValueError, match=r"task.tasks=\[1\] but the data holds tasks \[1, 2\]"):
        QuestionAnswering([1]).check(MemN2N(34), data)


def run_callback(losses, **kwargs):
    """The epoch after which a LinearStart callback turns linear start off (None: never), and
    the learning rate after the last epoch."""
    model = MemN2N(34, linear_start=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.005)
    callback = LinearStart(**kwargs)
    module = SimpleNamespace(model=model)
    for epoch, loss in enumerate(losses):
        trainer = SimpleNamespace(
            sanity_checking=False,
            state=SimpleNamespace(fn="fit"),
            current_epoch=epoch,
            optimizers=[optimizer],
            callback_metrics={"val/loss": torch.tensor(loss)},
        )
        callback.on_validation_end(trainer, module)
        if not model.linear_start:
            return epoch, optimizer.param_groups[0]["lr"]
    return None, optimizer.param_groups[0]["lr"]


def test_linear_start_ends_when_the_validation_loss_stops_falling_or_after_max_epochs():
    assert run_callback([3.0, 2.0, 1.5, 1.6, 1.0]) == (3, 0.005)
    assert run_callback([3.0, 2.0, 1.5, 1.6, 1.0], patience=1) == (None, 0.005)
    assert run_callback([3.0, 2.0, 1.5, 1.6, 1.7], patience=1)[0] == 4
    assert run_callback([3.0, 2.0, 1.5, 1.4], max_epochs=2)[0] == 1
    assert run_callback([3.0, 2.9], min_delta=0.2)[0] == 1
    assert run_callback([3.0, 3.5, 4.0, 4.5], patience=None, max_epochs=3, lr_factor=2.0) == (2, 0.01)


def test_linear_start_refuses_a_model_without_the_switch():
    with pytest.raises(ValueError, match="no linear_start switch"):
        LinearStart().on_fit_start(None, SimpleNamespace(model=torch.nn.Linear(2, 2)))
    with pytest.raises(ValueError, match="set patience or max_epochs"):
        LinearStart(patience=None)
