"""What the user reads (issue #32): one refusal for all drifted columns, counts that agree with
their nouns, a spec's feature names kept by `inspect`, TensorFlow's C++ logging off in the CLI,
and `demo --help` promising only what the demo does."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import tabprep as tp
from tabprep import ops
from tabprep.cli.main import cli

REPO = Path(__file__).resolve().parent.parent


def _invoke(args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_cast_refusal_lists_all_drifted_columns_once_with_the_fix_once(tmp_path: Path) -> None:
    # a csv round trip: int columns with a null come back as floats, an id column as strings
    fitted = pd.DataFrame({f"i{k}": np.arange(4, dtype="int64") for k in range(5)})
    fitted["s"] = ["a", "b", "c", "d"]
    fitted["x"] = [0.5, 1.5, 2.5, 3.5]
    wf = tp.Workflow(list(fitted.columns) >> ops.Categorify()).fit(fitted)
    given = fitted.astype({f"i{k}": "float64" for k in range(5)})
    given.loc[0, "i0"] = np.nan
    given["s"] = [1, 2, 3, 4]
    with pytest.raises(TypeError) as e:
        wf.transform(given)
    msg = str(e.value)
    assert "\n" not in msg
    assert "6 columns changed type since fit: i0, i1, i2, i3, i4 (int64 -> float64); s (str -> int64)." in msg
    assert msg.count("cast=True") == 1 and msg.count("--cast") == 1
    assert "x" not in msg.split("since fit:")[1].split(".")[0]  # an unchanged column is not named

    one = fitted.astype({"i3": "float64"})
    with pytest.raises(TypeError, match=r"1 column changed type since fit: i3 \(int64 -> float64\)\. Pass cast=True"):
        wf.transform(one)


def test_cli_transform_of_a_csv_round_trip_refuses_in_one_sentence(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": [1, 2, 3, 4], "b": [5, 6, 7, 8], "c": ["x", "y", "x", "y"]})
    df.to_parquet(tmp_path / "train.parquet")
    (tmp_path / "spec.yaml").write_text("features:\n  - columns: [a, b, c]\n    ops: [Categorify]\n")
    r = _invoke(["fit", tmp_path / "spec.yaml", tmp_path / "train.parquet", "--out", tmp_path / "wf", "-q"])
    assert r.exit_code == 0, r.output
    df.assign(a=[1.0, None, 3.0, 4.0], b=[5.0, 6.0, 7.0, None]).to_csv(tmp_path / "round.csv", index=False)
    r = _invoke(["transform", tmp_path / "wf", tmp_path / "round.csv", "--out", tmp_path / "out", "-q"])
    assert r.exit_code == 1
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1, r.output
    assert "2 columns changed type since fit: a, b (int64 -> float64)." in lines[0]
    assert lines[0].count("--cast") == 1


def test_counts_agree_with_their_nouns(tmp_path: Path) -> None:
    r = _invoke(["generate", "criteo", "--rows", 1, "--files", 1, "--out", tmp_path / "one"])
    assert r.exit_code == 0, r.output
    assert "1 criteo row ->" in r.output and "1 criteo rows" not in r.output
    (tmp_path / "spec.yaml").write_text("features:\n  - columns: [C1]\n    ops: [Categorify]\n  - columns: [label]\n")
    r = _invoke(["fit-transform", tmp_path / "spec.yaml", tmp_path / "one", "--out", tmp_path / "out"])
    assert r.exit_code == 0, r.output
    assert "1 row, 1 partition, 1 pass over the data" in r.output, r.output
    assert "1 row -> 1 parquet file in" in r.output, r.output
    r = _invoke(["inspect", tmp_path / "out"])
    assert r.exit_code == 0, r.output
    assert "1 row in 1 file," in r.output and "output schema (2 columns)" in r.output, r.output
    r = _invoke(["generate", "criteo", "--rows", 3, "--files", 2, "--out", tmp_path / "three"])
    assert "3 criteo rows ->" in r.output


SPEC = """version: 1
features:
  - columns: [C1]
    ops: [Categorify]
  - name: clipped
    columns: [I1, I2]
    ops: [FillMissing, {Clip: {min_value: 0}}]
  - columns: [{feature: clipped}, I3]
    ops: [LogOp]
  - columns: [label]
"""


def test_inspect_shows_the_spec_feature_names(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    pd.DataFrame({"C1": rng.integers(0, 5, 50), "I1": rng.normal(size=50), "I2": rng.normal(size=50),
                  "I3": rng.random(50), "label": rng.integers(0, 2, 50)}).to_parquet(tmp_path / "d.parquet")
    (tmp_path / "spec.yaml").write_text(SPEC)
    r = _invoke(["fit", tmp_path / "spec.yaml", tmp_path / "d.parquet", "--out", tmp_path / "wf", "-q"])
    assert r.exit_code == 0, r.output
    r = _invoke(["inspect", tmp_path / "wf"])
    assert r.exit_code == 0, r.output
    assert "name: clipped" in r.output and "{feature: clipped}" in r.output and "feature_1" not in r.output, r.output
    # the same through the Python API: to_spec of the loaded workflow names it too
    spec = tp.Workflow.load(str(tmp_path / "wf")).to_spec()
    assert [f.get("name") for f in spec["features"]] == [None, "clipped", None, None]


def test_cli_silences_tensorflow_cpp_logging_unless_the_user_chose_a_level() -> None:
    code = ("import os\nfrom tabprep.cli.main import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'))\n")
    base = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    base["PYTHONPATH"] = str(REPO)
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=base, timeout=120)
    assert quiet.stdout.split()[-1] == "2", quiet.stdout + quiet.stderr
    chosen = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(base, TF_CPP_MIN_LOG_LEVEL="0"), timeout=120)
    assert chosen.stdout.split()[-1] == "0", chosen.stdout + chosen.stderr


def test_demo_help_promises_what_the_demo_does(tmp_path: Path) -> None:
    help_text = " ".join(_invoke(["demo", "--help"]).output.split())
    assert "With --workdir DIR it keeps the files there and prints the equivalent `tabprep` commands" in help_text
    r = _invoke(["demo", "--rows", 2000])
    assert r.exit_code == 0, r.output
    assert "tabprep fit " not in r.output and "--workdir" in r.output
    r = _invoke(["demo", "--rows", 2000, "--workdir", tmp_path / "demo"])
    assert r.exit_code == 0, r.output
    assert "the same job with commands:" in r.output and f"tabprep fit {tmp_path / 'demo'}" in r.output
