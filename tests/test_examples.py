"""The offline MovieLens example runs end to end and prints embedding sizes (no TensorFlow needed)."""
import os

import tabprep as tp


def test_example_movielens_etl_prints_embedding_sizes(tmp_path, monkeypatch, capsys):
    import sys

    examples = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
    monkeypatch.syspath_prepend(examples)
    import movielens_etl

    res = movielens_etl.main(["--rows", "3000", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert "multi-hot" in out and "genres" in res["multi"] and set(res["single"]) == {"userId", "movieId"}
    card, dim = res["multi"]["genres"]
    assert card == res["schema"]["genres"].cardinality and dim >= 16
    assert res["schema"]["label"].dtype == "int8" and res["rows"] == 3000
    loaded = tp.Workflow.load(str(tmp_path / "workflow"))
    assert loaded.output_schema == res["schema"]
    sys.modules.pop("movielens_etl", None)


def test_example_serving_fits_saves_serves_and_queries(tmp_path, monkeypatch, capsys):
    import sys

    import numpy as np

    examples = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
    monkeypatch.syspath_prepend(examples)
    # the example starts `python -m tabprep.cli serve` in a subprocess: it must import this checkout
    monkeypatch.setenv("PYTHONPATH", os.path.dirname(examples) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    import serving

    res = serving.main(["--rows", "5000", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert "equal to wf.transform" in out and "HTTP /transform" in out
    local = res["in_process"]
    assert res["http_one"]["C1"] == int(local["C1"][0]) > 2 and local["C3"][0] == 2  # seen id; unseen -> OOV 2
    assert np.float32(res["http_one"]["I1"]) == local["I1"][0]
    assert res["http_rows"][1]["C1"] == 1 and res["http_rows"][0] == res["http_one"]  # null -> 1
    assert res["refused"][0] == 422 and res["refused"][1]["column"] == "C1"
    assert res["schema"]["embedding_sizes"]["C1"][0] == tp.Workflow.load(str(tmp_path / "workflow")).output_schema["C1"].cardinality
    sys.modules.pop("serving", None)


def _load_example(name):
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_per_worker_split_ranks_disjoint_complete(tmp_path, capsys):
    # the example asserts: ranks disjoint and complete, each row once per epoch, folder == global_rank shard
    res = _load_example("per_worker_split").main(["--rows", "6000", "--workers", "3", "--batch", "256",
                                                  "--dir", str(tmp_path)])
    assert res["sizes"] == [2000, 2000, 2000]
    assert "ranks disjoint and complete" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.startswith("worker_")) == \
        ["worker_0", "worker_1", "worker_2"]


def test_example_torch_dlrm_loss_falls(tmp_path):
    import pytest

    pytest.importorskip("torch")
    res = _load_example("torch_dlrm").main(["--rows", "8000", "--batch", "1024", "--epochs", "2", "--buckets", "500",
                                            "--dim", "8", "--cpu", "--dir", str(tmp_path)])
    assert res["losses"][-1] < res["losses"][0]


def test_example_jax_movielens_loss_falls_one_compile(tmp_path):
    import pytest

    pytest.importorskip("jax")
    res = _load_example("jax_movielens").main(["--rows", "12000", "--batch", "1024", "--epochs", "3", "--cpu",
                                               "--dir", str(tmp_path)])
    assert res["losses"][-1] < res["losses"][0]
    assert res["compiles"] == 1                      # dense lists + drop_last: one shape, one compile


def test_example_sok_split_every_rank_reads_its_keys_in_order(tmp_path, capsys):
    # the SOK notebook's data path: nested samples.tolist() (100 x 10), passthrough split
    # (out_files_per_proc and split_per_worker), one KerasSequenceLoader per rank, the reshape;
    # the example asserts each rank's keys equal its contiguous range of the samples, in order
    import pytest

    pytest.importorskip("tensorflow")
    res = _load_example("sok_split").main(["--rows", "64", "--gpu-num", "2", "--batch", "16", "--dir", str(tmp_path)])
    assert res == {"rows": 64, "ranks": 2, "files": {"out_files_per_proc": 2, "split_per_worker": 2}}
    assert "every rank read exactly its rows' keys in order" in capsys.readouterr().out
