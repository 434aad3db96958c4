"""Reading and writing datasets (parquet, csv, TFRecord) and synthetic data."""
from .dataset import Dataset

__all__ = ["Dataset"]
