"""One torch thread for these tests: their tensors are tiny, and on a busy 2-core machine
two intra-op threads wait on each other (10 SASRec steps: 0.15 s with one, 8 s with two)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
