"""Mergeable statistics (partial -> combine -> finalize) used by stat ops."""
