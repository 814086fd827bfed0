"""Die with the parent: a worker killed with SIGKILL must not leave its trainer running beside the retried one."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def exit_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no-op elsewhere); covers a parent that died meanwhile."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return
    if os.getppid() != parent:
        os._exit(1)
