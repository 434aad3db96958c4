"""Helpers of the tests that run fresh interpreters side by side (tests/test_keras_backends.py,
tests/test_frameworks_together.py): each child mostly imports frameworks on one core, so they
start together and are waited for in turn."""
from __future__ import annotations

import subprocess
from typing import Callable, Dict


def run_side_by_side(starts: Dict[str, Callable[[], subprocess.Popen]],
                     timeout: float = 300) -> Dict[str, subprocess.CompletedProcess]:
    """Start every process of ``starts`` (name -> a function starting it with piped text output),
    then wait for each in turn (``timeout`` seconds each); their results by name. A process still
    running when this returns or raises (a timeout, a failed start) is killed."""
    procs: Dict[str, subprocess.Popen] = {}
    try:
        for name, start in starts.items():
            procs[name] = start()
        done = {}
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=timeout)
            done[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        return done
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
