"""An aborted write on object storage (a failed task, SIGTERM, Ctrl-C) returns only when the
writes of its tasks still in flight in this process have ended: a part whose upload finished
after the abort listed the folder, in a process that exited right after the abort, was left
behind (about 5 SIGTERMs in 65 of `tabprep transform ... s3://...`; once as the folder's only
object, no marker: a plain parquet folder with a third of the rows). The task's own check
(``confirm_written``) deletes it, so waiting for it leaves the folder empty.
"""
from __future__ import annotations

import threading
import time

from tabprep.io import objectstore
from tabprep.io.layout import OUTPUT


def test_abort_waits_for_a_write_in_flight_then_leaves_nothing(s3):
    url = s3.url("out")
    st = objectstore.stage(url, OUTPUT, overwrite=False, txid="t1")
    part = f"{url}/part-00000.parquet"
    started, release = threading.Event(), threading.Event()

    def task():   # a writer task: its upload is under way when the abort starts
        with objectstore.writing(url):
            started.set()
            release.wait(10)
            s3.fs.pipe(part, b"PAR1 data PAR1")
            try:
                objectstore.confirm_written(url, [part])
            except RuntimeError:
                pass   # aborted meanwhile: it deleted its file

    t = threading.Thread(target=task)
    t.start()
    assert started.wait(10)
    aborter = threading.Thread(target=st.abort)
    aborter.start()
    aborter.join(0.5)
    assert aborter.is_alive(), "abort returned while a task of the write was still uploading"
    release.set()
    aborter.join(20)
    t.join(10)
    assert not aborter.is_alive()
    s3.fs.invalidate_cache()
    assert s3.keys("out") == [], s3.keys("out")


def test_abort_gives_up_waiting_after_its_bound(s3, monkeypatch):
    # a task that never ends must not hang the abort (and the process's exit) forever
    monkeypatch.setattr(objectstore, "ABORT_WAIT_S", 0.3)
    url = s3.url("out2")
    st = objectstore.stage(url, OUTPUT, overwrite=False, txid="t2")
    hold = threading.Event()
    entered = threading.Event()

    def stuck():
        with objectstore.writing(url):
            entered.set()
            hold.wait(10)

    t = threading.Thread(target=stuck)
    t.start()
    assert entered.wait(10)
    t0 = time.monotonic()
    st.abort()
    assert time.monotonic() - t0 < 5
    hold.set()
    t.join(10)
