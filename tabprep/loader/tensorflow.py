"""TensorFlow / Keras adapter of the online loader (NVTabular's names and parameters).

>>> import os; os.environ["TF_MEMORY_ALLOCATION"] = "0.5"   # before TensorFlow claims the GPU
>>> from tabprep.loader.tensorflow import KerasSequenceLoader, KerasSequenceValidater
>>> train = KerasSequenceLoader("raw/train/*.parquet", batch_size=65536, label_names=["label"],
...                             shuffle=True, buffer_size=0.06, parts_per_chunk=2, seed=0)
>>> train.map(tp.Workflow.load("wf/"))          # online transform, per chunk
>>> model.fit(train, epochs=1, callbacks=[KerasSequenceValidater(valid)])

Each batch is ``(features, labels)`` (just ``features`` when there are no labels), with
``features`` a dict of tensors:

* single-valued columns: shape ``(batch, 1)`` (categorical ids keep their integer dtype,
  continuous float columns are float32, integer ones keep their dtype);
* multi-hot (list) columns, by default two entries: ``<name>__values`` (all the rows' values,
  flat, shape ``(nnz, 1)``) and ``<name>__nnzs`` (values per row, int64, ``(batch, 1)``);
  with ``ragged=True`` one ``tf.RaggedTensor`` of shape ``(batch, None)``; with
  ``sparse_as_dense=True`` one dense ``(batch, max_len)`` tensor right-padded with 0.

``labels`` is a ``(batch, 1)`` tensor for one label, a dict ``{name: tensor}`` for several.

``stacked=True``: ``{"cats": (batch, n_cats), "conts": (batch, n_conts), <list columns as above>}``
and labels ``(batch, n_labels)`` (:mod:`tabprep.loader.stacked`); :meth:`keras_inputs` gives the
matching ``keras.Input(shape=(n_cats,), name="cats", ...)``.

On the GPU (cuDF present, ``device`` not ``"cpu"``) chunks are read and transformed by cuDF
and the batch arrays (cupy) reach TensorFlow through DLPack, without a copy through host
memory, when you iterate the loader yourself (``for x, y in loader``, custom training loops,
:class:`KerasSequenceValidater`). Note that Keras 3's ``model.fit`` wraps every ``PyDataset``
in ``tf.data.Dataset.from_generator``, which stages tensors in host memory; that copy is
Keras', not the loader's. On the CPU, batch arrays are 64-byte aligned slices of the chunk and
are shared with TensorFlow through DLPack as well (other arrays are copied).

Batch order and ``__getitem__``: the loader shuffles by itself (pieces and rows, seeded), and
``loader[i]`` returns the *next* batch in the loader's order, whatever ``i`` (as NVTabular's
``KerasSequenceLoader`` does). Keras 3's ``model.fit`` asks for the indices of an epoch in a
random order (``shuffle=True`` is fit's default); honouring them would re-read a chunk per
batch, while serving in order costs one slice per batch. Every ``len(loader)`` requests form
one epoch of the loader, so each Keras epoch sees every row of the rank once (two batches
Keras reads ahead of fit to learn the tensor specs are served from a cached batch and do not
count). For exact random access use ``loader.loader.batch_at(i)``, which re-reads the chunk
holding batch ``i`` when ``i`` is not the next one. Keep ``workers=1`` (the default): the
loader prepares chunks in its own background thread.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import backend
from .core import DataLoader, RaggedBatch

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------
# TensorFlow GPU memory
# ---------------------------------------------------------------------------------------
def _free_gpu_mb(device: int) -> Optional[float]:
    return backend.gpu_free_memory_mb(device)  # None without cupy / a driver: memory growth instead


def configure_tensorflow(memory_allocation: Union[None, float, str] = None, device: Optional[int] = None) -> Optional[int]:
    """Limit TensorFlow's GPU memory so cuDF (the loader) keeps the rest.

    Must run before TensorFlow initializes the GPU (it runs when this module is imported).

    Args:
        memory_allocation: a fraction (< 1) of the GPU's *free* memory, or a number of MB
            (>= 1). Default: the ``TF_MEMORY_ALLOCATION`` environment variable, else 0.5.
        device: the GPU index (default: ``TF_VISIBLE_DEVICE`` or 0).

    Returns:
        The limit in MB, or None when there is no GPU (no-op on CPU-only TensorFlow) or the
        limit could not be set (TensorFlow already initialized: a warning is logged). When the
        free memory cannot be measured (no cupy), memory growth is enabled instead.
    """
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    if memory_allocation is None:
        memory_allocation = os.environ.get("TF_MEMORY_ALLOCATION", "0.5")
    value = float(memory_allocation)
    if value <= 0:
        raise ValueError(f"TF_MEMORY_ALLOCATION must be a fraction in (0, 1) or MB >= 1, got {memory_allocation!r}")
    dev = int(os.environ.get("TF_VISIBLE_DEVICE", 0)) if device is None else int(device)
    gpu = gpus[min(dev, len(gpus) - 1)]
    try:
        if value < 1:
            free = _free_gpu_mb(dev)
            if free is None:
                tf.config.experimental.set_memory_growth(gpu, True)
                log.info("TensorFlow GPU memory: growth enabled (free memory unknown)")
                return None
            mb = int(value * free)
        else:
            mb = int(value)
        tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=mb)])
        log.info("TensorFlow GPU memory limited to %d MB on %s", mb, gpu.name)
        return mb
    except RuntimeError as exc:
        log.warning("could not limit TensorFlow's GPU memory (%s); import tabprep.loader.tensorflow before "
                    "TensorFlow touches the GPU, or set TF_MEMORY_ALLOCATION earlier", exc)
        return None


from .._frameworks import preload_triton  # noqa: E402
from ._adapter import share_gpu_with_jax  # noqa: E402

preload_triton()       # PyTorch's triton before TensorFlow's LLVM, or torch.optim aborts this process later
share_gpu_with_jax()   # Keras on JAX: keep XLA from claiming 75% of the GPU that cuDF also uses

import keras  # noqa: E402  (imports TensorFlow on its TensorFlow backend, which does not touch the GPU yet)

#: Keras' backend (``KERAS_BACKEND``): "tensorflow", "jax" or "torch"
BACKEND = keras.backend.backend()
if BACKEND == "tensorflow":
    configure_tensorflow()
    import tensorflow as tf  # noqa: E402
else:  # Keras on JAX or PyTorch: TensorFlow is neither needed nor imported
    tf = None

from . import layers  # noqa: E402  (tabprep.loader.tensorflow.layers)
from ._adapter import LoaderViews, attach_workflow, core_padded_names, is_batch_fn, raw_schema  # noqa: E402,F401
from .nested import NestedBatch  # noqa: E402

#: keyword arguments of keras.utils.PyDataset
_PYDATASET_KWARGS = {"workers", "use_multiprocessing", "max_queue_size"}

sys.modules.setdefault(__name__ + ".layers", layers)


# ---------------------------------------------------------------------------------------
# conversion
# ---------------------------------------------------------------------------------------
#: TensorFlow's CPU kernels assume buffers aligned to 64 bytes (Eigen); a misaligned buffer handed
#: over by DLPack aborts the process in the first kernel that reads it, so only aligned arrays
#: (the loader's shuffled batches are) go through DLPack; others are copied by convert_to_tensor.
_TF_ALIGN = 64


def _to_tensor(arr: Any) -> Any:
    """A TF tensor of a numpy array (shared through DLPack when aligned and writable, else a copy)
    or of a cupy array (DLPack: stays on the GPU, no copy)."""
    if isinstance(arr, np.ndarray):
        if (arr.size and arr.flags.c_contiguous and arr.flags.writeable and arr.dtype.kind in "iuf"
                and arr.ctypes.data % _TF_ALIGN == 0):
            try:
                return tf.experimental.dlpack.from_dlpack(arr.__dlpack__())
            except (BufferError, TypeError, ValueError, tf.errors.InvalidArgumentError):  # noqa: PERF203
                pass
        return tf.convert_to_tensor(arr)
    capsule = arr.toDlpack() if hasattr(arr, "toDlpack") else arr.__dlpack__()
    return tf.experimental.dlpack.from_dlpack(capsule)


def _to_backend(arr: Any) -> Any:
    """A tensor of Keras' backend (TF tensor, jax.Array or torch.Tensor) of a numpy / cupy array,
    through DLPack where the framework allows it (GPU arrays stay on the GPU)."""
    if BACKEND == "tensorflow":
        return _to_tensor(arr)
    if BACKEND == "jax":
        from .jax import _to_jax

        return _to_jax(arr)
    if BACKEND == "torch":
        from .torch import _to_torch

        out = _to_torch(arr)
        try:  # the device Keras' torch backend computes on ("cuda" when available)
            from keras.src.backend.torch.core import get_device
        except ImportError:  # pragma: no cover - a Keras without that (private) helper
            return out
        device = get_device()
        return out if str(out.device) == str(device) or out.device.type == str(device) else out.to(device)
    raise RuntimeError(f"KerasSequenceLoader supports Keras' tensorflow, jax and torch backends, not {BACKEND!r}")


def _keras_spec_peek() -> bool:
    """True when called (through ``__getitem__``) only to learn the batches' shapes and dtypes:
    from Keras' ``PyDatasetAdapter.get_tf_dataset`` (TensorFlow: the dataset's output signature)
    or from ``Trainer._symbolic_build`` (JAX / torch: one batch read to build the model and
    its metrics before the epoch starts). Such reads must not consume the loader's epoch."""
    frame = sys._getframe(2)
    for _ in range(10):   # torch: _symbolic_build is 8 frames up (through torch's DataLoader)
        if frame is None:
            return False
        code = frame.f_code
        if code.co_name == "get_tf_dataset" and "py_dataset_adapter" in code.co_filename:
            return True
        if code.co_name == "_symbolic_build" and "trainer" in code.co_filename:
            return True
        frame = frame.f_back
    return False


def _column(arr: Any) -> Any:
    return arr.reshape(-1, 1) if arr.ndim == 1 else arr


def names_from_feature_columns(feature_columns: Sequence[Any]) -> Tuple[List[str], List[str]]:
    """``(cat_names, cont_names)`` of TF feature columns, as NVTabular's Keras examples use them.

    Accepts ``numeric_column`` (continuous) and ``categorical_column_with_identity``
    (categorical), also wrapped in ``embedding_column`` / ``indicator_column``. Hashing or
    vocabulary columns are refused: that preprocessing belongs in the workflow
    (``HashBucket`` / ``Categorify``), which the loader applies online.
    """
    cats: List[str] = []
    conts: List[str] = []
    for fc in feature_columns:
        col = fc
        while hasattr(col, "categorical_column"):
            col = col.categorical_column
        kind = type(col).__name__
        if kind == "NumericColumn":
            conts.append(col.key)
        elif kind == "IdentityCategoricalColumn":
            cats.append(col.key)
        else:
            raise ValueError(f"feature column {getattr(fc, 'name', fc)!r} is a {kind}; the loader takes numeric and "
                             f"identity categorical columns only: hash / vocabulary lookups belong in the tabprep "
                             f"workflow (HashBucket / Categorify), applied with loader.map(workflow)")
    return list(dict.fromkeys(cats)), list(dict.fromkeys(conts))


# ---------------------------------------------------------------------------------------
# the Keras loader
# ---------------------------------------------------------------------------------------
class KerasSequenceLoader(LoaderViews, keras.utils.PyDataset):
    """A Keras ``PyDataset`` (and plain iterator) over parquet, transformed online.

    Parameters are NVTabular's (see :class:`tabprep.loader.core.DataLoader` for the details of
    chunking, shuffling and sharding); in addition:

    Args:
        feature_columns: TF feature columns giving ``cat_names`` / ``cont_names``
            (see :func:`names_from_feature_columns`).
        ragged: emit multi-hot columns as ``tf.RaggedTensor`` instead of ``__values``/``__nnzs``
            (TensorFlow backend only).
        sparse_format: layout of the multi-hot columns that are neither ragged nor dense:
            ``"flat"`` (default): two entries ``<name>__values`` / ``<name>__nnzs``;
            ``"tuple"``: one entry ``<name>: (values, nnzs)``, as NVTabular's loader emits them.
            ``nnzs`` are int32 (as NVTabular's) with shape ``(batch, 1)``.
        storage_options: options of the file system of URL inputs (``s3://``...), as in pandas
            and dask (default: the environment's credentials); or ``reader_kwargs={"storage_options": ...}``.
        sparse_names / sparse_max / sparse_as_dense: with ``sparse_names``, only those list
            columns are padded to ``(batch, sparse_max)`` (NVTabular's per-column rule); without
            it, every list column is.
        drop_last: drop the last partial batch of the epoch on this rank; when sharding
            (``global_size > 1``) it also drops the ``rows % global_size`` rows at the end of the
            dataset, so that ranks stay disjoint (without it, up to ``global_size - 1`` rows are
            seen twice per epoch across ranks so that every rank has as many rows).
        seed: shuffle seed (default: random per loader).
        prefetch: chunks prepared ahead by the background thread (default 1).
        threads: threads preparing chunks in parallel (default: 1 on GPU, up to 2 on CPU).
        stacked: batches as ``({"cats": (batch, n_cats), "conts": (batch, n_conts), <list
            columns>}, labels (batch, n_labels))`` (default False: one tensor per column; see the
            module doc).
        **pydataset_kwargs: ``workers`` / ``use_multiprocessing`` / ``max_queue_size`` of Keras'
            PyDataset; leave them at their defaults (the loader prefetches on its own; more
            Keras workers turn sequential reads into random access).
    """

    def __init__(self, paths_or_dataset: Any, batch_size: int, label_names: Optional[Sequence[str]] = None,
                 feature_columns: Optional[Sequence[Any]] = None, cat_names: Optional[Sequence[str]] = None,
                 cont_names: Optional[Sequence[str]] = None, engine: Optional[str] = None, shuffle: bool = True,
                 seed_fn: Any = None, buffer_size: float = 0.1, device: Union[None, str, int] = None,
                 parts_per_chunk: int = 1, reader_kwargs: Optional[Dict[str, Any]] = None,
                 global_size: Optional[int] = None, global_rank: Optional[int] = None, drop_last: bool = False,
                 sparse_names: Optional[Sequence[str]] = None, sparse_max: Optional[Dict[str, int]] = None,
                 sparse_as_dense: bool = False, schema: Any = None, ragged: bool = False,
                 seed: Optional[int] = None, prefetch: int = 1, threads: Optional[int] = None,
                 sparse_format: str = "flat", storage_options: Optional[Dict[str, Any]] = None,
                 stacked: bool = False, **pydataset_kwargs: Any) -> None:
        unknown = sorted(set(pydataset_kwargs) - _PYDATASET_KWARGS)
        if unknown:
            hint = (" NVTabular's KerasSequenceLoader has no output_path either: write transformed data with "
                    "workflow.transform(dataset).to_parquet(output_path) (or `tabprep transform`), and give the "
                    "loader that folder, or the raw data plus loader.map(workflow)." if "output_path" in unknown else "")
            raise TypeError(f"KerasSequenceLoader got unexpected keyword argument(s) {unknown}.{hint}")
        super().__init__(**pydataset_kwargs)
        if self.workers > 1 or self.use_multiprocessing:
            log.warning("KerasSequenceLoader with workers=%d / use_multiprocessing=%s: batches are then asked out of "
                        "order, which re-reads chunks; keep workers=1 (the loader prefetches in its own thread)",
                        self.workers, self.use_multiprocessing)
        if ragged and sparse_as_dense:
            raise ValueError("choose one of ragged=True and sparse_as_dense=True")
        if ragged and BACKEND != "tensorflow":
            raise ValueError(f"ragged=True makes tf.RaggedTensor, which Keras' {BACKEND} backend cannot take: use "
                             f"sparse_format='flat' / 'tuple' or sparse_as_dense=True")
        if sparse_format not in ("flat", "tuple"):
            raise ValueError(f"sparse_format must be 'flat' or 'tuple', got {sparse_format!r}")
        self.sparse_format = sparse_format
        self.storage_options = storage_options
        self._data, self._engine, self._schema = paths_or_dataset, engine, schema
        self._dense_names = list(sparse_names) if sparse_as_dense and sparse_names is not None else None
        self._sparse_max_arg = dict(sparse_max or {})
        # every list column padded: no __values / __nnzs entries (with sparse_names, the others stay lists)
        self._all_dense = sparse_as_dense and sparse_names is None
        if feature_columns is not None:
            fc_cats, fc_conts = names_from_feature_columns(feature_columns)
            cat_names = list(cat_names or []) + [c for c in fc_cats if c not in (cat_names or [])]
            cont_names = list(cont_names or []) + [c for c in fc_conts if c not in (cont_names or [])]
        self.ragged = bool(ragged)
        self.stacked = bool(stacked)
        self._stacked: Any = None   # a jax_stacked.StackedBatches on Keras' JAX backend
        self._count = 0
        self._count_lock = threading.Lock()
        self._template: Any = None
        self.loader = DataLoader(paths_or_dataset, batch_size, label_names=label_names, cat_names=cat_names,
                                 cont_names=cont_names, engine=engine, shuffle=shuffle, seed_fn=seed_fn,
                                 buffer_size=buffer_size, device=device, parts_per_chunk=parts_per_chunk,
                                 reader_kwargs=reader_kwargs, global_size=global_size, global_rank=global_rank,
                                 drop_last=drop_last,
                                 # padded by the core once per chunk (with sparse_names: only those), not per batch
                                 sparse_names=core_padded_names(sparse_names, label_names, sparse_as_dense),
                                 sparse_max=sparse_max if sparse_as_dense else None,
                                 sparse_as_dense=bool(sparse_as_dense), schema=schema, seed=seed, prefetch=prefetch,
                                 threads=threads, storage_options=storage_options)
        self._check_flat_names()

    # -- configuration ---------------------------------------------------------------------
    def map(self, workflow: Any) -> "KerasSequenceLoader":
        """Apply ``workflow`` (a :class:`tabprep.Workflow`; one of stateless ops needs no fit) to
        every chunk; or, as NVTabular does, a plain function to every batch: ``fn(x, y) -> (x, y)``
        or ``(x, y, sample_weights)`` (Keras' weighted batches). Returns ``self``."""
        if is_batch_fn(workflow):
            self._add_batch_fn(workflow)
            self._template = None
            return self
        attach_workflow(self.loader, workflow,
                        lambda: raw_schema(self._data, self._engine, self.loader._reader_kwargs, self._schema))
        self._dense_max = None
        self._count = 0
        self._template = None
        self._check_flat_names()
        return self

    def _check_flat_names(self, list_names: Optional[Sequence[str]] = None,
                          names: Optional[Sequence[str]] = None) -> None:
        """Refuse a scalar column named like a list column's ``<name>__values`` / ``<name>__nnzs``
        entry: in the flat layout one would silently replace the other in the batch dict.
        ``list_names``: the list columns (default: from the loader's schema, when known)."""
        if self.ragged or self.sparse_format != "flat" or self._all_dense:
            return
        if names is None:
            names = list(self.loader._names_arg[1] or []) + list(self.loader._names_arg[2] or [])
        if list_names is None:
            try:
                schema = self.loader._output_schema()
            except Exception:  # noqa: BLE001 - not known yet (no fit): checked again per batch
                return
            if schema is None:
                return
            list_names = [c.name for c in schema if c.is_list]
        dense = set(self._dense_names or []) if self._dense_names is not None else None
        taken = set(names)
        for name in names:
            if name not in list_names or (dense is not None and name in dense):
                continue
            for suffix in ("__values", "__nnzs"):
                if name + suffix in taken:
                    raise ValueError(f"column {name + suffix!r} collides with the {suffix[2:]} entry of the list "
                                     f"column {name!r} (sparse_format='flat' emits {name}__values / {name}__nnzs): "
                                     f"rename {name + suffix!r}, or use sparse_format='tuple' or ragged=True")

    # -- PyDataset protocol ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.loader)

    def __getitem__(self, index: int) -> Any:
        """The next batch in the loader's order (``index`` only bounds-checked; see the module doc)."""
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"batch index {index} out of range: the loader has {n} batches per epoch")
        if _keras_spec_peek():
            # Keras reads the first batches only for their shapes / dtypes: serve a cached batch
            # (or the epoch's first one, kept for the real read) without consuming the epoch
            if self._template is None:
                self._template = self._convert(self.loader.peek())
            return self._template
        with self._count_lock:
            position = self._count % n
            self._count += 1
            batch = self._convert(self.loader.batch_at(position, views=self._views))
        self._template = batch
        return batch

    def __iter__(self):
        """One epoch of ``(features, labels)`` (each ``for`` loop is a new epoch)."""
        for batch in self.loader.iterate(views=self._views):
            yield self._convert(batch)

    @property
    def _views(self) -> bool:
        # the core's batches without a view per block column where the conversion reads the
        # blocks (stacked groups; per column on jax and torch, one hand-off per block); on
        # TensorFlow the per-column layout converts column by column
        return not self.stacked and BACKEND not in ("jax", "torch")

    def on_epoch_end(self) -> None:
        """Nothing to do: the loader starts a new epoch (new shuffle) when batch 0 is asked for
        after the epoch's last batch. (Keras may already prefetch the next epoch's first batches
        before calling this, so epochs are not counted here.)"""

    def close(self) -> None:
        """Stop the loader's background thread."""
        self.loader.close()

    # -- conversion --------------------------------------------------------------------------
    def _convert_batch(self, batch: Dict[str, Any]) -> Any:
        with self.loader._device.context():
            out = self._convert_on_device(batch)
            # TF's DLPack capsules carry no stream: wait where this thread queued device work (a
            # batch joined from two chunks, list columns' counts, stacked groups on TensorFlow)
            # before TF reads it; slices of a chunk (padded list columns too: padded per chunk)
            # were complete when the chunk was handed over
            if getattr(batch, "joined", True) or (self.stacked and BACKEND == "tensorflow") \
                    or any(isinstance(batch[n], RaggedBatch) for n in self.loader.sparse_names if n in batch):
                self.loader._device.synchronize()
            return out

    def _stacked_groups(self, batch: Any) -> Any:
        """The stacked groups of ``batch`` and their tensors (labels ``(batch, n)``)."""
        from .stacked import stack_batch

        loader = self.loader
        cats, conts, labels = loader.cat_names, loader.cont_names, loader.label_names
        if BACKEND != "jax":
            return stack_batch(batch, cats, conts, labels, False, _to_backend)
        from .jax import check_int_ranges   # on JAX: per chunk, one jitted call per group and up to 16 batches
        from .jax_stacked import StackedBatches

        check_int_ranges(self, batch)   # JAX's default (x64 off) would drop int64's high bits
        if self._stacked is None:
            self._stacked = StackedBatches(squeeze_label=False)
        return self._stacked.convert(batch, cats, conts, labels, loader.batch_size)

    def _convert_on_device(self, batch: Dict[str, Any]) -> Any:
        if self.stacked:
            from .stacked import list_names, split_groups

            groups, arrays = self._stacked_groups(batch)
            x, y = split_groups(groups, arrays)
            for name in list_names(groups, self.loader.cat_names, self.loader.cont_names):
                self._feature(name, batch[name], batch, x)
            return (x, y) if self.loader.label_names else x
        done: Dict[str, Any] = {}
        if BACKEND == "jax":   # one DLPack import per block (see tabprep.loader.jax.blocks_columns)
            from .blocks import spanned_blocks
            from .jax import ChunkBlocks, blocks_columns, check_int_ranges

            check_int_ranges(self, batch)   # JAX's default (x64 off) would drop int64's high bits
            items = spanned_blocks(batch)
            for (_, names, _, _), cols in zip(items, blocks_columns(items, keep_dims=True, chunks=ChunkBlocks.of(self))):
                done.update(zip(names, cols))
        elif BACKEND == "torch":   # one DLPack hand-off per block, its rows as (batch, 1) views (as TorchAsyncItr)
            from .blocks import spanned_blocks

            for _, names, block, _ in spanned_blocks(batch):
                done.update(zip(names, _to_backend(block).unsqueeze(-1).unbind(0)))
        x: Dict[str, Any] = {}
        for name in self.loader.cat_names + self.loader.cont_names:
            if name in done:
                x[name] = done[name]
            else:
                self._feature(name, batch[name], batch, x)
        return self._with_labels(x, batch, done, lambda value: _to_backend(_column(value)))

    def _feature(self, name: str, value: Any, batch: Dict[str, Any], x: Dict[str, Any]) -> None:
        """Put feature column ``name`` (``value``) into ``x`` in the per-column layout."""
        if isinstance(value, RaggedBatch):   # (padded columns come from the core padded, per chunk)
            if self.ragged and isinstance(value, NestedBatch):   # a RaggedTensor of the column's depth
                x[name] = tf.RaggedTensor.from_nested_row_lengths(
                    _to_tensor(value.values), [_to_tensor(v) for v in value.nested_row_lengths], validate=False)
            elif self.ragged:
                x[name] = tf.RaggedTensor.from_row_lengths(_to_tensor(value.values),
                                                           _to_tensor(value.lengths), validate=False)
            else:
                if self.sparse_format == "flat" and (name + "__values" in batch or name + "__nnzs" in batch):
                    self._check_flat_names([name], self.loader.cat_names + self.loader.cont_names)
                # int32 counts, as NVTabular's loader gives them (a copy of batch rows, not nnz)
                nnzs = _to_backend(_column(value.lengths.astype("int32")))
                values = _to_backend(_column(value.values))
                if self.sparse_format == "tuple":
                    x[name] = (values, nnzs)
                else:
                    x[name + "__values"], x[name + "__nnzs"] = values, nnzs
        else:
            x[name] = _to_backend(_column(value))

    def peek(self) -> Any:
        """The first batch of the current epoch, as ``__getitem__`` returns it, without consuming it."""
        return self._convert(self.loader.peek())

    def keras_inputs(self) -> Dict[str, Any]:
        """``keras.Input`` placeholders matching the features this loader emits (names, dtypes,
        shapes), for functional models. Reads the first batch (cheap: its chunk is kept)."""
        batch = self.loader.peek()
        inputs: Dict[str, Any] = {}
        names = self.loader.cat_names + self.loader.cont_names
        if self.stacked:   # {"cats": (n_cats,), "conts": (n_conts,)} and the list columns
            from .stacked import group_inputs

            inputs, names = group_inputs(batch, self.loader, BACKEND == "jax", keras.Input)
        for name in names:
            value = batch[name]
            if isinstance(value, RaggedBatch):
                dtype = str(value.values.dtype)
                depth = value.depth if isinstance(value, NestedBatch) else 1
                if self.ragged:
                    inputs[name] = keras.Input(shape=(None,) * depth, dtype=dtype, name=name, ragged=True)
                else:
                    values = keras.Input(shape=(1,), dtype=dtype, name=name + "__values")
                    nnzs = keras.Input(shape=(1,), dtype="int32", name=name + "__nnzs")
                    if self.sparse_format == "tuple":
                        inputs[name] = (values, nnzs)
                    else:
                        inputs[name + "__values"], inputs[name + "__nnzs"] = values, nnzs
            else:
                shape = (1,) if value.ndim == 1 else tuple(value.shape[1:])
                inputs[name] = keras.Input(shape=shape, dtype=str(value.dtype), name=name)
        return inputs

    def __repr__(self) -> str:
        return repr(self.loader).replace("DataLoader(", "KerasSequenceLoader(", 1)


from .keras_validater import KerasSequenceValidater  # noqa: E402  (needs keras, imported above)


__all__ = ["KerasSequenceLoader", "KerasSequenceValidater", "configure_tensorflow", "names_from_feature_columns",
           "layers"]
