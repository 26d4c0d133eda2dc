"""Which process of which machine is doing something, and whether it still runs.

A streamed answer is stored as its process writes it; a process killed mid-answer (the OOM killer, a
worker restarted by gunicorn after its timeout, a crash) leaves its turn "answering". The turn records
who answers it (``this_process()``), and the next request on that conversation asks ``gone()``: on the
same machine a dead process is known at once, instead of after a long timeout.

    marker = this_process()     # "host|boot id|pid|start ticks"
    gone(marker)                 # True: this machine, and that process no longer runs
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> str:
    """When ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat`` field 22), or "" when no
    such process runs (or /proc is not there). A pid reused by a later process has another start."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


@cache
def _machine() -> tuple[str, str]:
    return socket.gethostname(), _boot_id()


def this_process() -> str:
    """``"host|boot id|pid|start ticks"`` of the calling process (at most 200 characters)."""
    host, boot = _machine()
    pid = os.getpid()
    return f"{host}|{boot}|{pid}|{_start_ticks(pid)}"[:200]


def gone(marker: str) -> bool:
    """True when ``marker`` (``this_process()`` of some process) names a process of this machine, since
    its last boot, that no longer runs: no process has its pid, or the one that has it started at
    another time. False when it may still run, and for another machine, another boot or a marker that
    cannot be read (nothing is known there: the caller's own timeout decides)."""
    parts = marker.split("|")
    if len(parts) != 4 or not parts[1] or not parts[3] or not parts[2].isdigit():
        return False
    host, boot, pid, started = parts
    if (host, boot) != _machine():
        return False
    return _start_ticks(int(pid)) != started
