"""merlin-core 23.08's tag semantics (merlin.schema.TagSet): compound tags (``user_id``...) are
stored as their parts, a tag added to a column drops the existing tags it collides with (the
later tag wins), and ``select_by_tag`` of one compound tag requires all of its parts.

Every expected value below is what NVTabular 23.08 / merlin-core 23.08 gives for the same call
(checked side by side with /tmp/nvt2, the reference install)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ColumnSchema, ColumnSelector, Schema, Tags, ops


def frame() -> pd.DataFrame:
    return pd.DataFrame({"user": ["u%d" % (i % 7) for i in range(40)], "item": [i % 11 for i in range(40)],
                         "city": ["c%d" % (i % 3) for i in range(40)], "x": [float(i) for i in range(40)]})


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "d.parquet"
    frame().to_parquet(path, index=False)
    return tp.Dataset(str(path))


def fit(node, ds):
    wf = tp.Workflow(node)
    wf.fit(ds)
    return wf


def tags(col) -> list:
    return sorted(col.tags)


def user_item(ds):
    return fit((["user"] >> ops.Categorify() >> ops.TagAsUserID())
               + (["item"] >> ops.Categorify() >> ops.TagAsItemID()), ds)


# -- select_by_tag of a compound tag ------------------------------------------------------------
def test_select_by_compound_tag_requires_its_parts(data):
    s = user_item(data).output_schema
    # merlin: tags {'user': ['categorical', 'id', 'user'], 'item': ['categorical', 'id', 'item']}
    assert tags(s["user"]) == ["categorical", "id", "user"]
    assert tags(s["item"]) == ["categorical", "id", "item"]
    assert s.select_by_tag(Tags.USER_ID).column_names == ["user"]
    assert s.select_by_tag(Tags.ITEM_ID).column_names == ["item"]
    assert s.select_by_tag("user_id").column_names == ["user"]
    assert s.select_by_tag(["user_id"]).column_names == ["user"]
    assert s.excluding_by_tag(Tags.USER_ID).column_names == ["item"]
    # merlin: [USER_ID, ITEM] is the set {user, id, item}, any of them
    assert s.select_by_tag([Tags.USER_ID, Tags.ITEM]).column_names == ["user", "item"]


def test_select_by_tag_any_case():
    s = Schema([ColumnSchema("a", tags=["categorical", "user_id"]), ColumnSchema("b", tags=["continuous", "item"])])
    # merlin: ['a'], and ColumnSchema(tags=['Categorical', 'USER_ID']).tags == {categorical, user, id}
    assert s.select_by_tag(["CATEGORICAL"]).column_names == ["a"]
    assert tags(ColumnSchema("c", tags=["Categorical", "USER_ID"])) == ["categorical", "id", "user"]


def test_compound_tag_round_trip_through_output_folder(data, tmp_path):
    wf = user_item(data)
    out = str(tmp_path / "out")
    wf.transform(data).to_parquet(out)
    s2 = tp.Dataset(out, engine="parquet").schema
    assert s2.select_by_tag(Tags.USER_ID).column_names == ["user"]   # merlin: ['user']
    wf2 = fit(ColumnSelector(tags=[Tags.USER_ID]) >> ops.Rename(postfix="_s"), tp.Dataset(out, engine="parquet"))
    assert wf2.output_schema.column_names == ["user_s"]             # merlin: ['user_s']


def test_old_output_folder_with_user_id_tag(data, tmp_path):
    """A _schema.json written before the tags were split (``user_id`` stored as such)."""
    wf = fit(["user", "item"] >> ops.Categorify(), data)
    out = tmp_path / "old"
    wf.transform(data).to_parquet(str(out))
    path = out / "_schema.json"
    doc = json.loads(path.read_text())
    for col in doc["columns"]:
        if col["name"] == "user":
            col["tags"] = ["categorical", "user_id"]
    path.write_text(json.dumps(doc))
    s = tp.Dataset(str(out), engine="parquet").schema
    assert tags(s["user"]) == ["categorical", "id", "user"]
    assert s.select_by_tag(Tags.USER_ID).column_names == ["user"]
    assert s.select_by_tag(Tags.ID).column_names == ["user"]
    wf2 = fit(ColumnSelector(tags=[Tags.USER_ID]) >> ops.Rename(postfix="_s"), tp.Dataset(str(out), engine="parquet"))
    assert wf2.output_schema.column_names == ["user_s"]


def test_saved_workflow_keeps_compound_semantics(data, tmp_path):
    wf = user_item(data)
    wf.save(str(tmp_path / "wf"))
    back = tp.Workflow.load(str(tmp_path / "wf"))
    assert back.output_schema.select_by_tag(Tags.USER_ID).column_names == ["user"]
    assert tags(back.output_schema["user"]) == ["categorical", "id", "user"]


def test_old_saved_workflow_with_user_id_in_input_schema(data, tmp_path):
    """workflow.json whose input schema carries a ``user_id`` tag as one string (older files)."""
    wf = fit(ColumnSelector(tags=[Tags.USER_ID]) >> ops.Rename(postfix="_s"),
             tp.Dataset(frame(), schema=Schema([ColumnSchema("user", dtype="str", tags=["user_id"]),
                                               ColumnSchema("item", dtype="int64"), ColumnSchema("city", dtype="str"),
                                               ColumnSchema("x", dtype="float64")])))
    assert wf.output_schema.column_names == ["user_s"]
    folder = tmp_path / "wf"
    wf.save(str(folder))
    spec_path = folder / "workflow.json"
    spec = json.loads(spec_path.read_text())
    for col in spec["input_schema"]["columns"]:
        if col["name"] == "user":
            col["tags"] = ["user_id"]
    spec_path.write_text(json.dumps(spec))
    back = tp.Workflow.load(str(folder))
    assert back.output_schema.column_names == ["user_s"]
    assert tags(back.output_schema["user_s"]) == ["id", "user"]


# -- compound tags are stored as their parts ----------------------------------------------------
def test_compound_tags_are_split_everywhere(data):
    wf = fit((["user"] >> ops.Categorify() >> ops.AddTags([Tags.USER_ID]))
             + (["item"] >> ops.AddMetadata(tags=["item_id", "categorical"]))
             + (["city"] >> ops.Categorify() >> ops.AddTags([Tags.SESSION_ID])), data)
    s = wf.output_schema
    # merlin's values
    assert {n: tags(s[n]) for n in s.column_names} == {
        "user": ["categorical", "id", "user"], "item": ["categorical", "id", "item"],
        "city": ["categorical", "id", "session"]}
    assert s.select_by_tag(Tags.USER).column_names == ["user"]
    assert s.select_by_tag(Tags.ITEM).column_names == ["item"]
    assert s.select_by_tag(Tags.ID).column_names == ["user", "item", "city"]
    assert s.select_by_tag(Tags.SESSION).column_names == ["city"]


def test_column_schema_splits_compound_tags():
    sch = Schema([ColumnSchema("user", tags=[Tags.CATEGORICAL, Tags.USER_ID]), ColumnSchema("item", tags=[Tags.ITEM_ID]),
                  ColumnSchema("t", tags=["text_tokenized"])])
    assert tags(sch["user"]) == ["categorical", "id", "user"]
    assert tags(sch["item"]) == ["id", "item"]
    assert tags(sch["t"]) == ["text", "tokenized"]
    assert sch.select_by_tag(Tags.ID).column_names == ["user", "item"]
    assert tags(ColumnSchema("u").with_tags(Tags.USER_ID)) == ["id", "user"]
    assert tags(ColumnSchema("u").with_(add_tags=["session_id"])) == ["id", "session"]
    assert ColumnSchema.from_dict({"name": "u", "tags": ["item_id"]}).tags == ("id", "item")


def test_dataset_schema_argument_splits_compound_tags():
    ds = tp.Dataset(frame(), schema=Schema([ColumnSchema("user", dtype="str", tags=[Tags.USER_ID]),
                                            ColumnSchema("item", dtype="int64"), ColumnSchema("city", dtype="str"),
                                            ColumnSchema("x", dtype="float64")]))
    assert tags(ds.schema["user"]) == ["id", "user"]
    assert ds.schema.select_by_tag(Tags.USER).column_names == ["user"]


# -- colliding tags: the later one wins ---------------------------------------------------------
CHAINS = [  # name, column, ops, merlin's tags, CATEGORICAL selects it, merlin's get_embedding_sizes
    ("Categorify >> Normalize", "item", lambda: [ops.Categorify(), ops.Normalize()], ["continuous"], False, {}),
    ("Categorify >> LogOp", "item", lambda: [ops.Categorify(), ops.LogOp()], ["continuous"], False, {}),
    ("Categorify >> NormalizeMinMax", "item", lambda: [ops.Categorify(), ops.NormalizeMinMax()], ["continuous"],
     False, {}),
    ("Categorify >> AddTags([CONTINUOUS])", "item", lambda: [ops.Categorify(), ops.AddTags([Tags.CONTINUOUS])],
     ["continuous"], False, {}),
    ("Categorify >> AddTags([EMBEDDING])", "item", lambda: [ops.Categorify(), ops.AddTags([Tags.EMBEDDING])],
     ["embedding"], False, {}),
    ("Categorify >> LambdaOp(tags=[CONTINUOUS])", "item",
     lambda: [ops.Categorify(), ops.LambdaOp(lambda c: c * 1.0, tags=[Tags.CONTINUOUS])], ["continuous"], False, {}),
    ("Normalize >> Categorify", "x", lambda: [ops.Normalize(), ops.Categorify()], ["categorical"], True,
     {"x": (43, 16)}),
    # tabprep's documented extra tag "hashed" stays (it collides with nothing)
    ("Normalize >> HashBucket", "x", lambda: [ops.Normalize(), ops.HashBucket(5)], ["categorical", "hashed"], True,
     {"x": (5, 16)}),
    ("TagAsUserID >> Normalize", "item", lambda: [ops.TagAsUserID(), ops.Normalize()], ["continuous", "user"],
     False, {}),
]


@pytest.mark.parametrize("name,col,make,want,cat,emb", CHAINS, ids=[c[0] for c in CHAINS])
def test_later_tag_wins(data, name, col, make, want, cat, emb):
    node = [col]
    for op in make():
        node = node >> op
    wf = fit(node, data)
    s = wf.output_schema
    assert tags(s[col]) == want
    assert s.select_by_tag(Tags.CATEGORICAL).column_names == ([col] if cat else [])
    assert s.select_by_tag(Tags.CONTINUOUS).column_names == ([col] if "continuous" in want else [])
    assert tp.get_embedding_sizes(wf) == emb


def test_with_tags_and_add_tags_drop_colliding_tags():
    c = ColumnSchema("a", tags=["categorical", "id"])
    assert tags(c.with_tags("continuous")) == ["continuous"]          # merlin: {continuous}
    assert tags(c.with_tags(Tags.EMBEDDING)) == ["embedding"]          # merlin: {embedding}
    assert tags(c.with_(add_tags=["continuous"])) == ["continuous"]
    assert tags(ColumnSchema("b", tags=["continuous"]).with_tags("categorical")) == ["categorical"]
    assert tags(ColumnSchema("b", tags=["continuous"]).with_tags("id")) == ["id"]


def test_embedding_features_skip_a_normalized_categorify(data):
    wf = fit((["item"] >> ops.Categorify() >> ops.Normalize()) + (["user"] >> ops.Categorify()), data)
    s = wf.output_schema
    assert tp.get_embedding_sizes(wf) == {"user": (10, 16)}   # merlin: {"user": (10, 16)}
    assert s.select_by_tag(Tags.CATEGORICAL).column_names == ["user"]
    assert s.select_by_tag(Tags.CONTINUOUS).column_names == ["item"]


def test_old_files_with_colliding_tags_load():
    """Files written before tags collided may hold ``categorical`` and ``continuous`` together
    (merlin-core would refuse them): the one the chain's last op gave is kept, told by the dtype it
    left (Categorify >> Normalize: a float, continuous; Normalize >> Categorify: ids, categorical)."""
    old = {"columns": [{"name": "a", "dtype": "float64", "tags": ["categorical", "continuous"]},
                       {"name": "b", "dtype": "int64", "tags": ["categorical", "continuous", "hashed"]},
                       {"name": "c", "dtype": "int64", "tags": ["categorical", "user_id"]}]}
    s = Schema.from_dict(old)
    assert [tags(c) for c in s] == [["continuous"], ["categorical", "hashed"], ["categorical", "id", "user"]]
    assert Schema.from_dict(s.to_dict()) == s
