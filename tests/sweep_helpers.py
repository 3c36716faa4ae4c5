"""Batch functions for the sweep's pool tests: they run in spawned worker processes, so they live
in a module the workers can import by name (tests/ is on the path spawn gives them)."""

import os
import signal
import time

from engine.sweep.worker import run_many

CRASH = "c0003"
HANG = "c0002"


def crashing(config, tasks):
    """Kill the worker process, as a fault in durable-rules' C code would, on one case."""
    if any(t.case == CRASH for t in tasks):
        os.kill(os.getpid(), signal.SIGSEGV)
    return run_many(config, tasks)


def hanging(config, tasks):
    """Never return on one case, as a loop in C would."""
    if any(t.case == HANG for t in tasks):
        time.sleep(3600)
    return run_many(config, tasks)


def scripted(config, tasks):
    """As a server's sweep jobs run cases, with faults a workload asks for by its name: 'crash-me'
    kills the worker process (a fault in C), 'slow-me' takes a second a case (a long sweep)."""
    for t in tasks:
        if "name: crash-me" in t.text:
            os.kill(os.getpid(), signal.SIGSEGV)
        if "slow-me" in t.text:
            time.sleep(1.0)
    return run_many(config, tasks)
