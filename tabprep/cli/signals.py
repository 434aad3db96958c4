"""Stop signals reach the CLI's main thread wherever the kernel delivers them.

The kernel hands a process-directed signal (``kill PID``, Ctrl-C's SIGINT to the terminal's
process group) to any thread that does not block it. CPython runs the Python handler in the main
thread only, and only once that thread runs Python code again. A main thread blocked in a lock
wait (dask's threaded scheduler waits for its tasks with ``queue.get()``, no timeout) wakes when
the signal interrupts *its* wait; a signal delivered to a worker thread interrupted nothing
there, so a ``tabprep`` job whose remaining task did not return stayed alive after SIGTERM (about
1 run in 60 of tests/test_trust_signals.py did, in CI).

:class:`MainThreadRelay` fixes that: while active, the signal module's wakeup fd (written by
CPython's C handler, in whatever thread the signal landed) is read by a small thread, which sends
the signal again to the main thread alone (``pthread_kill``) until the main thread's handler has
run. Nothing is relayed once the handler ran, nor after :meth:`MainThreadRelay.stop`.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Dict, Sequence

#: seconds the relay waits for the main thread's own handler before sending the signal there
#: again (a signal that did land on the main thread is being handled: no second one is needed)
GRACE = 0.05


class MainThreadRelay:
    """Re-send ``signums`` to the main thread until their handler ran there (:meth:`handled`).

    Start it in the main thread after installing the handlers; the handlers call
    :meth:`handled` with their signal number. :meth:`stop` before restoring other handlers."""

    def __init__(self, signums: Sequence[int]) -> None:
        import signal

        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("MainThreadRelay starts in the main thread (signal.set_wakeup_fd's rule)")
        self._signal = signal
        self._wanted = {int(s) for s in signums}
        self._done: Dict[int, bool] = {s: False for s in self._wanted}
        self._lock = threading.Lock()
        self._active = True
        self._main = threading.main_thread().ident
        self._r, self._w = os.pipe()
        os.set_blocking(self._w, False)   # CPython's C handler must never block on a full pipe
        self._previous_fd = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._run, name="tabprep-signal-relay", daemon=True)
        self._thread.start()

    def handled(self, signum: int) -> None:
        """The main thread's handler of ``signum`` ran: relay it no more."""
        self._done[int(signum)] = True

    def _run(self) -> None:
        while True:
            try:
                data = os.read(self._r, 64)
            except OSError:
                return
            if not data:   # stop() closed the write end
                return
            for signum in sorted(set(data) & self._wanted):
                self._relay(signum)

    def _relay(self, signum: int) -> None:
        time.sleep(GRACE)   # a signal that landed on the main thread is handled meanwhile
        with self._lock:
            if self._active and not self._done[signum]:
                # its C handler writes to the wakeup fd again: read above, relayed again after
                # GRACE until the handler has run (a main thread in a call that ignores EINTR)
                self._signal.pthread_kill(self._main, signum)

    def stop(self) -> None:
        """Relay nothing more; give the wakeup fd back to its previous owner (in the main thread)."""
        with self._lock:
            self._active = False
        try:
            self._signal.set_wakeup_fd(self._previous_fd)
        except ValueError:   # pragma: no cover - stop() from another thread: leave the fd, just end
            pass
        os.close(self._w)
        self._thread.join(timeout=1.0)
        os.close(self._r)


__all__ = ["MainThreadRelay", "GRACE"]
