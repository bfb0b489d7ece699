"""``compare --search``: an Optuna search over config keys instead of a grid.

    python -m framework compare --config domains/demo/demo.yaml \\
        --search optimizer.init_args.lr=loguniform(1e-4,1e-2) --search model.dim=int(32,128) \\
        --search model.attention=[mhsa,local] --trials 20 --seeds 2 --pruner median

A key's space is ``uniform(A,B)``, ``loguniform(A,B)``, ``int(A,B)``, ``int(A,B,STEP)``,
``logint(A,B)`` or a YAML list of choices (:func:`parse_space`). Optuna's TPE sampler proposes
each trial's values; a trial is its values' runs over ``--seeds`` (a fit and a test each, in the
warm workers of :mod:`.pool`, in ``runs/trial<N>/seed<S>``), and its value is the mean over
the seeds of the best validation score of the task's checkpoint metric (``val/acc`` ...; the
test set chooses nothing). The first seed's fit reports that metric after every validation to
Optuna's pruner through Optuna's Lightning callback (``optuna_integration``'s
``PyTorchLightningPruningCallback``), which stops a trial that falls behind (``--pruner median``,
the default, or ``hyperband``; ``none``) once its warm-up is over (:mod:`.pruning`). A pruned
trial is said to be pruned, never failed. TPE draws the first ``--startup_trials`` trials (10,
Optuna's default) at random and proposes from the next one: the search says so when it starts,
and each run's line says which its trial was.

The study lives in ``<comparison>/study.db`` (SQLite): the same command resumes a search that
was stopped or killed (its unfinished trials run again, their fits resuming from
``last.ckpt``) and goes on to ``--trials`` trials in all; a larger ``--trials`` extends it. A
trial whose run was stopped or killed from outside (its worker killed, say) stays unfinished, as
a grid's run does: the search goes on with the others, then names it and exits with status 1, and
the same command runs it again.
The finished trials are tabulated as a grid's cells are (``results.md`` ...; the best trial is
the baseline of the paired tests), and the best trial's config is written as
``<comparison>/best.yaml``, which ``python -m framework fit --config best.yaml`` takes. A
search often trains with a cut budget (``--trainer.max_epochs=5`` on its command line): best.yaml
keeps the config's own budget instead (:data:`BUDGET`), and its header says what the search ran.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import re
import statistics
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from ... import signals
from ...errors import ConfigError
from ...runs import read_summary, write_text_atomically
from . import executors, results
from .comparison import Spec, check_resumable, comparison_folder, default_name
from .grid import KEY_PATTERN, Cell, value_text
from .grid_status import GridProgress, Stopping
from .pool import Pool
from .pruning import PrunerSettings
from .resolve import has_key, resolve, wandb_project
from .runner import RunPlan, RunResult, explain_failures, fit_arguments

STUDY_FILE = "study.db"
BEST_FILE = "best.yaml"
RANGE = re.compile(r"^(uniform|loguniform|int|logint)\((.*)\)$")
#: Trials TPE draws at random before it proposes, unless --startup_trials says (Optuna's default).
STARTUP_TRIALS = 10
#: The trainer's keys of a run's budget: set on the search's command line, best.yaml keeps the config's own.
BUDGET = ("max_epochs", "min_epochs", "max_steps", "min_steps", "max_time")


@dataclass(frozen=True)
class Space:
    """One ``--search KEY=SPACE`` flag: an Optuna distribution of a config key's values."""

    key: str
    text: str
    distribution: Any


def parse_space(flag: str) -> Space:
    """``KEY=SPACE`` -> Space; a ConfigError naming the flag when it is malformed."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    key, sep, text = flag.partition("=")
    key, text = key.strip().removeprefix("--"), text.strip()
    example = (
        "for example --search optimizer.init_args.lr=loguniform(1e-4,1e-2) or --search model.attention=[mhsa,local]"
    )
    if not sep or not key or not text:
        raise ConfigError(f"--search {flag}: expected KEY=SPACE, {example}")
    if not KEY_PATTERN.match(key):
        raise ConfigError(f"--search {flag}: '{key}' is not a config key (dotted names such as model.dim)")
    if key in ("seed_everything", "run_dir", "ckpt_path", "config"):
        raise ConfigError(f"--search {key}: not a key a search can vary (seeds: --seeds; configs: a --grid comparison)")
    if text.startswith("["):
        try:
            choices = yaml.safe_load(text)
        except yaml.YAMLError:
            choices = None
        if not isinstance(choices, list) or not choices:
            raise ConfigError(f"--search {key}: {text} is not a YAML list of choices, such as [mhsa,local]")
        if not all(c is None or isinstance(c, (bool, int, float, str)) for c in choices):
            raise ConfigError(f"--search {key}: choices are numbers, strings, booleans or null; got {text}")
        return Space(key, text, CategoricalDistribution(choices))
    found = RANGE.match(text)
    if not found:
        raise ConfigError(
            f"--search {key}: {text} is no space; write uniform(A,B), loguniform(A,B), int(A,B), "
            "int(A,B,STEP), logint(A,B) or [V1,V2,...]"
        )
    kind, inside = found.groups()
    try:
        numbers = [yaml.safe_load(part) for part in inside.split(",")]
        integer = kind in ("int", "logint")
        if integer and not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
            raise ValueError("integers")
        numbers = [n if integer else float(n) for n in numbers]
        if len(numbers) not in ((2, 3) if kind == "int" else (2,)):
            raise ValueError(f"{len(numbers)} numbers")
        log = kind in ("loguniform", "logint")
        if integer:
            step = numbers[2] if len(numbers) == 3 else 1
            return Space(key, text, IntDistribution(numbers[0], numbers[1], log=log, step=step))
        return Space(key, text, FloatDistribution(numbers[0], numbers[1], log=log))
    except (TypeError, ValueError, yaml.YAMLError) as err:
        bounds = "A <= B" + (", A > 0" if kind.startswith("log") else "")
        raise ConfigError(
            f"--search {key}: {text}: expected {kind}(A,B{',STEP' if kind == 'int' else ''}) with "
            f"{'integers' if kind in ('int', 'logint') else 'numbers'}, {bounds} ({err})"
        ) from None


def parse_spaces(flags: list[str]) -> dict[str, Space]:
    spaces: dict[str, Space] = {}
    for flag in flags:
        space = parse_space(flag)
        if space.key in spaces:
            raise ConfigError(f"--search {space.key}: given more than once")
        spaces[space.key] = space
    return spaces


# -- the study ---------------------------------------------------------------------------------


def storage_url(folder: Path) -> str:
    return f"sqlite:///{folder / STUDY_FILE}"


def open_study(spec: Spec, direction: str, pruner: PrunerSettings, first_seed: int, startup: int):
    """The comparison's study (created, or loaded to resume), its TPE sampler seeded from the
    first seed and the trials so far (a resumed search draws new values, not the first ones again),
    drawing ``startup`` trials at random before TPE proposes."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # compare prints each trial's line itself
    study = optuna.create_study(
        study_name=spec.name,
        storage=storage_url(spec.folder),
        direction=direction,
        pruner=pruner.build(),
        load_if_exists=True,
    )
    if study.direction.name.lower() != direction:
        raise ConfigError(
            f"{spec.folder / STUDY_FILE} was made to {study.direction.name.lower()} its metric, the "
            f"task's checkpoint metric is to {direction}: choose another --name"
        )
    study.sampler = optuna.samplers.TPESampler(
        n_startup_trials=startup, seed=first_seed + len(study.trials), constant_liar=True
    )
    return study


def trial_cell(number: int, params: dict[str, Any]) -> Cell:
    """A trial as a cell; its label says its values (the key's last part, floats to 3 digits),
    so that the tables and plots show what each trial tried."""
    said = ", ".join(
        f"{key.rsplit('.', 1)[-1]}={f'{value:.3g}' if isinstance(value, float) else value_text(value)}"
        for key, value in params.items()
    )
    return Cell(
        values=dict(params),
        name=f"trial{number}",
        label=f"trial {number}" + (f" ({said})" if said else ""),
        args=[f"--{key}={value_text(value)}" for key, value in params.items()],
    )


# -- the command ---------------------------------------------------------------------------------


def base_config(run_args: list[str], spaces: dict[str, Space]) -> tuple[dict[str, Any], str]:
    """The comparison's resolved config (with the sizes and the checkpoint metric the data and
    task fill in), and its text; a ConfigError naming a ``--search`` key the config does not have."""
    text, message = resolve(run_args, filled=True)
    if text is None:
        raise ConfigError(f"the search's runs cannot start: {message}")
    config = yaml.safe_load(text) or {}
    for key in spaces:
        if not has_key(config, key):
            raise ConfigError(f"--search {key}: the config has no key {key}")
    return config, text


def search(options: argparse.Namespace, run_args: list[str]) -> results.Summary:
    """Run (or resume) the search, tabulate its trials and write best.yaml; the table's summary."""
    import optuna

    spaces = parse_spaces(options.search)
    if not any(a in ("--config", "-c") or a.startswith("--config=") for a in run_args):
        raise ConfigError("compare --search needs a config: --config CONFIG")
    name = options.name or f"{default_name(run_args, [])}-search"
    seeds = list(range(options.first_seed, options.first_seed + options.seeds))
    spec = Spec(
        name=name,
        folder=comparison_folder(name).resolve(),
        run_args=run_args,
        axes=[],
        seeds=seeds,
        test_args=list(options.test_override),
        test_ckpt=options.test_ckpt,
        search={key: space.text for key, space in spaces.items()},
    )
    config, text = base_config(run_args, spaces)
    checkpoint = config.get("checkpoint") or {}
    spec.monitor, spec.mode = checkpoint.get("monitor"), checkpoint.get("mode") or "min"
    if not spec.monitor:
        raise ConfigError("--search: the config names no checkpoint metric (checkpoint.monitor) and its task none")
    spec.wandb_project = wandb_project(text)
    check_resumable(spec)
    spec.save()
    epochs = (config.get("trainer") or {}).get("max_epochs")
    epochs = epochs if isinstance(epochs, int) and epochs > 0 else None
    pruner = PrunerSettings.of(options.pruner, options.pruner_warmup, options.pruner_startup_trials, epochs)
    startup = STARTUP_TRIALS if options.startup_trials is None else options.startup_trials
    study = open_study(spec, "maximize" if spec.mode == "max" else "minimize", pruner, options.first_seed, startup)
    done = len([t for t in study.trials if t.state.is_finished()])
    print(
        f"Search {spec.name}: {len(spaces)} key(s), {options.trials} trial(s) x {len(seeds)} seed(s), "
        f"{done} finished already; {sampling(options.trials, startup)}; {pruner.said()} on "
        f"{spec.monitor} ({spec.mode}); in {spec.folder}",
        flush=True,
    )
    trials = Trials(spec, options, spaces, study, epochs)
    trials.pruner = pruner
    trials.early_stopping, trials.startup = Stopping.of(config), startup
    try:
        ended = trials.run()
    except executors.GridStopped:
        if study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)):
            report(spec, options, study, spaces)
        raise signals.Stopped() from None
    again = [result.key for result in ended if not result.ok and result.retry]
    if again:  # as a grid's killed runs: the table of what finished, then the trials the same command retries
        if study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)):
            report(spec, options, study, spaces)
        explain_failures(ended, again)
        raise SystemExit(1)
    return report(spec, options, study, spaces)


def sampling(trials: int, startup: int) -> str:
    """How TPE draws ``trials`` trials when its first ``startup`` are random draws, in words."""
    if startup >= trials:
        return (
            f"all {trials} trial(s) are random draws: TPE proposes once {startup} have finished "
            "(--startup_trials sets that)"
        )
    if not startup:
        return "TPE proposes every trial"
    return f"the first {startup} trial(s) are random draws (--startup_trials), then TPE proposes"


class Trials:
    """The search's loop: ``--jobs`` trials at once, each its seeds one after another."""

    def __init__(
        self, spec: Spec, options: argparse.Namespace, spaces: dict[str, Space], study: Any, epochs: Optional[int]
    ) -> None:
        from optuna.trial import TrialState

        self.spec, self.options, self.spaces, self.study, self.epochs = spec, options, spaces, study, epochs
        self.lock, self.stopping = threading.Lock(), threading.Event()
        self.unfinished = [(t.number, t._trial_id, t.params) for t in study.get_trials(states=(TrialState.RUNNING,))]
        self.finished = len([t for t in study.trials if t.state.is_finished()])
        self.active = 0
        self.retried = 0  # trials left unfinished for the next invocation (a run stopped or killed from outside)
        self.results: list[RunResult] = []
        self.early_stopping: Optional[Stopping] = None  # the config's early stopping, for the ETA
        self.pruner: Optional[PrunerSettings] = None
        self.startup = STARTUP_TRIALS  # trials TPE draws at random
        self.drawn: dict[int, str] = {}  # trial number: "random draw" or "TPE", as the sampler drew it

    def next(self) -> Optional[tuple[int, int, dict]]:
        from optuna.trial import TrialState

        with self.lock:
            if self.stopping.is_set():
                return None
            if self.unfinished:  # a stopped or killed search's trials first: their runs resume
                self.active += 1
                return self.unfinished.pop(0)
            if self.finished + self.active + self.retried >= self.options.trials:
                return None
            self.active += 1
            told = len(self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))
            trial = self.study.ask({key: space.distribution for key, space in self.spaces.items()})
            self.drawn[trial.number] = "random draw" if told < self.startup else "TPE"
            return trial.number, trial._trial_id, trial.params

    def run(self) -> list[RunResult]:
        left = max(0, self.options.trials - self.finished, len(self.unfinished))  # the unfinished count among them
        if not left:  # all its trials finished: the tables alone
            return self.results
        slots, threads = executors.local_slots(self.options.jobs, self.options.threads)
        slots = slots[: max(1, min(len(slots), left))]
        names = [f"trial{n}" for n in range(len(self.study.trials) + left)]
        max_epochs, stopping = {name: self.epochs for name in names}, {name: self.early_stopping for name in names}
        with (
            GridProgress(left * len(self.spec.seeds), max_epochs, self.options.status_every, stopping) as progress,
            Pool(slots, threads) as pool,
            concurrent.futures.ThreadPoolExecutor(len(slots)) as loops,
        ):
            progress.at_once(len(slots))
            futures = [loops.submit(self.loop, pool, progress) for _ in slots]
            try:
                for future in concurrent.futures.as_completed(futures):
                    future.result()
            except signals.Stopped:
                self.stopping.set()
                running = pool.stop()
                print(
                    f"\nstopping the search: {running} running run(s) got SIGTERM and save a resumable last.ckpt",
                    file=sys.stderr,
                    flush=True,
                )
                concurrent.futures.wait(futures)
                raise executors.GridStopped(self.results) from None
        return self.results

    def loop(self, pool: Pool, progress: GridProgress) -> None:
        while (trial := self.next()) is not None:
            try:
                self.trial(pool, progress, *trial)
            finally:
                with self.lock:
                    self.active -= 1

    def trial(self, pool: Pool, progress: GridProgress, number: int, trial_id: int, params: dict) -> None:
        """Run one trial's seeds and tell the study its value, that it was pruned, or that it failed.
        A trial whose run was stopped or killed from outside (Ctrl-C, SIGTERM, its worker killed) stays
        unfinished, as a grid's run does: the next invocation of the same command runs it again."""
        from optuna.trial import Trial, TrialState

        cell, spec = trial_cell(number, params), self.spec
        scores = []
        for index, seed in enumerate(spec.seeds):
            prune = index == 0 and self.options.pruner != "none"
            drawn = self.drawn.get(number)
            plan = RunPlan(
                cell=cell.name,
                label=f"{cell.label} [{drawn}]" if drawn else cell.label,
                seed=seed,
                run_dir=str(spec.run_dir(cell, seed)),
                fit_args=fit_arguments([], spec.run_args, cell.args),
                test_args=spec.test_args,
                test_ckpt=spec.test_ckpt,
                group=spec.name,
                pruning={
                    "storage": storage_url(spec.folder),
                    "study": spec.name,
                    "trial": trial_id,
                    "monitor": spec.monitor,
                    "pruner": asdict(self.pruner or PrunerSettings.of(self.options.pruner, None, None, self.epochs)),
                }
                if prune
                else None,
            )
            result = pool.submit(plan, progress.started).result()
            progress.finished(plan, result)
            with self.lock:
                self.results.append(result)
                if result.stopped or result.retry:  # left unfinished: the same command runs it again
                    self.retried += 1
                    return
                if result.pruned:
                    self.study.tell(number, state=TrialState.PRUNED)
                    self.finished += 1
                    return
                if not result.ok:
                    Trial(self.study, trial_id).set_user_attr("error", result.error)
                    self.study.tell(number, state=TrialState.FAIL)
                    self.finished += 1
                    return
            scores.append(read_summary(Path(plan.run_dir)).get("fit", {}).get("best_score"))
        with self.lock:
            if any(s is None or math.isnan(s) for s in scores):
                Trial(self.study, trial_id).set_user_attr("error", f"no validation score of {spec.monitor}")
                self.study.tell(number, state=TrialState.FAIL)
            else:
                self.study.tell(number, statistics.fmean(scores))
            self.finished += 1


def report(spec: Spec, options: argparse.Namespace, study: Any, spaces: dict[str, Space]) -> results.Summary:
    """The finished trials' table (the best trial is the baseline), best.yaml, and a line per
    pruned or failed trial."""
    from optuna.trial import TrialState

    complete = sorted(study.get_trials(states=(TrialState.COMPLETE,)), key=lambda t: t.number)
    if not complete:
        failed = study.get_trials(states=(TrialState.FAIL,))
        reasons = "; ".join(f"trial {t.number}: {t.user_attrs.get('error', 'failed')}" for t in failed[:3])
        raise ConfigError(f"--search: no trial finished{f' ({reasons})' if reasons else ''}")
    cells = [trial_cell(t.number, t.params) for t in complete]
    best = study.best_trial
    spec.cells, spec.axes = cells, []
    baseline = next(c for c in cells if c.name == f"trial{best.number}")
    records, missing = results.collect(spec.run_dir, cells, spec.seeds)
    summary = results.summarize(
        spec.name,
        cells,
        records,
        list(spaces),
        spec.seeds,
        missing,
        metric=options.metric,
        patterns=options.metrics,
        baseline=baseline,
        train_metric=options.train_metric,
    )
    results.write(summary, spec.folder)
    best_path = write_best(spec, best, configured_budget(spec.run_args))
    print("\n" + results.markdown(summary), flush=True)
    for state in (TrialState.PRUNED, TrialState.FAIL):
        trials = study.get_trials(states=(state,))
        if trials:
            said = ", ".join(
                f"{t.number}" + (f" ({t.user_attrs['error']})" if t.user_attrs.get("error") else "")
                for t in trials[:10]
            )
            print(f"{state.name.lower()}: {len(trials)} trial(s): {said}", flush=True)
    values = ", ".join(f"{k}={value_text(v)}" for k, v in best.params.items())
    print(
        f"best: trial {best.number} ({values}), mean best {spec.monitor} over {len(spec.seeds)} seed(s) "
        f"{best.value:.4f}; its config: {best_path} (python -m framework fit --config {best_path})",
        flush=True,
    )
    return summary


def budget_flags(run_args: list[str]) -> list[int]:
    """The positions in ``run_args`` of the flags that set a :data:`BUDGET` key (and of their values)."""
    names = {f"--trainer.{key}" for key in BUDGET}
    found: list[int] = []
    for index, arg in enumerate(run_args):
        if arg.split("=", 1)[0] in names:
            found += [index] if "=" in arg else [index, index + 1]
    return found


def configured_budget(run_args: list[str]) -> dict[str, Any]:
    """The :data:`BUDGET` values the search's config files give, where its command line cut them
    (``--trainer.max_epochs=5``); empty where it cut none."""
    cut = budget_flags(run_args)
    if not cut:
        return {}
    text, message = resolve([arg for index, arg in enumerate(run_args) if index not in cut])
    if text is None:
        raise ConfigError(f"best.yaml: the config without the search's budget flags cannot be read: {message}")
    trainer = (yaml.safe_load(text) or {}).get("trainer") or {}
    return {key: trainer.get(key) for key in BUDGET}


def write_best(spec: Spec, trial: Any, budget: dict[str, Any]) -> Path:
    """The best trial's config (its first seed's run's config.yaml, progress bar as by default) as
    best.yaml, with the config's own ``budget`` (:func:`configured_budget`) in place of the search's."""
    config = yaml.safe_load(
        (spec.run_dir(trial_cell(trial.number, trial.params), spec.seeds[0]) / "config.yaml").read_text()
    )
    trainer = config.get("trainer") if isinstance(config.get("trainer"), dict) else {}
    if not any("enable_progress_bar" in arg for arg in spec.run_args):
        trainer.pop("enable_progress_bar", None)  # compare turned it off in its runs
    searched = {key: trainer.get(key) for key in budget if trainer.get(key) != budget[key]}
    trainer.update(budget)
    values = ", ".join(f"{k}={value_text(v)}" for k, v in trial.params.items())
    header = (
        f"# The best trial of the search {spec.name} ({time.strftime('%Y-%m-%d %H:%M')}): trial {trial.number}, "
        f"{values};\n# mean best {spec.monitor} over seed(s) {', '.join(map(str, spec.seeds))}: {trial.value:.6g}. "
        f"Train it: python -m framework fit --config <this file>\n"
    )
    if searched:
        header += (
            f"# The search trained with {', '.join(f'trainer.{k}={v}' for k, v in searched.items())}; this file "
            f"has the config's {', '.join(f'trainer.{k}={budget[k]}' for k in searched)}\n"
        )
    path = spec.folder / BEST_FILE
    write_text_atomically(path, header + yaml.safe_dump(config, sort_keys=False))
    return path
