"""Presets that compose with any config (``--config configs/trainer/gpu.yaml``): ``trainer/`` (cpu,
gpu, ddp, fsdp, debug) and ``logger/`` (wandb, csv). A package only so that an installed copy of
the framework ships them: ``--config configs/...`` finds them from any folder."""
