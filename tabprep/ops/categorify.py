"""Categorify: map categorical values to contiguous integer ids learned from the data."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import backend
from .._util import check_keyed_params, check_limits, whole_number
from .._warn import warn_difference
from ..hashing import murmur3_32
from ..schema import ColumnSchema, Schema, Tags, check_id_dtype, without_table_properties
from ..stats import vocab as V
from ._categorify_notes import (NULL_ELEMENT_ID, check_singled, note_category_ties, note_null_list_rows,
                                observed_counts)
from ._categorify_vocabs import NULL_ID, _given_vocabs, given_values, refuse_mixed_signedness
from ._combo import COMBO_KEY_FORMAT, _combo_series, combo_key, part_kind  # noqa: F401 (re-exported)
from ._lookups import build_once
from ._saved_state import check_vocabularies
from .base import StatOperator, bucket_counts, check_nvt_args, group_keys, singled_in_groups, state_file
from .embeddings import embedding_sizes_property

PAD_ID = 0
# NULL_ID = 1 (the null's id) comes from ._categorify_vocabs, which refuses nulls in given vocabularies
OOV_START = 2


class Categorify(StatOperator):
    """Encode categorical values (ints or strings, scalar or list columns) as int ids.

    Ids (compatible with NVTabular 23.08):

    * ``0``: padding (only ever produced for list columns, by ListSlice / loaders);
    * ``1``: null (NaN in a float column is null; +-inf is an ordinary value with its own id); a null
      element inside a list row gets ``2``, the out-of-vocabulary id, as in NVTabular 23.08;
    * ``2 .. 1+B``: out-of-vocabulary, ``B = num_oov_buckets``. With ``B == 1`` every unseen
      (or rare, see ``freq_threshold``) value gets id 2; with ``B > 1`` it gets
      ``2 + murmur3(value) % B``;
    * ``2+B ..``: the vocabulary, most frequent value first, ties by ascending value.

    ``cardinality = 2 + B + len(vocabulary)`` is stored in the output schema and drives
    :func:`tabprep.ops.get_embedding_sizes`; the schema also holds NVTabular's
    ``properties["embedding_sizes"] = {"cardinality": .., "dimension": ..}`` (the same pair) and
    ``domain = {"min": 0, "max": cardinality - 1, "name": vocabulary}``.

    Args:
        freq_threshold: values seen fewer times are out-of-vocabulary (0 keeps all). An int,
            or a dict ``{column: int}``.
        max_size: the most ids per column, as NVTabular 23.08: ids (and the embedding table's
            rows, ``cardinality``) stay below ``max_size``; the vocabulary keeps the
            ``max_size - 2 - num_oov_buckets`` most frequent values, the rest are out of
            vocabulary. 0: no limit; int or ``{column: int}``; at least ``2 + num_oov_buckets``.
        num_oov_buckets: number of out-of-vocabulary ids ``B`` (>= 1).
        vocabs: given vocabularies (NVTabular's ``vocabs=``): ``{column: values}`` (a list, numpy
            array or Series, in id order: the first value gets id ``2 + num_oov_buckets``; or the
            path of a parquet / ``.csv`` file whose column ``column``, or only column, holds them
            in id order, nulls dropped; read when the op is built) or a pandas DataFrame (one
            column per vocabulary). Values not in it are out of vocabulary;
            nulls and duplicates in it are refused; ``freq_threshold`` / ``max_size`` do not
            apply to it. Not with ``encode_type="combo"``.
        num_buckets: NVTabular's name of ``num_oov_buckets`` (an int; None: 1), or per
            vocabulary ``{column: int}`` (NVTabular's; a vocabulary not in it has
            ``num_oov_buckets`` ids): unseen (and, with ``freq_threshold`` / ``max_size``, rare)
            values hash into ``B`` ids.
        dtype: output integer dtype (default int64; None, NVTabular's default, is int64).
        single_table: NVTabular's option: one id range, one embedding table, for all the op's
            vocabularies (plain columns in selection order, then joint groups, as NVTabular's
            ``grouped_names``). Ids 0 (pad), 1 (null)
            and ``2 .. 1+B`` (out of vocabulary) are shared; each vocabulary's values follow the
            previous one's (NVTabular's ``fit_finalize``). Every column's ``cardinality`` (and
            embedding size) is the shared table's. Not with ``max_size``, nor with ``num_buckets``
            differing per column (``ValueError``). Default False: one id space per vocabulary.
        embedding_dim: overrides the embedding-size heuristic; an int or ``{column: int}``.
        encode_type: ``"joint"`` (default) gives each column, or each ``[["a", "b"]]`` group,
            its own vocabulary shared by the group's columns; ``"combo"`` encodes the
            combination of the grouped columns' values as one new column ``"a_b"``.
        on_host: on the GPU, merge value counts in host memory (for very high cardinality).
        out_path, cat_cache, name_sep, search_sorted, cardinality_memory_limit, tree_width,
            split_out, split_every: NVTabular 23.08's reduction and storage arguments, accepted so
            its pipelines run unchanged; they change no id. ``out_path`` warns (nothing is written
            there), ``name_sep`` must be ``"_"`` (see ``tabprep.ops.base.check_nvt_args``).

    Example:
        >>> cats = ["C1", "C2"] >> Categorify(freq_threshold=2)
        >>> shared = [["user_a", "user_b"]] >> Categorify()   # one vocabulary for both
    """

    keyed_statistics = True  # one vocabulary per column or column group: finalized in parallel per key

    output_tags = (Tags.CATEGORICAL,)
    supports_lists = True
    supports_nested = "leaves"   # nested lists: element-wise on the leaves, structure kept
    #: combined-key format of this op's vocabularies (see :data:`COMBO_KEY_FORMAT`); set by fit / load
    _combo_format: int = COMBO_KEY_FORMAT
    supports_groups = True

    def __init__(self, freq_threshold: Union[int, Dict[str, int]] = 0, max_size: Union[int, Dict[str, int]] = 0,
                 num_oov_buckets: int = 1, dtype: str = "int64",
                 embedding_dim: Union[None, int, Dict[str, int]] = None, encode_type: str = "joint",
                 on_host: bool = False, num_buckets: Union[None, int, Dict[str, int]] = None, vocabs: Any = None,
                 single_table: bool = False, out_path: Optional[str] = None, cat_cache: Any = "host",
                 name_sep: str = "_", search_sorted: bool = False, cardinality_memory_limit: Any = None,
                 tree_width: Any = None, split_out: Any = 1, split_every: Any = 8) -> None:
        check_nvt_args("Categorify", name_sep, out_path, hashed=num_buckets is not None)
        if search_sorted and freq_threshold:  # NVTabular's own refusal
            raise ValueError("Categorify: search_sorted=True cannot be combined with freq_threshold (as in NVTabular); "
                             "drop search_sorted, it changes no id in tabprep")
        # NVTabular's reduction / storage knobs, stored verbatim; they change no id (ops.base.check_nvt_args)
        self.out_path, self.cat_cache, self.name_sep, self.search_sorted = out_path, cat_cache, name_sep, search_sorted
        self.cardinality_memory_limit, self.tree_width = cardinality_memory_limit, tree_width
        self.split_out, self.split_every = split_out, split_every
        if single_table and max_size:
            # NVTabular's max_size caps each column's table; the shared table holds all of them
            raise ValueError("Categorify(single_table=True) cannot take max_size: max_size bounds each column's "
                             "embedding table, and single_table gives all columns one table whose ids exceed it. "
                             "Cap the vocabularies with freq_threshold, or use single_table=False")
        self.single_table = bool(single_table)
        if self.single_table:
            # NVTabular 23.08's own paths disagree here (docs/migration.md); say which numbers differ
            warn_difference("Categorify(single_table=True): tabprep gives nulls id 1 and unseen values id 2.. in every "
                            "column, and every column the shared table's embedding size; NVTabular 23.08 gives each "
                            "column's null and OOV the ids of its first two vocabulary values and sizes each table "
                            "by its own column (see docs/migration.md)", stacklevel=2, at_build=True)
        if num_buckets is not None:  # NVTabular's name of num_oov_buckets
            # NVTabular's per-column counts (a column not in the dict keeps num_oov_buckets, 1), or one
            # count (NVTabular: an int > 1, or None): whole numbers >= 1
            num_buckets = bucket_counts("Categorify", num_buckets)
            if isinstance(num_buckets, dict):
                num_buckets = {str(k): v for k, v in num_buckets.items()}
            if not isinstance(num_buckets, dict):
                if int(num_oov_buckets) not in (1, int(num_buckets)):
                    raise ValueError(f"Categorify got num_buckets={num_buckets} and num_oov_buckets={num_oov_buckets}: "
                                     f"they name the same thing (NVTabular's and tabprep's spelling); give one")
                num_oov_buckets = int(num_buckets)
            if not (max_size or freq_threshold):
                warn_difference("Categorify: num_buckets without max_size or freq_threshold: every fitted value has "
                                "its own id, so the OOV buckets only serve values unseen in the fit (as in NVTabular)",
                                stacklevel=2, at_build=True)
        dtype = "int64" if dtype is None else dtype  # NVTabular's dtype=None: the ids' own dtype, int64
        if whole_number(num_oov_buckets, 1) is None:   # (1.5 made one bucket, silently)
            raise ValueError(f"Categorify num_oov_buckets must be an int >= 1 (id 2 is the out-of-vocabulary id), "
                             f"got {num_oov_buckets!r}")
        if encode_type not in ("joint", "combo"):
            raise ValueError(f"encode_type must be 'joint' or 'combo', got {encode_type!r}")
        if np.dtype(dtype).kind not in "iu":
            raise ValueError(f"Categorify dtype must be an integer dtype, got {dtype!r}")
        check_limits("Categorify", {"freq_threshold": freq_threshold, "max_size": max_size})
        per_col = num_buckets if isinstance(num_buckets, dict) else {}
        sizes = max_size.items() if isinstance(max_size, dict) else (
            [(k, max_size) for k in per_col] + [(None, max_size)])
        for key, size in sizes:
            b = per_col.get(key, int(num_oov_buckets))
            if size and int(size) < OOV_START + b:
                where = f" for {key!r}" if key is not None else ""
                raise ValueError(f"Categorify max_size{where} is {size}, but ids 0 (padding), 1 (null) and "
                                 f"{OOV_START}..{OOV_START + b - 1} (out-of-vocabulary) always "
                                 f"exist: max_size must be at least {OOV_START + b} "
                                 f"(NVTabular: num_buckets + 2)")
        self.freq_threshold = freq_threshold
        self.max_size = max_size
        self.num_oov_buckets = int(num_oov_buckets)
        self.dtype = dtype
        self.embedding_dim = embedding_dim
        self.encode_type = encode_type
        self.on_host = on_host
        self.num_buckets = num_buckets
        if vocabs is not None and encode_type == "combo":
            raise ValueError("Categorify: vocabs= is not supported with encode_type='combo' (as in NVTabular)")
        #: given vocabularies, {name: [values in id order]} (JSON-able; see _given_vocabs)
        self.vocabs = _given_vocabs(vocabs)
        self.input_groups: List[List[str]] = []
        self.stats_: Optional[Dict[str, Any]] = None
        self._index_cache: Dict[Any, Any] = {}

    # -- column groups ----------------------------------------------------------------
    def _vocab_keys(self, columns: List[str]) -> Dict[str, List[str]]:
        """vocabulary name -> columns it encodes (joint) or combines (combo)."""
        return group_keys(columns, self.input_groups)

    def output_column_names(self, columns: List[str]) -> List[str]:
        if self.encode_type == "combo":
            return list(self._vocab_keys(columns))
        # NVTabular's ColumnSelector.names: the plain columns, then each group's (as the vocabularies)
        return list(dict.fromkeys(c for cols in self._vocab_keys(columns).values() for c in cols))

    def oov_buckets(self, key: str) -> int:
        """The number of out-of-vocabulary ids of vocabulary ``key``: ``num_buckets[key]`` with a
        per-column dict (NVTabular's), else ``num_oov_buckets``."""
        if isinstance(self.num_buckets, dict):
            return int(self.num_buckets.get(key, self.num_oov_buckets))
        return self.num_oov_buckets

    def _param(self, value: Any, key: str, default: int = 0) -> int:
        if isinstance(value, dict):
            return int(value.get(key, default))
        return int(value or default)

    def check_input(self, input_schema: Schema, columns: List[str]) -> None:
        super().check_input(input_schema, columns)
        # limits keyed by a name that is no vocabulary would be silently not applied (issue #30)
        check_keyed_params("Categorify", {"freq_threshold": self.freq_threshold, "max_size": self.max_size,
                                          "num_buckets": self.num_buckets},
                           self._vocab_keys(columns))
        if self.single_table and len({self.oov_buckets(k) for k in self._vocab_keys(columns)}) > 1:
            raise ValueError(f"Categorify(single_table=True): num_buckets gives the vocabularies different "
                             f"out-of-vocabulary counts ({ {k: self.oov_buckets(k) for k in self._vocab_keys(columns)} }), "
                             f"but the shared table has one OOV range 2..1+B: give one int num_buckets")
        check_singled(self, [c for c in singled_in_groups(self.input_groups) if c in columns], columns)
        for key, cols in self._vocab_keys(columns).items():
            if len(cols) < 2:
                continue
            known = [c for c in cols if c in input_schema]
            if self.encode_type == "combo":
                lists = [c for c in known if input_schema[c].is_list]
                if lists:
                    raise TypeError(f"Categorify(encode_type='combo') cannot combine list columns {lists} "
                                    f"(group {cols}); combine scalar columns only")
            else:
                refuse_mixed_signedness(cols, {c: input_schema[c].dtype for c in known})
                kinds = {c: "string" if input_schema[c].dtype == "str" else "numeric" for c in known}
                if len(set(kinds.values())) > 1:
                    raise TypeError(f"Categorify: the columns of the group {cols} share one vocabulary, so they must "
                                    f"all be strings or all numbers, got {kinds}; cast them first, or use "
                                    f"encode_type='combo' to encode their combination")

    # -- NVTabular's view of the vocabularies -----------------------------------------------------
    @property
    def categories(self) -> Dict[str, str]:
        """Vocabulary name -> path of a parquet file of it, as NVTabular 23.08's ``op.categories``
        (``unique.<name>.parquet``): one row per vocabulary value in id order, columns ``<name>``
        (the value) and ``<name>_size`` (its count in the fitted data), the index being the id.
        Written on first access after a fit into a temporary folder (empty dict before fit), which
        is removed with the op (garbage collected, or at the latest when the process exits) or when
        a later fit's vocabularies replace it: read the files while the op lives, or copy them."""
        if not self.stats_:
            return {}
        cached = getattr(self, "_categories_files", None)
        if cached is not None and cached[0] is self.stats_:
            return dict(cached[1])
        import shutil
        import tempfile
        import weakref

        if cached is not None:
            cached[2]()   # the previous fit's files (this op's own folder)
        folder = Path(tempfile.mkdtemp(prefix="tabprep-categories-"))
        # the folder is tabprep's: gone with the op or at exit, where it stayed in the temp dir for good
        remove = weakref.finalize(self, shutil.rmtree, str(folder), True)
        files = {}
        for key in self.stats_:
            frame = self.category_frame(key)
            path = folder / f"unique.{key}.parquet"
            frame.to_parquet(path)
            files[key] = str(path)
        self._categories_files = (self.stats_, files, remove)
        return dict(files)

    def category_frame(self, key: str) -> Any:
        """The vocabulary ``key`` as a pandas frame: ``<key>`` values and ``<key>_size`` counts,
        indexed by id (``2 + num_oov_buckets`` onwards), as NVTabular's unique-value files."""
        import pandas as pd

        self._require_fitted()
        st = self.stats_[key]
        values = shown_values(st)
        freqs = st.get("freqs")
        start = OOV_START + self.oov_buckets(key) + self.id_offset(key)
        index = pd.RangeIndex(start, start + len(values))  # unnamed, as in NVTabular 23.08's files
        data = {key: values}
        if freqs is not None:
            data[f"{key}_size"] = np.asarray(freqs, dtype="int64")
        return pd.DataFrame(data, index=index)

    # -- fit --------------------------------------------------------------------------
    def _key_series(self, key_cols: List[str], df: Any) -> List[Any]:
        if self.encode_type == "combo" and len(key_cols) > 1:
            return [_combo_series(df, key_cols, self._combo_format)]
        return [df[c] for c in key_cols]

    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, V.Counts]:
        out = {}
        for key, cols in self._vocab_keys(columns).items():
            counts = out[key] = V.partial_counts(self._key_series(cols, df), on_host=self.on_host)
            if self.encode_type == "combo" and len(cols) > 1 and self._combo_format >= 3:
                # ties of combined keys follow the tuples of values (NVTabular's sort of the columns)
                counts.combo = tuple(part_kind(df[c]) for c in cols)
        return out

    def fit_partial_columns(self, columns: List[str], cols: Dict[str, Any]) -> Optional[Dict[str, V.Counts]]:
        """:meth:`fit_partial` on host columns: int and bool columns (one vocabulary each, or joint
        groups); None for float columns (their counts follow pandas' value_counts) and combos."""
        keys = self._vocab_keys(columns)
        if self.encode_type == "combo" and any(len(g) > 1 for g in keys.values()):
            return None
        if any(cols[c].values.dtype.kind not in "iub" for c in columns):
            return None
        return {key: V.partial_counts([cols[c] for c in group], on_host=self.on_host) for key, group in keys.items()}

    def fit_combine(self, partials: List[Dict[str, V.Counts]]) -> Dict[str, V.Counts]:
        return {k: V.combine_counts([p[k] for p in partials]) for k in partials[0]}

    def _entries(self, key: str) -> Optional[int]:
        """How many values vocabulary ``key`` keeps at most (None: no limit). NVTabular's max_size
        bounds the ids (the embedding table): padding, null and the out-of-vocabulary ids come out
        of it, the vocabulary gets the rest (0 when they take it all)."""
        max_size = self._param(self.max_size, key)
        return max(max_size - (OOV_START + self.oov_buckets(key)), 0) if max_size else None

    def fit_split(self, combined: Dict[str, V.Counts], shards: int) -> List[Dict[str, V.Counts]]:
        """The partitioned finalize (``tabprep.workflow.reduction``): merged counts cut into parts
        by a hash of the value (``vocab.split_counts``)."""
        cut = {key: V.split_counts(counts, shards) for key, counts in combined.items()}
        return [{key: parts[j] for key, parts in cut.items()} for j in range(shards)]

    def fit_reduce(self, combined: Dict[str, V.Counts]) -> Dict[str, V.Counts]:
        """One part, merged over the workers, with ``freq_threshold`` and ``max_size`` applied
        (``vocab.reduce_counts``): ``fit_finalize`` of the parts' merge is that of the whole counts."""
        return {key: V.reduce_counts(observed_counts(self, key, counts), self._param(self.freq_threshold, key),
                                     self._entries(key)) for key, counts in combined.items()}

    def fit_finalize(self, columns: List[str], combined: Dict[str, V.Counts]) -> None:
        stats = {}
        for key, counts in combined.items():
            entries = self._entries(key)
            counts = observed_counts(self, key, counts)   # a category column's unused levels: none here
            values, freqs = V.finalize_vocab(counts, self._param(self.freq_threshold, key), entries or 0)
            note_category_ties(self, key, counts, values, freqs)
            if entries == 0:
                values, freqs = values[:0], freqs[:0]
            unsigned = counts.unsigned
            if self.vocabs and key in self.vocabs:
                # a given vocabulary (NVTabular's vocabs=): its order is the id order, no threshold
                values = given_values(key, self.vocabs[key], values)
                freqs = np.zeros(len(values), dtype="int64")
                values, unsigned = held_values(values)   # (numpy's type of ints from 2**63 on is uint64)
            stats[key] = {"values": values, "freqs": freqs, "nulls": counts.nulls}
            if unsigned:
                stats[key]["unsigned"] = True   # uint64 values, held as their int64 bits (see shown_values)
            # the largest id: the vocabulary's last value, after pad, null and the OOV ids (issue #30)
            reserved = OOV_START + self.oov_buckets(key)
            check_id_dtype(self.dtype, reserved + len(values) - 1, f"Categorify column {key!r}",
                           f"{len(values)} categories (+ {reserved} reserved ids)")
        self.stats_ = stats
        self._index_cache = {}

    def id_offset(self, key: str) -> int:
        """How far vocabulary ``key``'s ids are shifted: 0, or with ``single_table`` the number of
        values of the vocabularies before it (NVTabular 23.08's ``_reset_df_index``)."""
        if not self.single_table:
            return 0
        return self._single_table()[0][key]

    def _single_table(self) -> Any:
        """``({key: offset}, size of the shared table)``, computed once per fitted ``stats_``."""
        self._require_fitted()
        cached = getattr(self, "_table_layout", None)
        if cached is not None and cached[0] is self.stats_:
            return cached[1]
        offsets, total = {}, 0
        for key, st in self.stats_.items():  # key order: the selection's (kept by keyed fits and saves)
            offsets[key] = total
            total += len(st["values"])
        oov = max((self.oov_buckets(k) for k in self.stats_), default=self.num_oov_buckets)
        check_id_dtype(self.dtype, OOV_START + oov + total - 1, "Categorify(single_table=True)",
                       f"{total} categories in the shared table (+ {OOV_START + oov} reserved ids)")
        layout = (offsets, OOV_START + oov + total)
        self._table_layout = (self.stats_, layout)
        return layout

    def clear(self) -> None:
        self.stats_ = None
        self._index_cache = {}
        self._combo_format = COMBO_KEY_FORMAT

    # -- transform -------------------------------------------------------------------
    def _index(self, key: str, like: Any) -> Any:
        # built once per process: the partition tasks of a worker's threads all start with
        # an empty cache, and each used to build its own copy (on 2 GPU workers of 4 threads,
        # 200M Criteo rows: transform task-seconds 10.4 against 3.7 in one process)
        return build_once(self._index_cache, (key, backend.device(like)),
                          lambda: V.vocab_index(self.stats_[key]["values"], like))

    def warm_lookups(self, like: Any) -> None:
        """Build every vocabulary's lookup structure for ``like``'s device now (see
        :mod:`tabprep.ops._lookups`); a no-op before fit."""
        for key in self.stats_ or {}:
            self._index(key, like)

    def _encode(self, s: Any, key: str, null_id: int = NULL_ID) -> Any:
        """int64 ids (numpy or cupy) of a scalar series (its nulls: ``null_id``; list leaves: 2)."""
        if len(s) == 0:
            # e.g. a lazy transform's meta, computed in the client: no lookup structure is built
            # there for nothing (on a cluster the workers build their own)
            return backend.array_module(s).zeros(0, dtype="int64")
        data = backend.int_data(s) if V.is_int_like(s) else None  # values and null mask, read once
        pos = V.index_of(s, self._index(key, s), data=data)
        ids = pos + (OOV_START + self.oov_buckets(key) + self.id_offset(key))  # a fresh array: updated below
        unseen = pos < 0
        if backend.any_true(unseen):
            # copyto(where=): element-wise on cupy, where a boolean-mask assignment is a scan
            # compiled per array size on a fresh GPU worker
            xp = backend.array_module(ids)
            nulls = data[1] if data is not None else backend.isnull(s)
            if self.oov_buckets(key) == 1:
                xp.copyto(ids, OOV_START, where=unseen)
            else:
                h = backend.murmur3(s).astype("int64") % self.oov_buckets(key)
                xp.copyto(ids, OOV_START + h, where=unseen)
            if nulls is not None:
                # index_of gives -1 for nulls, so they are among the unseen
                xp.copyto(ids, null_id, where=nulls)
        return ids

    def column_kernel(self, column: str) -> Any:
        """Host kernel (see :meth:`Operator.column_kernel`) for a numeric column of a ``joint``
        vocabulary: the lookup of :meth:`_encode` on the column's numpy values."""
        if not self.fitted:
            return None
        ((key, cols),) = self._vocab_keys([column]).items()
        if self.encode_type == "combo" and len(cols) > 1:
            return None
        return lambda col: self._encode_host(col, key)

    def _encode_host(self, col: Any, key: str) -> Any:
        """:meth:`_encode` of a :class:`~tabprep.backend.HostColumn`: ints (and bools) widened to int64 as
        ``int_data`` does, floats as they are (NaN is null); None for other dtypes and device columns."""
        if not isinstance(col, backend.HostColumn):   # numpy lookup; cuDF keeps transform's libcudf path
            return None
        v = col.values
        kind = v.dtype.kind
        if len(v) == 0 and kind in "iubf":
            return backend.HostColumn(np.zeros(0, dtype=self.dtype), None, owned=True)
        if kind in "iub":
            q = v if v.dtype == np.int64 else v.astype(np.int64)
            nulls = col.mask
        elif kind == "f":
            q = v
            nulls = np.isnan(v)
            nulls = nulls if nulls.any() else None
        else:
            return None
        ids = backend.index_of_values(q, self._index(key, q))  # a fresh array: updated in place below
        offset = self.id_offset(key)
        base = OOV_START + self.oov_buckets(key) + offset
        unseen = (ids < 0) if self.oov_buckets(key) > 1 or offset else None
        ids += base  # absent (-1) becomes OOV_START when there is one out-of-vocabulary id and no offset
        if unseen is not None and self.oov_buckets(key) == 1:
            ids[unseen] = OOV_START
        if unseen is not None and nulls is not None:
            unseen &= ~nulls
        if unseen is not None and self.oov_buckets(key) > 1 and unseen.any():
            hashed = q[unseen] if kind != "f" else q[unseen].astype(np.float64)
            h = murmur3_32(hashed).astype(np.uint32, copy=False).astype(np.int64) % self.oov_buckets(key)
            ids[unseen] = OOV_START + h
        if nulls is not None:
            ids[nulls] = NULL_ID
        return backend.HostColumn(ids if self.dtype == "int64" else ids.astype(self.dtype), None, owned=True)

    def transform(self, columns: List[str], df: Any) -> Any:
        self._require_fitted()
        out = {}
        for key, cols in self._vocab_keys(columns).items():
            if self.encode_type == "combo" and len(cols) > 1:
                s = _combo_series(df, cols, self._combo_format)
                out[key] = backend.new_series(self._encode(s, key), like=s, name=key, dtype=self.dtype)
                continue
            for c in cols:
                s = df[c]
                if backend.is_list_series(s):
                    note_null_list_rows(self, c, s)
                    leaves, offsets = backend.list_leaves(s)
                    ids = self._encode(leaves, key, NULL_ELEMENT_ID).astype(self.dtype)  # as NVTabular
                    out[c] = backend.list_from_leaves(ids, offsets, like=s, name=c)
                else:
                    out[c] = backend.new_series(self._encode(s, key), like=s, name=c, dtype=self.dtype)
        names = self.output_column_names(columns)
        return backend.make_frame({n: out[n] for n in names}, like=df)

    # -- schema ----------------------------------------------------------------------
    def cardinality(self, key: str) -> Optional[int]:
        if not self.stats_:
            return None
        if self.single_table:  # every column's table is the shared one
            return self._single_table()[1]
        return OOV_START + self.oov_buckets(key) + len(self.stats_[key]["values"])

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        out = []
        for key, cols in self._vocab_keys(columns).items():
            targets = [key] if self.encode_type == "combo" and len(cols) > 1 else cols
            for c in targets:
                src = input_schema[c] if c in input_schema else input_schema[cols[0]]
                props = {"num_oov_buckets": self.oov_buckets(key), "vocabulary": key,
                         # NVTabular's properties: the options as given (num_buckets None by default)
                         "num_buckets": (self.num_buckets.get(key, self.num_oov_buckets)
                                         if isinstance(self.num_buckets, dict) else self.num_buckets),
                         "freq_threshold": self._param(self.freq_threshold, key),
                         "max_size": self._param(self.max_size, key)}
                card = self.cardinality(key)
                dim = self.embedding_dim.get(c) if isinstance(self.embedding_dim, dict) else self.embedding_dim
                if dim is not None:
                    props["embedding_dim"] = int(dim)
                if card is not None:
                    props["cardinality"] = card
                    props["domain"] = {"min": 0, "max": card - 1}
                    props["embedding_sizes"] = embedding_sizes_property(card, dim)  # NVTabular's property
                # an input's table sizes (e.g. a HashBucket's) are not this op's: never carried over
                inherited = without_table_properties(src.properties)
                out.append(ColumnSchema(c, dtype=self.dtype, tags=tuple(src.tags) + (Tags.CATEGORICAL,),
                                        properties={**inherited, **props}, is_list=src.is_list,
                                        is_ragged=src.is_ragged, value_count=src.value_count))
        return Schema(out)

    # -- persistence -------------------------------------------------------------------
    @classmethod
    def files_named(cls, config: Dict[str, Any], has_state: bool) -> List[tuple]:
        # a saved Categorify holds its given vocabularies' values; a path there is an edited file
        vocabs = config.get("vocabs")
        return [(f"vocabs[{k!r}]", v) for k, v in vocabs.items() if isinstance(v, str)] if isinstance(vocabs, dict) else []

    def to_config(self) -> Dict[str, Any]:
        cfg = dict(self.get_params())
        return cfg

    def save_state(self, path: Path) -> Dict[str, Any]:
        """One folder per vocabulary holding parquet parts of at most ``V.PART_ROWS`` rows
        (``value``, ``count``) in id order, so huge vocabularies are written and read in pieces."""
        path.mkdir(parents=True, exist_ok=True)
        meta = {}
        for i, (key, st) in enumerate(self.stats_.items()):
            values = shown_values(st)   # uint64 vocabularies saved as uint64 values (issue: saved as negative numbers)
            freqs = np.asarray(st["freqs"], dtype="int64")
            n = len(values)
            files = []
            for j, start in enumerate(range(0, max(n, 1), V.PART_ROWS)):
                fname = f"vocab_{i:03d}.part_{j:04d}.parquet"
                stop = min(start + V.PART_ROWS, n)
                table = pa.table({"value": pa.array(values[start:stop]),
                                  "count": pa.array(freqs[start:stop], type=pa.int64())})
                pq.write_table(table, path / fname)
                files.append(fname)
            meta[key] = {"files": files, "nulls": st["nulls"], "size": n}
        return {"vocabularies": meta, "input_groups": self.input_groups, "combo_key_format": self._combo_format}

    def load_state(self, path: Path, meta: Dict[str, Any]) -> None:
        combo_format, stats = check_vocabularies(self.label, meta), {}
        for key, m in meta["vocabularies"].items():
            files = m.get("files") or [m["file"]]
            table = pa.concat_tables([pq.read_table(state_file(self, path, f)) for f in files])
            col = table.column("value")
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                values = np.asarray(col.to_pylist(), dtype=object)
            else:
                values = col.to_numpy()
            values, unsigned = held_values(values)
            stats[key] = {"values": values, "freqs": table.column("count").to_numpy(), "nulls": m["nulls"]}
            if unsigned:
                stats[key]["unsigned"] = True
        self.stats_ = stats
        self._combo_format = combo_format  # 1 saved before format 2: keep its ids
        self._index_cache = {}

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_index_cache"] = {}  # rebuilt lazily where the op runs
        state.pop("_table_layout", None)
        state.pop("_categories_files", None)   # the folder stays this op's: a copy writes its own
        return state

    def state_for_workers(self, state: Dict[str, Any]) -> Dict[str, Any]:
        """Vocabularies without their counts (``freqs`` None): the transform looks ids up in the
        values only; the counts are for saving and ``tabprep inspect``, in the client. Half the
        bytes each worker receives (the Criteo vocabularies: int64 values and int64 counts)."""
        stats = state.get("stats_")
        if not stats:
            return state
        return dict(state, stats_={k: dict(st, freqs=None) if isinstance(st, dict) and "freqs" in st else st
                                   for k, st in stats.items()})


def _host(values: Any) -> Any:
    return backend.to_host(values)  # a numpy copy of a cupy array; host arrays as they are


def held_values(values: Any) -> "tuple[Any, bool]":
    """``(values as the vocabulary holds them, unsigned?)``: uint64 values as their int64 bits, which
    the lookups compare with a column's (:func:`shown_values` is the inverse); others as they are."""
    unsigned = getattr(values, "dtype", None) == np.uint64
    return (values.view(np.int64) if unsigned else values), unsigned


def shown_values(st: Dict[str, Any]) -> Any:
    """A vocabulary's values as users see them (host): a uint64 vocabulary's int64 bits as uint64."""
    values = _host(st["values"])
    return values.view(np.uint64) if st.get("unsigned") else values
