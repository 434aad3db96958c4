"""Reading and writing datasets (parquet, csv, TFRecord) and synthetic data."""
from .commit import Transaction
from .dataset import Dataset
from .dataset_compat import Shuffle

__all__ = ["Dataset", "Shuffle", "Transaction"]
