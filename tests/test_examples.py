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
