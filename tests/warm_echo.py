"""A warm process for tests/test_warm_process.py: ``python -m tests.warm_echo R,W [MARKER]``.

Each message's parts (split at ``|``) come back reversed, one answer each; ``die`` kills it
(SIGKILL), ``sleep`` keeps it busy for a minute. With ``MARKER``, it writes that file and ends
when its parent is gone. It prints on its stdout, which is not the pipe.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from framework.warm_process import Child


def main() -> None:
    child = Child()
    if child.args:
        marker = Path(child.args[0])
        child.watch_parent(lambda: (marker.write_text("orphaned"), os._exit(0)), every=0.1)
    print("stdout is not the pipe", flush=True)
    os.write(1, b"nor is file descriptor 1\n")
    for message in child.messages():
        if message == b"die":
            os.kill(os.getpid(), signal.SIGKILL)
        if message == b"sleep":
            time.sleep(60)
        for part in message.split(b"|"):
            child.reply(part[::-1])


if __name__ == "__main__":
    main()
