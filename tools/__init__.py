"""Benchmarks, the GPU check and maintenance scripts, each run from the repository root as
``python -m tools.<name>`` (so that it imports this checkout's packages), and what the benchmarks
and the tests share (``tools.ccnet_reference``). Nothing in ``framework`` or ``domains`` imports it."""
