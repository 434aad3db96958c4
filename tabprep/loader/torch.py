"""PyTorch adapter of the online loader, with NVTabular's names (``TorchAsyncItr``, ``DLDataLoader``).

>>> from tabprep.loader.torch import TorchAsyncItr, DLDataLoader
>>> itr = TorchAsyncItr(tp.Dataset("train/*.parquet"), batch_size=65536, cats=CATS, conts=CONTS,
...                     labels=["label"], shuffle=True, parts_per_chunk=2, seed=0)
>>> itr.map(tp.Workflow.load("wf/"))                     # online transform, per chunk
>>> for x, y in DLDataLoader(itr, batch_size=None, collate_fn=lambda b: b, pin_memory=False):
...     loss = loss_fn(model(x), y)

``TorchAsyncItr`` is a ``torch.utils.data.IterableDataset`` over
:class:`tabprep.loader.DataLoader`: same chunking, shuffling (``seed`` / ``seed_fn``),
``global_size`` / ``global_rank`` sharding and online ``map(workflow)``. Batches are
``(features, labels)`` as described in :mod:`tabprep.loader._adapter`: scalar columns are 1-D
tensors, multi-hot columns ``(values, offsets)`` ready for ``torch.nn.EmbeddingBag`` (or
``(values, nnzs)`` with ``sparse_format="nnzs"``, or padded dense with ``sparse_as_dense``).

Tensors come through DLPack: on the GPU (cuDF present, ``device`` not ``"cpu"``) the cupy
batch arrays become CUDA tensors without a copy through host memory; on the CPU they share the
chunk's numpy memory (no copy). Do not write into them in place.

Data-parallel training (DDP): pass ``global_size`` / ``global_rank`` (when left out and
``torch.distributed`` is initialized, its world size and rank are used). Every rank gets the
same number of batches (see :class:`tabprep.loader.DataLoader` for the rows seen twice or
skipped when the row count is not a multiple of the world size). Use the iterator directly or
in ``torch.utils.data.DataLoader(itr, batch_size=None)`` with ``num_workers=0``: the loader
prepares chunks in its own background thread, and worker processes would each read the whole
shard (refused with an error).
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Optional, Sequence, Union

import numpy as np

from .._frameworks import preload_triton

# triton's library before anything imports TensorFlow later; a warning if TensorFlow came first
# (torch.optim would then abort the process: see tabprep._frameworks)
preload_triton(warn=True)

import torch  # noqa: E402
import torch.utils.data  # noqa: E402

from ._adapter import FrameworkLoader  # noqa: E402

log = logging.getLogger(__name__)


def _to_torch(arr: Any) -> torch.Tensor:
    """A tensor sharing ``arr``'s memory (numpy: CPU; cupy: CUDA) through DLPack; arrays DLPack
    cannot export (read-only numpy, bool) are copied."""
    if isinstance(arr, np.ndarray):
        if arr.flags.writeable and arr.dtype.kind in "iuf":
            try:
                return torch.from_dlpack(arr)
            except (BufferError, TypeError, RuntimeError):
                pass
        return torch.from_numpy(np.array(arr, copy=True, order="C"))   # torch has no read-only tensors
    return torch.from_dlpack(arr)


def _distributed_default(global_size: Optional[int], global_rank: Optional[int]) -> tuple:
    if global_size is None and global_rank is None:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_world_size(), dist.get_rank()
    return global_size, global_rank


class TorchAsyncItr(torch.utils.data.IterableDataset, FrameworkLoader):
    """Batches of a (transformed) dataset as torch tensors; NVTabular's ``TorchAsyncItr``.

    Args:
        dataset: a :class:`tabprep.Dataset`, parquet path(s) / glob / folder, or a frame.
        batch_size: rows per batch (NVTabular's default 1; may also be the second positional
            argument).
        cats / conts / labels: categorical, continuous and target columns (default: from the
            tags of the workflow's output schema or the dataset's schema).
        shuffle: shuffle pieces and rows each epoch (NVTabular's default False).
        seed_fn / seed: the shuffle seed per epoch / once (same seed, same batches).
        parts_per_chunk: pieces read, transformed and shuffled together.
        device: ``None`` (GPU when cuDF is usable), ``"cpu"``, or a GPU index.
        global_size / global_rank: data-parallel sharding (default: ``torch.distributed``'s
            world size and rank when initialized, else 1 / 0).
        drop_last: drop the last partial batch (and the ``rows % global_size`` leftover rows).
        sparse_names / sparse_max / sparse_as_dense: list columns made dense ``(batch, max_len)``
            (padded with 0, truncated at ``sparse_max``, default the schema's longest list);
            without ``sparse_names`` every list column is.
        sparse_format: other list columns as ``(values, offsets)`` (default, for
            ``nn.EmbeddingBag``) or ``(values, nnzs)`` (NVTabular's; int32 counts).
        buffer_size, engine, reader_kwargs, schema, prefetch, threads: as in
            :class:`tabprep.loader.DataLoader`.
        storage_options: options of the file system of URL inputs (``s3://``...), as in pandas
            and dask; see :class:`tabprep.loader.DataLoader`.
        workflow: a workflow to apply online (same as calling :meth:`map`).
        stacked: batches as ``({"cats": (B, n_cats), "conts": (B, n_conts), <list columns>},
            labels)``, labels ``(B,)`` for one and ``(B, n)`` for several, stacked per batch
            with numpy / cupy (:mod:`tabprep.loader.stacked`; default False: one tensor per column).
    """

    def __init__(self, dataset: Any, *positional: Any, cats: Optional[Sequence[str]] = None,
                 conts: Optional[Sequence[str]] = None, labels: Union[None, str, Sequence[str]] = None,
                 batch_size: Optional[int] = None, shuffle: bool = False,
                 seed_fn: Optional[Callable[[], int]] = None, parts_per_chunk: int = 1,
                 device: Union[None, str, int] = None, global_size: Optional[int] = None,
                 global_rank: Optional[int] = None, drop_last: bool = False,
                 sparse_names: Optional[Sequence[str]] = None, sparse_max: Optional[Dict[str, int]] = None,
                 sparse_as_dense: bool = False, sparse_format: str = "offsets", buffer_size: float = 0.1,
                 engine: Optional[str] = None, reader_kwargs: Optional[Dict[str, Any]] = None, schema: Any = None,
                 seed: Optional[int] = None, prefetch: int = 1, threads: Optional[int] = None,
                 workflow: Any = None, storage_options: Optional[Dict[str, Any]] = None,
                 stacked: bool = False) -> None:
        cats, conts, labels, batch_size, shuffle = _positional(positional, cats, conts, labels, batch_size, shuffle)
        global_size, global_rank = _distributed_default(global_size, global_rank)
        torch.utils.data.IterableDataset.__init__(self)
        FrameworkLoader.__init__(self, dataset, batch_size, cats=cats, conts=conts, labels=labels, shuffle=shuffle,
                                 seed_fn=seed_fn, parts_per_chunk=parts_per_chunk, device=device,
                                 global_size=global_size, global_rank=global_rank, drop_last=drop_last,
                                 sparse_names=sparse_names, sparse_max=sparse_max, sparse_as_dense=sparse_as_dense,
                                 sparse_format=sparse_format, buffer_size=buffer_size, engine=engine,
                                 reader_kwargs=reader_kwargs, schema=schema, seed=seed, prefetch=prefetch,
                                 threads=threads, workflow=workflow, storage_options=storage_options,
                                 stacked=stacked)

    def _array(self, arr: Any) -> torch.Tensor:
        return _to_torch(arr)

    def _block_columns(self, block: Any, span: Any = None, index: int = 0) -> list:
        # the rows as views in one call (``unbind``): a Python index per column was about half of
        # a batch's conversion on the CPU (40 columns: 64-69 us a batch before, 37-43 after;
        # benchmarks/torch_convert.py)
        return list(self._array(block).unbind(0))

    @property
    def device(self) -> torch.device:
        """Where the batch tensors live."""
        return torch.device("cpu") if self.loader.cpu else torch.device("cuda", self.loader.device)

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        if info is not None and info.num_workers > 1:
            raise RuntimeError(f"TorchAsyncItr runs in {info.num_workers} DataLoader worker processes, each of which "
                               f"would read the whole shard: use num_workers=0 (the loader prepares chunks in its "
                               f"own background thread; raise threads= for more)")
        return self._batches()

    def __len__(self) -> int:
        return len(self.loader)


def _positional(positional: tuple, cats: Any, conts: Any, labels: Any, batch_size: Any, shuffle: bool) -> tuple:
    """Both ``TorchAsyncItr(ds, 1024, cats=...)`` and NVTabular's positional order
    ``TorchAsyncItr(ds, cats, conts, labels, batch_size, shuffle)``."""
    if not positional:
        return cats, conts, labels, 1 if batch_size is None else batch_size, shuffle
    if isinstance(positional[0], (int, np.integer)) and not isinstance(positional[0], bool):
        if len(positional) > 1 or batch_size is not None:
            raise TypeError("TorchAsyncItr(dataset, batch_size, ...) takes the other arguments by keyword")
        return cats, conts, labels, int(positional[0]), shuffle
    names = ("cats", "conts", "labels", "batch_size", "shuffle")
    if len(positional) > len(names):
        raise TypeError(f"TorchAsyncItr takes at most {len(names)} positional arguments after the dataset "
                        f"({', '.join(names)}), got {len(positional)}")
    given = dict(cats=cats, conts=conts, labels=labels, batch_size=batch_size, shuffle=shuffle)
    for name, value in zip(names, positional):
        if name != "shuffle" and given[name] is not None or name == "shuffle" and given[name]:
            raise TypeError(f"TorchAsyncItr got {name} both by position and by keyword")
        given[name] = value
    return (given["cats"], given["conts"], given["labels"], 1 if given["batch_size"] is None else given["batch_size"],
            given["shuffle"])


class DLDataLoader(torch.utils.data.DataLoader):
    """``torch.utils.data.DataLoader`` over a :class:`TorchAsyncItr` (NVTabular's name; fastai
    wants ``device`` and ``len``). Batches are already made: ``batch_size`` defaults to None
    and batches pass through unchanged (``collate_fn`` is the identity)."""

    def __init__(self, dataset: TorchAsyncItr, batch_size: Optional[int] = None, **kwargs: Any) -> None:
        if batch_size is not None:
            raise ValueError("DLDataLoader batches nothing itself: leave batch_size=None and set it on TorchAsyncItr")
        kwargs.setdefault("collate_fn", _identity)
        if kwargs.get("num_workers", 0):
            raise ValueError("DLDataLoader needs num_workers=0: TorchAsyncItr prefetches in its own thread")
        super().__init__(dataset, batch_size=None, **kwargs)

    @property
    def device(self) -> torch.device:
        return self.dataset.device

    def __len__(self) -> int:
        return len(self.dataset)


def _identity(batch: Any) -> Any:
    return batch


__all__ = ["TorchAsyncItr", "DLDataLoader"]
