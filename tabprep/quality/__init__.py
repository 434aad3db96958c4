"""Data quality: profiles of a dataset (one streaming pass, mergeable sketches), drift and
training/serving skew between profiles, and self-contained HTML reports of both.

>>> import tabprep as tp
>>> prof = tp.profile("data/")                       # doctest: +SKIP
>>> report = tp.drift("workflow_dir/", "new_data/")  # doctest: +SKIP
"""
from .drift import DEFAULT_THRESHOLDS, DriftReport, drift, js_divergence, linf_distance, psi
from .profile import Profile, load_profile, profile

__all__ = ["DEFAULT_THRESHOLDS", "DriftReport", "Profile", "drift", "js_divergence", "linf_distance", "load_profile",
           "profile", "psi"]
