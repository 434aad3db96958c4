"""Every difference between the CPU (pandas / numpy) and GPU (cuDF / cupy) backends lives here.

Ops, stats, io and the loader never branch on the backend: they call these functions, which
dispatch on the type of their argument (:class:`~tabprep.backend.dispatch.Dispatch`, after
dask's dispatch registries), so one op implementation runs on both backends and gives the same
ids and float32-rounded values. pandas / numpy implementations are registered when tabprep is
imported; the cuDF / cupy ones (:mod:`tabprep.backend.gpu`) on the first cuDF or cupy object
seen, so importing tabprep never imports cuDF. Functions that create data from nothing (readers)
take a ``cpu`` flag instead.

Modules:

* :mod:`~tabprep.backend.core`: availability (``has_cudf``), which backend an object is on,
  memory, dask compute options, the loader's compute device;
* :mod:`~tabprep.backend.arrays`: column values as arrays (nulls, ints, floats, hashes, counts)
  and the array kernels behind FillMissing, Clip, LogOp, HashBucket and the loader;
* :mod:`~tabprep.backend.frames`: building and combining frames and series, host <-> device,
  nullable dtypes, Arrow and dask conversions;
* :mod:`~tabprep.backend.parquet`: parquet / Arrow reading;
* :mod:`~tabprep.backend.lists`: list (multi-hot) columns as leaves + offsets;
* :mod:`~tabprep.backend.lookup`: vocabulary lookups;
* :mod:`~tabprep.backend.gpu`: the cuDF / cupy implementations of all of the above (with
  :mod:`~tabprep.backend.gpu_lists` and :mod:`~tabprep.backend.gpu_reductions`, which it imports).

Conventions:
* Nulls: a missing value is a null; on float columns NaN counts as null too
  (pandas cannot tell them apart, so cuDF is made to agree).
* Integers of any width are widened to int64 before hashing or lookups, so an
  int32 and an int64 column with the same values get the same ids.

Adding a backend function: write the pandas/numpy implementation in the module of its kind,
registered on ``object`` (or the exact type), add the dispatcher to that module's
``register_gpu_lazy(...)`` call, and the cuDF/cupy implementation in ``gpu.py`` with
``@_register(dispatcher)``; re-export it here.
"""
from .arrays import (ALIGN, BlockGather, _numpy_kind_dtype, array_clip_bounds, array_module, block_dtype, bucket_ids, clip_series,
                     column_array, fill_nulls, float_values, frame_lib, int_data, int_log1p32,
                     int_values, is_float_series, is_int_like, is_list_series, is_string_series, isnull,
                     log1p_float, log1p_int, log_plus_one32, mod_buckets, murmur3, quiet, take_aligned, take_block, take_rows,
                     to_host, to_numpy, value_counts)
from .columns import (ArrayColumn, DeviceColumn, HostColumn, clip_host, fill_host, host_column, host_column_from_arrow, host_column_to_arrow,
                      host_columns_supported, host_series, host_series_many, log1p_host, normalize_host)
from .core import (GPU_THREADS, PART_SIZE_CPU, PART_SIZE_GPU, CudaDevice, HostDevice, compute_device,
                   compute_options, compute_options_for, device, gpu_count, gpu_free_memory_mb, gpu_total_memory,
                   has_cudf, host_memory_bytes, is_cpu, is_frame, is_gpu, probe_array, release_memory, resolve_cpu,
                   same_device, tune_malloc, tune_malloc_in_worker, use_rmm_pool)
from .dispatch import Dispatch
from .frames import (_is_default_index, _nullable_name, _numpy_to_arrow, arrow_list_columns, cast_keep_nulls,
                     cast_safely, concat_columns, concat_rows, empty_frame_like, frame_to_arrow, from_host,
                     has_array_cells, lists_to_arrow, lists_to_numpy, make_frame,
                     held_bytes, move_like, new_series, non_string_objects, non_string_objects_message, nullable_columns,
                     nullable_int_dtypes, on_one_backend, read_csv, reads_on_own_stream, csv_block_counts, set_nulls, take_frame_rows, to_backend, to_dask)
from .lists import (flatten_nested, list_depth, list_from_leaves, list_levels, list_leaves, nested_flatten, nested_rebuild,
                    on_leaves)
from .lookup import SortedVocab, index_of, index_of_values, vocab_lookup
from .parquet import (COMPRESSIONS, INT_ENCODINGS, ParquetReader, _arrow_int_buffers, _nullable_int_mapper, arrow_to_frame,
                      empty_frame, frame_column, parquet_encodings,
                      parquet_reader, read_parquet_columns, read_parquet_piece, read_parquet_pieces, read_parquet_table,
                      slice_rows, tables_to_frame, write_parquet_part)
from .reductions import (any_true, count_order, finite_minmax, finite_moments, finite_moments_minmax, finite_values,
                         infinite_count, int_counts, merge_counts, profile_exact, shard_counts, top_counts)

__all__ = [
    "ALIGN", "log_plus_one32", "log1p_float", "COMPRESSIONS", "INT_ENCODINGS", "any_true", "count_order", "merge_counts", "shard_counts", "top_counts", "CudaDevice", "parquet_encodings", "Dispatch", "GPU_THREADS", "ArrayColumn", "DeviceColumn", "HostColumn", "HostDevice", "PART_SIZE_CPU", "PART_SIZE_GPU",
    "clip_host", "fill_host", "host_column", "host_column_from_arrow", "host_column_to_arrow",
    "host_columns_supported", "host_series", "host_series_many", "index_of_values", "log1p_host", "normalize_host",
    "ParquetReader", "SortedVocab", "array_clip_bounds", "array_module", "arrow_to_frame", "cast_keep_nulls", "cast_safely",
    "clip_series", "column_array", "compute_device", "compute_options", "compute_options_for",
    "concat_columns", "concat_rows", "device", "empty_frame", "empty_frame_like", "frame_column", "fill_nulls",
    "finite_minmax", "finite_moments", "finite_moments_minmax", "finite_values", "infinite_count", "profile_exact",
    "float_values", "frame_lib", "frame_to_arrow", "from_host", "gpu_count", "gpu_free_memory_mb",
    "gpu_total_memory",
    "has_cudf", "host_memory_bytes", "index_of", "int_counts", "int_data", "int_log1p32", "int_values", "is_cpu",
    "is_float_series", "is_frame", "is_gpu", "probe_array", "is_int_like", "is_list_series", "is_string_series", "isnull",
    "flatten_nested", "list_depth", "list_from_leaves", "list_levels", "list_leaves", "nested_flatten",
    "nested_rebuild", "on_leaves", "arrow_list_columns", "has_array_cells", "lists_to_arrow", "lists_to_numpy", "log1p_int", "make_frame", "mod_buckets",
    "held_bytes", "move_like", "murmur3", "non_string_objects", "non_string_objects_message", "new_series", "nullable_columns",
    "nullable_int_dtypes", "on_one_backend",
    "parquet_reader", "quiet", "read_csv", "reads_on_own_stream", "csv_block_counts", "read_parquet_columns", "read_parquet_piece", "read_parquet_pieces", "read_parquet_table",
    "release_memory", "resolve_cpu", "same_device", "set_nulls", "slice_rows", "tables_to_frame",
    "BlockGather", "block_dtype", "bucket_ids", "take_aligned", "take_block", "take_frame_rows", "take_rows", "to_backend", "to_dask", "to_host", "to_numpy",
    "tune_malloc", "tune_malloc_in_worker", "use_rmm_pool", "value_counts", "vocab_lookup", "write_parquet_part",
]
