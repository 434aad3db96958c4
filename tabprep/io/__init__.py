"""Reading and writing datasets (parquet, csv, TFRecord) and synthetic data."""
from .commit import Transaction
from .dataset import Dataset

__all__ = ["Dataset", "Transaction"]
