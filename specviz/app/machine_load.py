"""How much CPU other programs took while a race ran: is the measured speedup a fair one?

Both lanes are timed on their own clocks, but a browser or a training job on the same cores
slows the lanes unevenly (the speculative lane's many small passes suffer more from losing a
core mid-pass). Linux's /proc/stat counts busy CPU time for the whole machine; subtracting this
process's own (os.times) leaves what everyone else used. Elsewhere (no /proc) the share is
unknown and the page says nothing. Work inside this process beside a race (another visitor's
pair load, a fetched model's conversion) is subtracted with it: app/side_work.py names that.
"""
from __future__ import annotations

import os
import time

import torch

DISTURBED_CORES = 0.5   # others used this much more than the cores torch leaves free: the race was disturbed
TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100   # /proc counts CPU time in these


def _machine_busy_s() -> float | None:
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / TICKS_PER_S


def _own_s() -> float:
    t = os.times()
    return t.user + t.system


def disturbed(share: float | None, threads: int | None = None, cores: int | None = None) -> bool:
    """Did others take cores the decoding threads needed? (a browser on the core left free does not)
    `threads`: the threads torch decodes with (by default, this process's setting)."""
    threads = threads or torch.get_num_threads()
    cores = cores or os.cpu_count() or 1
    return share is not None and share * cores > max(0, cores - threads) + DISTURBED_CORES


class OtherLoad:
    """Started when a race starts; `share()` is the fraction of all cores others used since."""

    def __init__(self):
        self.wall0, self.busy0, self.own0 = time.monotonic(), _machine_busy_s(), _own_s()

    def share(self) -> float | None:
        busy = _machine_busy_s()
        wall = time.monotonic() - self.wall0
        if busy is None or self.busy0 is None or wall <= 0:
            return None
        others = (busy - self.busy0) - (_own_s() - self.own0)
        return max(0.0, others / (wall * (os.cpu_count() or 1)))


def busy_words(others: float | None, side=(), shared: bool = False) -> str:
    """"" for a quiet machine, else the few words a verdict gives for not trusting one race (the page's
    status and the CLI say the same): other programs' share of the CPU, this server's side work, or
    another decoding job beside the race."""
    if disturbed(others):
        return f"other programs used {others:.0%} of its CPU"
    if side:
        return "this server was " + "; ".join(side)
    return "another decoding job ran beside it" if shared else ""
