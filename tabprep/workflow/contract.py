"""Binding a schema to a :class:`~tabprep.Workflow` (the input columns checked, every node's
schema computed) and the fitted input schema as a contract on the data a transform is given
(missing columns, kind changes, casts). Mixed into :class:`tabprep.Workflow`; split out of
:mod:`tabprep.workflow.workflow`."""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from .. import backend
from .._util import did_you_mean, refuse_duplicate_columns
from .._warn import warn_once
from ..ops.node import warn_shadowed
from ..schema import (Schema, check_input_dtypes, drift_message, kind_mismatch_message, merge_column_schemas, nest_like,
                      normalize_dtype, unit_drift)


class WorkflowContract:
    """The schema binding and the input contract of :class:`tabprep.Workflow`."""

    # -- schema ----------------------------------------------------------------------
    def _bind(self, input_schema: Schema, source: str = "the dataset") -> None:
        """Check every selected column exists and compute every node's schema."""
        tagged = any(n.kind == "select" and n.tags for n in self.nodes)
        for n in self.nodes:  # ColumnSelector(tags=...): the schema's tagged columns, fixed from now on
            n.resolve_tags(input_schema)
        if tagged:  # the columns a tag selection brought in may now come from two branches
            for n in self.nodes:
                n._out = None
            warn_shadowed(self.output_node)
        for col in self.input_columns:
            if col not in input_schema:
                raise self._missing_column(col, input_schema.column_names, source)
        # an op's output columns may depend on fitted statistics (DropLowCardinality): ask again
        for n in self.nodes:
            n._out = None
        schemas: Dict[int, Schema] = {}
        inputs: Dict[int, Schema] = {}   # what each node receives (its node.input_schema)
        for n in self.nodes:
            if n.kind == "select":
                inputs[id(n)] = schemas[id(n)] = input_schema.select(n.columns)
            elif n.kind == "concat":
                sch = Schema()
                for p in n.parents:
                    sch = sch + schemas[id(p)]
                if sum(len(schemas[id(p)]) for p in n.parents) != len(sch):
                    # a column from several branches: the later one's values, both schemas merged
                    # (NVTabular's rule, see Node.concat_sources)
                    cols: Dict[str, Any] = {}
                    for p in n.parents:
                        for c in schemas[id(p)]:
                            cols[c.name] = merge_column_schemas(cols[c.name], c) if c.name in cols else c
                    sch = Schema([cols[c] for c in n.output_columns])
                inputs[id(n)] = schemas[id(n)] = sch
            elif n.kind == "drop":
                inputs[id(n)] = schemas[id(n.parents[0])]
                schemas[id(n)] = schemas[id(n.parents[0])].select(n.output_columns)
            else:
                inp = Schema()
                for p in n.parents:
                    inp = inp + schemas[id(p)]
                sources = n.dependency_sources()  # argument columns computed by dependency nodes
                for dep in n.op.dependencies():
                    if dep not in inp:
                        src = sources.get(dep)
                        inp = inp + (schemas[id(src)] if src is not None else input_schema).select([dep])
                nested = [c for c in n.input_columns if c in inp and inp[c].is_list and inp[c].dtype.startswith("list<")]
                if nested and not getattr(n.op, "supports_nested", False):
                    raise TypeError(f"{n.op.label}: column(s) {nested} in {source} hold nested lists (list<list<...>>), "
                                    f"which tabprep's ops and loaders do not support; flatten them to one list level "
                                    f"(or leave them out of the ops: plain selected columns pass through)")
                n.op.check_input(inp, n.input_columns)
                inputs[id(n)] = inp
                schemas[id(n)] = n.op.compute_output_schema(inp, n.input_columns)
                refuse_duplicate_columns(n.output_columns, f"the output of {n.op.label} on {n.input_columns}",
                                         "a Rename f / postfix that maps each column to its own name")  # issue #30
                if nested:   # outputs of the nested inputs keep their nesting (and per-level counts)
                    schemas[id(n)] = nest_like(schemas[id(n)], inp, nested)
        # NVTabular's input_schema: the columns the graph reads (selections, op dependencies), in
        # first-use order, not every column of the data it was bound to
        self.input_schema = input_schema.select([c for c in self.input_columns if c in input_schema])
        self._node_schemas = {self.node_id(n): schemas[id(n)] for n in self.nodes}
        self._output_schema = schemas[id(self.output_node)].select(self.output_columns)
        for n in self.nodes:   # NVTabular's node.input_schema / output_schema: this workflow's, the latest
            n._schemas = (inputs[id(n)], schemas[id(n)])

    def _missing_column(self, col: str, available: Any, source: str) -> KeyError:
        """The error for an input column ``col`` absent from ``source`` (whose columns are
        ``available``): the ops that read it, close matches, the columns there are."""
        hint = did_you_mean(col, available, sep=", ", capitalize=True)
        users = [n.op.label for n in self.nodes if n.kind == "op" and col in n.input_columns + n.raw_dependencies()]
        where = f" (used by {', '.join(dict.fromkeys(users))})" if users else ""
        return KeyError(f"column {col!r}{where} is not in {source}.{' ' + hint if hint else ''} "
                        f"Available columns: {available[:50]}" + (" ..." if len(available) > 50 else ""))

    # -- the input contract ----------------------------------------------------------------
    def _check_contract(self, given: Schema, source: str, cast: bool) -> Dict[str, str]:
        """Check ``given`` against the fitted input schema (without re-binding: transform never
        changes the fitted workflow). Missing columns raise KeyError with close matches; kind
        changes raise TypeError naming column, dtypes and the fix unless ``cast``. Returns the
        ``{column: fitted dtype}`` casts to apply (empty unless ``cast``)."""
        fitted = self.input_schema
        for col in self.input_columns:
            if col not in given:
                raise self._missing_column(col, given.column_names, source)
        bad = check_input_dtypes(fitted, given, self.input_columns)
        lists = [c for c in bad if fitted[c].is_list != given[c].is_list]
        if lists:
            msgs = [kind_mismatch_message(c, fitted[c].dtype, _shown_dtype(given[c]), fitted[c].is_list).split("; ")[0]
                    + "; list and scalar columns do not convert: give the fitted layout" for c in lists]
            raise TypeError(f"{source} does not match the fitted input schema: " + "\n".join(msgs))
        # list<list<..>> vs list<..>: no cast changes the nesting, whatever ``cast`` says (issue #31)
        nesting = [c for c in bad if fitted[c].is_list and given[c].is_list
                   and normalize_dtype(fitted[c].dtype).count("list<") != str(_shown_dtype(given[c])).count("list<")]
        if nesting:
            raise TypeError(f"{source} does not match the fitted input schema: " + "\n".join(
                kind_mismatch_message(c, fitted[c].dtype, _shown_dtype(given[c]), True) for c in nesting))
        if bad and not cast:
            # one sentence for all the drifted columns (a csv round trip drifts many at once), the fix once
            raise TypeError(f"{source} does not match the fitted input schema: "
                            + drift_message([(c, fitted[c].dtype, _shown_dtype(given[c])) for c in bad]))
        casts = {c: fitted[c].dtype for c in bad}
        # times in another unit: converted to the fitted unit (exactly, or refused) even without cast
        casts.update({c: fitted[c].dtype for c in self.input_columns
                      if c in fitted and c in given and not fitted[c].is_list and not given[c].is_list
                      and unit_drift(fitted[c].dtype, given[c].dtype)})
        return casts

    def _enforce_contract(self, df: Any, source: str, cast: bool) -> Any:
        """``df`` checked against the contract (and cast when ``cast``); memoized per dtypes."""
        key = (tuple(df.columns), tuple(str(d) for d in df.dtypes.tolist()), bool(cast))
        memo = self.__dict__.setdefault("_contract_memo", {})
        casts = memo.get(key)
        if casts is None:
            refuse_duplicate_columns(key[0], source)
            wanted = set(self.input_columns)  # once, not per column (5,000 columns: minutes)
            cols = [c for c in df.columns if c in wanted]
            casts = self._check_contract(Schema.from_frame(df[cols]) if cols else Schema(), source, cast)
            if len(memo) > 64:  # a long-lived serving process seeing ever new dtype sets
                memo.clear()
            memo[key] = casts
        if casts:
            df = df.assign(**{c: backend.cast_safely(df[c], dt, c) for c, dt in casts.items()})
        return df


def _shown_dtype(col: Any) -> str:
    return col.dtype if col.dtype != "str" else "str (strings)"


def check_declared_ints(label: str, out: Any, schema: Optional[Schema]) -> None:
    """A user's op whose transform returns fractional floats for a column its output schema
    declares int: the workflow would cast them to that int (:func:`conform_output`) and truncate them
    silently, where NVTabular keeps what the op returns. An error naming the op, column and fix."""
    if schema is None or not len(out):
        return
    for name, dtype in zip(out.columns, out.dtypes):
        col = schema.column_schemas.get(name)
        if (col is not None and not col.is_list and col.dtype[:3] in ("int", "uin") and "float" in str(dtype)
                and bool((out[name] % 1 != 0).any())):
            raise ValueError(
                f"{label} returns {dtype} values with fractions for column {name!r}, which its output schema "
                f"declares {col.dtype}: tabprep would truncate them to {col.dtype} (NVTabular keeps what the op "
                f"returns). Declare the output dtype in the op's column_schema (or compute_output_schema)")


def check_narrowing(values: Any, name: str, have: str, want: str) -> None:
    """Before an output column of numeric dtype ``have`` is cast to the output schema's ``want``:
    data wider than the fitted input dtype, passed through (or renamed, or through a LambdaOp that
    keeps its input's dtype). NVTabular passes it through as given; tabprep's output schema is fixed
    at fit. Ints ``want`` cannot hold (``2**40`` into int32, negatives into uint) and finite floats
    beyond float32's range raise ``ValueError`` naming the column, both dtypes, examples and the fix,
    where the cast wrapped them (or made them inf) silently; a narrowing that keeps the values
    (or rounds floats to float32) warns once per column and dtypes (:class:`NVTabularDifferenceWarning`).
    Other casts (an empty partition's drift, int -> wider int) pass without a word."""
    src, dst = np.dtype(have), np.dtype(want)
    if src.kind in "iu" and dst.kind in "iu":
        lo, hi = np.iinfo(dst).min, np.iinfo(dst).max
        if np.iinfo(src).min >= lo and np.iinfo(src).max <= hi:
            return   # wider: every value fits
        bad = (values < lo) | (values > hi) if len(values) else None
    elif src.kind == "f" and dst.kind == "f" and src.itemsize > dst.itemsize:
        limit = float(np.finfo(dst).max)
        bad = ((values > limit) | (values < -limit)) & (values.abs() != np.inf) if len(values) else None
    else:
        return
    if bad is not None and bool(bad.any()):
        examples = backend.to_numpy(values[bad].head(3)).tolist()
        raise ValueError(f"output column {name!r} is {want} in the workflow's fitted output schema, but the data gives "
                         f"{have} values {want} cannot hold, e.g. {examples} (NVTabular passes {have} through). Refit "
                         f"the workflow on {have} data, or bring those values into the {want} range")
    kept = "rounded to float32" if dst.kind == "f" else "unchanged"
    warn_once(("narrowed", name, have, want),
              f"output column {name!r} is {want} in the workflow's fitted output schema and the data gives {have}: "
              f"the output keeps {want} (values {kept}), where NVTabular passes {have} through; refit the "
              f"workflow on {have} data to keep {have} (docs/migration.md, 'Where the behaviour differs')", stacklevel=3)


def conform_output(out: Any, schema: Schema) -> Any:
    """Cast columns whose dtype drifted (e.g. on an empty partition, or data wider than the fitted
    dtype passed through) back to the schema's dtype; a narrower dtype only where it holds the
    values (:func:`~tabprep.workflow.contract.check_narrowing`)."""
    casts = {}
    # the frame's dtypes in one call: a column lookup per output column costs ~0.1 ms each on cuDF,
    # once per chunk of an online loader
    dtypes = dict(zip(out.columns, out.dtypes))
    for col in schema:
        if col.is_list or col.name not in dtypes:
            continue
        have = str(dtypes[col.name])
        if normalize_dtype(have) != col.dtype and col.dtype != "str" and col.dtype in _NUMERIC:
            if not col.dtype.startswith("float") and (out[col.name].isna().any() if len(out) else False):
                continue   # (nulls have no int / bool value: the column keeps its nullable dtype)
            check_narrowing(out[col.name], col.name, normalize_dtype(have), col.dtype)
            casts[col.name] = col.dtype
    return out.astype(casts) if casts else out


_NUMERIC = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "bool"}
