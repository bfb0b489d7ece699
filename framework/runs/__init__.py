"""Run folders: one folder per run, owned by it (:mod:`.folders`), and what is written there
outside the loggers: ``summary.json`` and the other files a later run reads, atomically (:mod:`.files`, whose
:func:`atomic_file` the checkpoints are written through too), and
the files of ``predict`` (:mod:`.prediction_files`)."""

from .files import (
    PARTIAL_SUFFIX,
    SUMMARY_FILE,
    SUMMARY_FORMAT,
    atomic_file,
    read_summary,
    write_json_atomically,
    write_text_atomically,
)
from .folders import (
    CONFIG_PRESETS,
    RUN_DIR_ENV,
    RUN_FILES,
    RUNS_ROOT_ENV,
    check_experiment,
    created,
    discard_unused,
    holds_a_run,
    launcher_job,
    lock,
    new_run_dir,
    place_run,
    release,
    requeued_checkpoint,
    resolve_run_dir,
    run_dir_of_checkpoint,
    runs_root,
)
from .prediction_files import PredictionSink

__all__ = [
    "CONFIG_PRESETS",
    "PARTIAL_SUFFIX",
    "RUNS_ROOT_ENV",
    "RUN_DIR_ENV",
    "RUN_FILES",
    "SUMMARY_FILE",
    "SUMMARY_FORMAT",
    "PredictionSink",
    "atomic_file",
    "check_experiment",
    "created",
    "discard_unused",
    "holds_a_run",
    "launcher_job",
    "lock",
    "new_run_dir",
    "place_run",
    "read_summary",
    "release",
    "requeued_checkpoint",
    "resolve_run_dir",
    "run_dir_of_checkpoint",
    "runs_root",
    "write_json_atomically",
    "write_text_atomically",
]
