"""What W&B holds at the end of a run, read from the offline files: a fit, its test, an ablated test and an
evaluate as runs of one group (job types, the fit's id and last step in their configs), each number under a
key of its own at the fit's last step, checkpoints as artifacts; a resumed fit's records hold each step once."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import wandb
import yaml

from framework.__main__ import main
from framework.loggers import OWN_KEYS, RUN_ARGS, WandbLogger, key_prefix
from tests.wandb_records import as_table, closed, config, outline, summary, written

FIT = [
    "--config",
    "domains/demo/demo.yaml",
    "--data.train_size=128",
    "--data.val_size=64",
    "--data.test_size=64",
    "--data.batch_size=32",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]
STEPS_PER_EPOCH = 4  # 128 examples in batches of 32
METRICS = ("acc", "f1", "loss")  # what the demo's task logs, as train/, val/ and test/


def keys(prefix: str) -> set[str]:
    return {f"{prefix}{name}" for name in METRICS}


def fit_keys(record: dict) -> dict[int, set[str]]:
    """The fit's keys by step, without the attention statistics and pictures (their own tests read them)."""
    return {step: {k for k in found if not k.startswith("attention/")} for step, found in record["steps"].items()}


@pytest.mark.slow
def test_a_fit_its_test_an_ablated_test_and_an_evaluate_are_one_group_of_runs_with_keys_of_their_own(tmp_path):
    folders = {name: tmp_path / name for name in ("fit", "test", "ablated", "evaluate")}
    main(["fit", *FIT, "--trainer.max_epochs=2", f"--run_dir={folders['fit']}", "--trainer.logger.log_model=true"])
    of_fit = [
        "--config",
        str(folders["fit"] / "config.yaml"),
        "--ckpt_path",
        str(folders["fit"] / "checkpoints/best.ckpt"),
    ]
    quiet = "--trainer.enable_progress_bar=false"
    main(["test", *of_fit, quiet, f"--run_dir={folders['test']}"])
    main(["test", *of_fit, quiet, f"--run_dir={folders['ablated']}", "--ablation=uniform"])
    main(["evaluate", *of_fit, quiet, f"--run_dir={folders['evaluate']}", "--tests=[ablation]"])
    logs = {name: written(folder) for name, folder in folders.items()}
    record = {name: outline(log) for name, log in logs.items()}
    print(as_table(record))  # the record at a glance (pytest -s)

    fit, last = record["fit"], 2 * STEPS_PER_EPOCH
    assert (fit["group"], fit["job_type"], fit["fit"]) == (fit["id"], "fit", None)
    per_epoch = {"epoch"} | keys("train/") | keys("val/")  # validations log at the step before the epoch's last
    assert fit_keys(fit) == {STEPS_PER_EPOCH - 1: per_epoch, last - 1: per_epoch}
    assert fit["artifacts"] == [("model", ["best", "latest"]), ("model", ["latest"])]  # best.ckpt, then last.ckpt

    # job type and keys of each run of the fit's checkpoint: the task's own for the real test alone
    declared = {
        "test": ("test", keys("test/")),
        "ablated": ("test", keys("ablation=uniform/test/")),
        "evaluate": ("evaluate", keys("evaluate/test/") | {"evaluate/evaluation"}),
    }
    belongs = {"run": fit["id"], "dir": str(folders["fit"]), "step": last}
    for name, (job_type, logged) in declared.items():
        run = record[name]
        assert (run["group"], run["job_type"], run["fit"]) == (fit["id"], job_type, belongs), name
        assert run["steps"] == {last: logged} and run["summary"] == logged, name
    ids = [run["id"] for run in record.values()]
    assert len(set(ids)) == len(ids), "a run took another's id"
    every = [key for name in declared for key in record[name]["summary"]]
    assert len(every) == len(set(every)) and not set(every) & set().union(*fit["steps"].values())

    # the numbers are each run's own: the ablated test's are not the test's
    for name, prefix in (("test", "test/"), ("ablated", "ablation=uniform/test/")):
        wrote = json.loads((folders[name] / "summary.json").read_text())["test"]["metrics"]
        logged = summary(logs[name])
        assert {m: float(logged[f"{prefix}{m}"]) for m in METRICS} == {m: wrote[f"test/{m}"] for m in METRICS}
    assert json.loads(config(logs["ablated"])["ablation"]) == "uniform"

    # the config is the resolved one, once: the data module's arguments only inside `data`
    data_args = set(yaml.safe_load((folders["fit"] / "config.yaml").read_text())["data"]["init_args"])
    for name, log in logs.items():
        sent = config(log)
        assert "data" in sent and not data_args & set(sent), f"{name}: {sorted(data_args & set(sent))} flat"
    saved = yaml.safe_load((folders["ablated"] / "config.yaml").read_text())["trainer"]["logger"]["init_args"]
    assert all(not saved.get(key) for key in RUN_ARGS), "the saved config names this run's W&B keys or fit"


def test_a_finished_fit_resumed_logs_only_what_it_adds_and_its_records_hold_each_step_once(tmp_path):
    run = tmp_path / "fit"
    last = ["--ckpt_path", str(run / "checkpoints/last.ckpt")]
    main(["fit", *FIT, "--trainer.max_epochs=1", f"--run_dir={run}"])
    written(run)
    main(["fit", *FIT, "--trainer.max_epochs=2", f"--run_dir={run}", *last])  # extended by an epoch
    main(["fit", *FIT, "--trainer.max_epochs=2", f"--run_dir={run}", *last])  # nothing left to train
    records = [closed(log) for log in sorted((run / "wandb").glob("offline-run-*/run-*.wandb"))]
    steps = [sorted(fit_keys(outline(record))) for record in records]
    assert steps == [[STEPS_PER_EPOCH - 1], [2 * STEPS_PER_EPOCH - 1], []]
    assert {outline(record)["id"] for record in records} == {outline(records[0])["id"]}
    assert not list((run / "wandb").glob("superseded-*"))


#: Each command's W&B keys: the task's own for a fit (train/, val/) and a test (test/), the command's name before
#: them for the others, so that no two commands share a key.
PREFIXES = {"fit": "", "test": "", "validate": "validate/", "predict": "predict/", "evaluate": "evaluate/"}


@pytest.mark.parametrize("stage", sorted(PREFIXES))
def test_each_commands_keys_are_its_own_and_an_ablation_marks_its_mode_and_blocks(stage):
    prefix = key_prefix(stage)
    assert prefix == PREFIXES[stage] and (stage in OWN_KEYS) == (prefix == "")
    assert key_prefix(stage, "uniform") == f"{prefix}ablation=uniform/"
    assert (
        key_prefix(stage, "permute", ["encoder.layers.0.*", "mhsa"])
        == f"{prefix}ablation=permute[encoder.layers.0.*,mhsa]/"
    )


def test_online_the_fits_summary_takes_a_tests_last_numbers_and_a_failure_is_one_warning(tmp_path, monkeypatch):
    updates: dict[str, dict] = {}

    class Api:
        def run(self, path: str) -> SimpleNamespace:
            if "broken" in path:
                raise wandb.errors.CommError("server said no")
            return SimpleNamespace(summary=SimpleNamespace(update=lambda values: updates.setdefault(path, values)))

    monkeypatch.setattr(wandb, "Api", Api)
    logger = WandbLogger(save_dir=str(tmp_path / "test"), offline=True, run_of=str(tmp_path / "fit"), at_step=8)
    logger.logged = [[8, {"test/acc": 0.5}], [8, {"test/acc": 0.75, "test/loss": 1.0}]]
    logger._experiment = SimpleNamespace(offline=False, entity="me", project="p")
    logger.update_fit_summary()
    assert updates == {f"me/p/{logger.fit_id}": {"test/acc": 0.75, "test/loss": 1.0}}
    logger.fit_id = "broken"
    with pytest.warns(UserWarning, match="the summary of the fit's run broken was not updated .CommError: server"):
        logger.update_fit_summary()
    logger._experiment.offline = True  # offline: nothing to ask
    logger.update_fit_summary()
    assert len(updates) == 1
