"""Progress bars and per-op profiles for the command line.

:class:`Progress` is a ``progress(stage, done, total)`` callback (the one
:meth:`tabprep.Workflow.fit` and :func:`tabprep.io.writer.write_dataset` take) that draws a bar
on stderr: partitions done, rows done (estimated from the partitions when the input row count is
known), rate and ETA. On a terminal it redraws one line; otherwise (logs of a scheduler) it
prints a line when a stage starts, about every 10 seconds, and when it ends.

Per-op times come from the workflow's ``op_timer`` hook: :func:`record` is set as the hook (it
pickles by reference, so dask.distributed workers record into their own process) and
:func:`collect_and_reset` gathers the totals (``client.run`` collects them from workers).
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, Dict, List, Optional, TextIO, Tuple

import click

BAR_WIDTH = 24
LOG_EVERY_S = 10.0


def count(n: int, noun: str, plural: str = "") -> str:
    """``count(1, "file")`` -> ``'1 file'``, ``count(2000, "row")`` -> ``'2,000 rows'``."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def human(n: float) -> str:
    """1234567 -> '1.23M'."""
    n = float(n)
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:.0f}" if n == int(n) else f"{n:.3g}"


def duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"
    m, s = divmod(int(round(seconds)), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


class Progress:
    """A ``(stage, done, total)`` callback drawing progress bars.

    Args:
        rows: rows of the input (for the rows column, the rate and the ETA); None if unknown.
        enabled: False draws nothing (quiet mode).
        stream: where to draw (default stderr).
    """

    def __init__(self, rows: Optional[int] = None, enabled: bool = True, stream: Optional[TextIO] = None,
                 rename: Optional[Dict[str, str]] = None) -> None:
        self.rows = rows
        self.rename = rename or {}
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.stage: Optional[str] = None
        self.total = 0
        self.done = 0
        self.start = 0.0
        self._last_draw = 0.0
        self._lock = threading.Lock()
        #: (stage, seconds, partitions) of every finished stage
        self.finished: List[Tuple[str, float, int]] = []

    def __call__(self, stage: str, done: int, total: int) -> None:
        stage = self.rename.get(stage, stage)
        with self._lock:
            now = time.perf_counter()
            if stage != self.stage:
                self._end_line()
                self.stage, self.start, self._last_draw = stage, now, 0.0
            self.total, self.done = total, done
            if done >= total:
                self.finished.append((stage, now - self.start, total))
                self._draw(now, final=True)
                self.stage = None
            elif done == 0 or (self.tty and now - self._last_draw > 0.1) or now - self._last_draw > LOG_EVERY_S:
                self._draw(now)

    def tick(self) -> None:
        """One more partition of the current stage is done (for finer-grained fit progress)."""
        with self._lock:
            stage, done, total = self.stage, self.done, self.total
        if stage is not None and done + 1 < total:
            self(stage, done + 1, total)

    def line(self, now: Optional[float] = None) -> str:
        now = time.perf_counter() if now is None else now
        elapsed = now - self.start
        frac = self.done / self.total if self.total else 1.0
        filled = int(round(frac * BAR_WIDTH))
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        unit = "files" if str(self.stage).startswith("write") else "partitions"
        parts = [f"{self.stage:<20} [{bar}] {self.done}/{self.total} {unit}"]
        if self.rows is not None:
            rows_done = int(self.rows * frac)
            parts.append(f"{human(rows_done)}/{human(self.rows)} rows")
            if elapsed > 0 and rows_done:
                parts.append(f"{human(rows_done / elapsed)} rows/s")
        elif elapsed > 0 and self.done:
            parts.append(f"{self.done / elapsed:.2f} partitions/s")
        if 0 < self.done < self.total and elapsed > 0:
            parts.append(f"ETA {duration(elapsed * (self.total - self.done) / self.done)}")
        else:
            parts.append(duration(elapsed))
        return "  ".join(parts)

    def _draw(self, now: float, final: bool = False) -> None:
        self._last_draw = now
        if not self.enabled:
            return
        text = self.line(now)
        if self.tty:
            self.stream.write("\r" + text + ("\n" if final else "\x1b[K"))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._open = self.tty and not final
        global _OPEN_BAR
        _OPEN_BAR = self if self._open else None

    def _end_line(self) -> None:
        if self.enabled and getattr(self, "_open", False):
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


_OPEN_BAR: Optional[Progress] = None


def end_open_bar() -> None:
    """End a bar left mid-line (before an error message is printed)."""
    bar = _OPEN_BAR
    if bar is not None:
        bar._end_line()


class FitTicker:
    """A dask local-scheduler callback that ticks ``progress`` for every finished per-partition fit task.

    :meth:`Workflow.fit` reports only the start and the end of each pass (its reduction is one
    ``dask.compute``); this fills in the partitions in between. It has no effect on a
    dask.distributed cluster (there the bar moves once per pass).
    """

    def __init__(self, progress: Progress) -> None:
        from dask.callbacks import Callback
        from dask.utils import key_split

        outer = progress

        class _CB(Callback):
            def _posttask(self, key, result, dsk, state, worker_id):  # noqa: D401 - dask hook
                if key_split(key) == "_fit_partition":
                    outer.tick()

        self._cb = _CB()

    def __enter__(self) -> "FitTicker":
        self._cb.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._cb.__exit__(*exc)


# -- per-op times --------------------------------------------------------------------------
_LOCK = threading.Lock()
_TIMES: Dict[Tuple[str, str, str], List[float]] = {}


def record(node_id: str, label: str, kind: str, seconds: float, rows: int) -> None:
    """The ``Workflow.op_timer`` hook: add one call's time and rows."""
    key = (node_id, label, kind)
    with _LOCK:
        entry = _TIMES.get(key)
        if entry is None:
            _TIMES[key] = [1, seconds, rows]
        else:
            entry[0] += 1
            entry[1] += seconds
            entry[2] += rows


def collect_and_reset() -> List[Tuple[str, str, str, int, float, int]]:
    """``[(node_id, label, kind, calls, seconds, rows)]`` recorded in this process since the last call."""
    with _LOCK:
        out = [(k[0], k[1], k[2], int(v[0]), float(v[1]), int(v[2])) for k, v in _TIMES.items()]
        _TIMES.clear()
    return out


def gather_times(client: Any = None) -> List[Tuple[str, str, str, int, float, int]]:
    """Times recorded here and, with a dask.distributed client, on every worker (then reset)."""
    rows = collect_and_reset()
    if client is not None:
        for worker_rows in client.run(collect_and_reset).values():
            rows.extend(tuple(r) for r in worker_rows)
    merged: Dict[Tuple[str, str, str], List[float]] = {}
    for nid, label, kind, calls, secs, n in rows:
        m = merged.setdefault((nid, label, kind), [0, 0.0, 0])
        m[0] += calls
        m[1] += secs
        m[2] += n
    return [(k[0], k[1], k[2], int(v[0]), float(v[1]), int(v[2])) for k, v in merged.items()]


def profile_table(stage: str, times: List[Tuple[str, str, str, int, float, int]], wf: Any,
                  wall: Optional[float] = None) -> List[Dict[str, Any]]:
    """Rows of the per-op summary (JSON-able), slowest first."""
    nodes = wf.nodes_by_id()
    total = sum(t[4] for t in times) or 1e-12
    out = []
    for nid, label, kind, calls, secs, rows in sorted(times, key=lambda t: -t[4]):
        n = nodes.get(nid)
        cols = n.input_columns if n is not None else []
        out.append({"stage": stage, "node": nid, "op": label, "kind": kind, "columns": _short_cols(cols),
                    "calls": calls, "seconds": round(secs, 4), "share": round(secs / total, 4),
                    "rows_per_s": round(rows / secs) if secs > 0 else None, "stage_wall_s": wall})
    return out


def _short_cols(cols: List[str]) -> str:
    if len(cols) <= 3:
        return ", ".join(cols)
    return f"{cols[0]}, {cols[1]} ... {cols[-1]} ({len(cols)})"


def echo_profile(rows: List[Dict[str, Any]], err: bool = False) -> None:
    if not rows:
        click.echo("profile: no op ran", err=err)
        return
    click.echo("profile (op time summed over partitions and threads; fit = per-partition statistics, "
               "transform = the op's transform; (io) read / write = each partition's parquet read and write):", err=err)
    head = f"  {'stage':<10} {'op':<22} {'kind':<9} {'columns':<28} {'calls':>6} {'seconds':>9} {'share':>6} {'rows/s':>9}"
    click.echo(head, err=err)
    for r in rows:
        rate = human(r["rows_per_s"]) if r["rows_per_s"] else "-"
        click.echo(f"  {r['stage']:<10} {r['op'][:22]:<22} {r['kind']:<9} {r['columns'][:28]:<28} {r['calls']:>6} "
                   f"{r['seconds']:>9.3f} {r['share'] * 100:>5.1f}% {rate:>9}", err=err)
