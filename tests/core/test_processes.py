"""``core.processes``: a process of this machine that ended is known as gone; a live one, another
machine's or an unreadable marker are not."""

from __future__ import annotations

import subprocess
import sys

from core import processes


def test_this_process_is_not_gone_and_an_ended_one_is():
    assert not processes.gone(processes.this_process())
    child = subprocess.run(
        [sys.executable, "-c", "from core.processes import this_process; print(this_process())"],
        capture_output=True,
        text=True,
        check=True,
    )
    marker = child.stdout.strip()
    host, boot, pid, started = marker.split("|")
    assert (host, boot) == processes._machine() and int(pid) > 0 and started.isdigit()
    assert processes.gone(marker)  # it has ended


def test_a_reused_pid_is_gone_and_other_machines_or_bad_markers_are_not_known():
    host, boot, pid, started = processes.this_process().split("|")
    assert processes.gone(f"{host}|{boot}|{pid}|{int(started) + 1}")  # the pid now names a later process
    assert not processes.gone(f"elsewhere|{boot}|{pid}|{int(started) + 1}")
    assert not processes.gone(f"{host}|another-boot|{pid}|{int(started) + 1}")
    for bad in ("", "x", "a|b|c", f"{host}|{boot}|notapid|1", f"{host}|{boot}|{pid}|"):
        assert not processes.gone(bad)
