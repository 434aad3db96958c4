"""A saved workflow from an untrusted place reads no file outside its folder (docs/guide/guarantees.md),
also where workflow.json is edited to name one: a Categorify vocabulary path in its parameters, a
JoinExternal side table whose saved copy was removed, a statistics file that is a symbolic link in a
folder of format 1 (no checksums), a stats/ folder that is a link. Each was read, found by an
adversarial review (2026-11-29); ``trusted=True`` still reads the first two, as the user asked."""
from __future__ import annotations

import json
import os
import shutil

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _edit(folder, fn) -> None:
    path = os.path.join(folder, "workflow.json")
    with open(path) as fh:
        spec = json.load(fh)
    fn(spec)
    with open(path, "w") as fh:
        json.dump(spec, fh)


def _outside(tmp_path, values) -> str:
    path = str(tmp_path / "outside.parquet")
    pd.DataFrame({"c": values}).to_parquet(path)
    return path


def test_a_categorify_vocabulary_path_in_the_parameters_is_refused(tmp_path):
    wf_dir = str(tmp_path / "wf")
    tp.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["a", "b", "b"]})).save(wf_dir)
    secret = _outside(tmp_path, ["SECRET_X", "SECRET_Y"])

    def point(spec):
        for n in spec["nodes"]:
            if n.get("op") == "Categorify":
                n["params"]["vocabs"] = {"c": secret}

    _edit(wf_dir, point)
    with pytest.raises(ValueError, match=r"workflow.json.*Categorify.*vocabs\['c'\].*outside.parquet.*trusted=True"):
        tp.Workflow.load(wf_dir)
    loaded = tp.Workflow.load(wf_dir, trusted=True)   # the user's choice: loads; the saved vocabulary encodes
    assert loaded.transform(pd.DataFrame({"c": ["b", "SECRET_X"]}))["c"].tolist() == [3, 2]


def test_a_join_external_side_table_named_outside_without_its_saved_copy_is_refused(tmp_path):
    wf_dir = str(tmp_path / "wf")
    side = pd.DataFrame({"k": [1, 2], "v": [10, 20]})
    tp.Workflow(["k"] >> ops.JoinExternal(side, on="k")).fit(pd.DataFrame({"k": [1, 2]})).save(wf_dir)
    secret = str(tmp_path / "secret.parquet")
    pd.DataFrame({"k": [1, 2], "v": [111111, 222222]}).to_parquet(secret)

    def point(spec):
        for n in spec["nodes"]:
            if n.get("op") == "JoinExternal":
                n["params"]["df_or_path"] = secret
                n.pop("state", None)
                n.pop("state_dir", None)
        spec["stats_files"] = {}

    _edit(wf_dir, point)
    shutil.rmtree(os.path.join(wf_dir, "stats"))
    with pytest.raises(ValueError, match=r"workflow.json.*JoinExternal.*df_or_path.*secret.parquet.*trusted=True"):
        tp.Workflow.load(wf_dir)
    out = tp.Workflow.load(wf_dir, trusted=True).transform(pd.DataFrame({"k": [1]}))
    assert out["v"].tolist() == [111111]


def test_a_saved_join_external_with_its_side_table_still_loads(tmp_path):
    # the side table named by path and saved with the workflow: the saved copy is read, not the path
    path = str(tmp_path / "side.parquet")
    pd.DataFrame({"k": [1, 2], "v": [10, 20]}).to_parquet(path)
    wf_dir = str(tmp_path / "wf")
    tp.Workflow(["k"] >> ops.JoinExternal(path, on="k")).fit(pd.DataFrame({"k": [1, 2]})).save(wf_dir)
    os.remove(path)
    assert tp.Workflow.load(wf_dir).transform(pd.DataFrame({"k": [2]}))["v"].tolist() == [20]


def _categorify_folder(tmp_path) -> str:
    wf_dir = str(tmp_path / "wf")
    tp.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["a", "b", "b", "c"]})).save(wf_dir)
    return wf_dir


def test_a_symbolic_link_in_a_format_1_folder_is_refused(tmp_path):
    wf_dir = _categorify_folder(tmp_path)
    stats = os.path.join(wf_dir, "stats", "n1")
    name = os.listdir(stats)[0]
    secret = str(tmp_path / "secret.parquet")
    shutil.copy(os.path.join(stats, name), secret)

    def version_1(spec):
        spec["format_version"] = 1
        del spec["stats_files"]

    _edit(wf_dir, version_1)
    os.remove(os.path.join(stats, name))
    os.symlink(secret, os.path.join(stats, name))
    with pytest.raises(ValueError, match="symbolic link"):
        tp.Workflow.load(wf_dir)


def test_a_stats_folder_that_is_a_link_is_refused(tmp_path):
    wf_dir = _categorify_folder(tmp_path)
    moved = str(tmp_path / "elsewhere")
    shutil.move(os.path.join(wf_dir, "stats"), moved)
    os.symlink(moved, os.path.join(wf_dir, "stats"))
    with pytest.raises(ValueError, match="symbolic link"):
        tp.Workflow.load(wf_dir)


def test_a_stats_folder_that_is_a_link_is_refused_in_a_format_1_folder_too(tmp_path):
    # format 1 has no checksums: the check at each file an op reads must see the link above it
    wf_dir = _categorify_folder(tmp_path)

    def version_1(spec):
        spec["format_version"] = 1
        del spec["stats_files"]

    _edit(wf_dir, version_1)
    moved = str(tmp_path / "elsewhere")
    shutil.move(os.path.join(wf_dir, "stats"), moved)
    os.symlink(moved, os.path.join(wf_dir, "stats"))
    with pytest.raises(ValueError, match="symbolic link"):
        tp.Workflow.load(wf_dir)
