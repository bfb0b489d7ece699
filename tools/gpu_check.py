"""The GPU check: does the project run right, and fast, on this machine's GPUs? (``make test-gpu``)

    python tools/gpu_check.py                         # everything, on CUDA (about 10 minutes on one H100)
    python tools/gpu_check.py --sections configs ddp  # some sections
    python tools/gpu_check.py --device cpu --sections configs --configs domains/demo/demo.yaml   # a dry run on the CPU

Sections, each ending as rows of one table (section, item, result, figure):

* ``env``: torch and CUDA versions, the device, bf16 support, the TF32 settings.
* ``suite``: the CUDA lane of the test suite (``pytest -k cuda``: every test that takes a
  ``device`` runs on the GPU), with a few threads per process.
* ``configs``: a short ``fit`` of every config (``domains/demo/demo.yaml`` and ``domains/*/*.yaml``)
  with the GPU preset (bf16) and the config's own logger (W&B, offline without a key), so
  that pictures are drawn from GPU tensors; real-data configs without their data are skipped.
* ``benchmarks``: ``tools/bench_overhead.py`` (fit against a hand-written loop, kernels per
  step, GPU busy share), the ``make fit`` step eager and under ``--compile=reduce-overhead``,
  and the criss-cross block against the CCNet authors' algorithm (``tools/bench_vision.py blocks``).
* ``ddp``: a data-parallel fit of the demo on every GPU present (one process per GPU).

Exits with status 1 when a row failed. Real data come from ``$FRAMEWORK_DATA_DIR``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import lightning.pytorch as pl
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SECTIONS = ("env", "suite", "configs", "benchmarks", "ddp")
Row = tuple[str, str, str, str]  # section, item, result (ok / FAILED / skipped ...), figure


def run(command: list[str], timeout: float, threads: int = 4) -> subprocess.CompletedProcess:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))  # the user's path kept
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": path}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def env_rows(device: str) -> list[Row]:
    rows = [("env", "torch", "ok", torch.__version__)]
    if device != "cuda":
        return rows + [("env", "device", "ok", "cpu (dry run)")]
    properties = torch.cuda.get_device_properties(0)
    rows += [("env", "device", "ok", f"{properties.name} x {torch.cuda.device_count()}, "
                                      f"{properties.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda}"),
             ("env", "bf16", "ok" if torch.cuda.is_bf16_supported() else "FAILED", str(torch.cuda.is_bf16_supported())),
             ("env", "tf32 (matmul, cudnn)", "ok",
              f"{torch.backends.cuda.matmul.allow_tf32}, {torch.backends.cudnn.allow_tf32}")]
    return rows


def suite_rows(device: str) -> list[Row]:
    lane = "cuda" if device == "cuda" else "cpu"
    start = time.perf_counter()
    done = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", lane], timeout=540)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
    failed = re.findall(r"^FAILED (\S+)", done.stdout, flags=re.M)
    rows = [("suite", f"pytest -k {lane}", "ok" if done.returncode == 0 else "FAILED",
             f"{summary} ({time.perf_counter() - start:.0f} s)")]
    return rows + [("suite", name, "FAILED", "") for name in failed]


def all_configs() -> list[str]:
    return ["domains/demo/demo.yaml", *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("domains/*/*.yaml"))]


class StepClock(pl.Callback):
    """Wall time of every training step (the device synchronised at its end)."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def on_train_batch_start(self, *args) -> None:
        self.start = time.perf_counter()

    def on_train_batch_end(self, *args) -> None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.times.append(time.perf_counter() - self.start)


def config_rows(device: str, configs: list[str], steps: int) -> list[Row]:
    """A short fit of each config in this process; each row gives its median time per training step."""
    from framework.__main__ import main
    from framework.data import DataNotFoundError
    from tools.gpu_check import StepClock as Clock  # the class the CLI imports, not __main__'s

    preset = ["--config", "configs/trainer/gpu.yaml"] if device == "cuda" else ["--trainer.accelerator=cpu"]
    rows = []
    for config in configs:
        args = ["fit", "--config", config, *preset, "--trainer.max_epochs=1", f"--trainer.limit_train_batches={steps}",
                "--trainer.limit_val_batches=2", "--trainer.num_sanity_val_steps=0", "--trainer.enable_progress_bar=false",
                "--trainer.enable_model_summary=false", "--experiment=gpu_check", "--trainer.callbacks+=tools.gpu_check.StepClock"]
        try:
            cli = main(args)
            clock = next(c for c in cli.trainer.callbacks if isinstance(c, Clock))
            median = sorted(clock.times)[len(clock.times) // 2] if clock.times else float("nan")
            rows.append(("configs", config, "ok", f"{median * 1e3:.1f} ms/step"))
        except DataNotFoundError as err:
            rows.append(("configs", config, "skipped", f"no data: {str(err).split(' (')[0]}"))
        except Exception as err:  # the check goes on; the row says what broke
            traceback.print_exc()
            rows.append(("configs", config, "FAILED", f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"))
    return rows


def benchmark_rows(device: str) -> list[Row]:
    rows = []
    overhead = run([sys.executable, "tools/bench_overhead.py", "--device", device], timeout=400)
    table = [line for line in overhead.stdout.splitlines() if line.startswith("| ") and not line.startswith("| model")]
    rows += [("benchmarks", f"bench_overhead {line.split('|')[1].strip()}", "ok" if overhead.returncode == 0 else "FAILED",
              " | ".join(cell.strip() for cell in line.strip("|").split("|")[2:])) for line in table]
    if overhead.returncode:
        rows.append(("benchmarks", "bench_overhead", "FAILED", overhead.stderr.strip().splitlines()[-1][:160]))
    steps = run([sys.executable, "tools/bench_overhead.py", "--device", device, "--models", "ccnet", "--steps"], timeout=400)
    rows += [("benchmarks", "make fit step " + line.split(":")[0].strip(), "ok" if steps.returncode == 0 else "FAILED",
              line.split(":", 1)[1].strip()) for line in steps.stdout.splitlines() if line.startswith("step ")]
    if device == "cuda":
        blocks = run([sys.executable, "tools/bench_vision.py", "blocks"], timeout=900)
        table = [line.strip() for line in blocks.stdout.splitlines() if line.startswith("|") and "---" not in line]
        rows += [("benchmarks", "criss-cross block", "ok" if blocks.returncode == 0 else "FAILED", line)
                 for line in table[1:]]  # the first row is the table's header
    return rows


def ddp_rows(device: str) -> list[Row]:
    devices = torch.cuda.device_count() if device == "cuda" else 2
    accelerator = "gpu" if device == "cuda" else "cpu"
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        done = run([sys.executable, "-m", "framework", "fit", "--config", "domains/demo/demo.yaml", "--config",
                    "configs/trainer/ddp.yaml", f"--trainer.accelerator={accelerator}", f"--trainer.devices={devices}",
                    "--trainer.max_epochs=2", "--trainer.enable_progress_bar=false", f"--run_dir={folder}/run"],
                   timeout=300, threads=1)
        seconds = time.perf_counter() - start
        ok = done.returncode == 0 and (Path(folder) / "run" / "checkpoints" / "last.ckpt").is_file()
        accuracy = re.search(r"val/acc\s+([\d.]+)", done.stdout)
    figure = f"{devices} processes, {seconds:.0f} s" + (f", val/acc {accuracy.group(1)}" if accuracy else "")
    return [("ddp", f"demo on {devices} {accelerator} processes", "ok" if ok else "FAILED",
             figure if ok else done.stderr.strip().splitlines()[-1][:160])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--configs", nargs="+", default=None, help="configs of the configs section (default: all)")
    parser.add_argument("--steps", type=int, default=10, help="training steps of each config's fit")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: no CUDA device on this machine (use --device cpu for a dry run)", file=sys.stderr)
        return 2
    os.environ.setdefault("FRAMEWORK_RUNS_DIR", tempfile.mkdtemp(prefix="gpu_check_"))
    rows: list[Row] = []
    for section in args.sections:
        start = time.perf_counter()
        if section == "env":
            rows += env_rows(args.device)
        elif section == "suite":
            rows += suite_rows(args.device)
        elif section == "configs":
            rows += config_rows(args.device, args.configs or all_configs(), args.steps)
        elif section == "benchmarks":
            rows += benchmark_rows(args.device)
        else:
            rows += ddp_rows(args.device)
        print(f"gpu_check: {section} done in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print("\n| section | item | result | figure |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    failed = sum(row[2] == "FAILED" for row in rows)
    print(f"\n{len(rows)} rows, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
