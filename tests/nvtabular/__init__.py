"""Tests of NVTabular 23.08 behaviours (issue #29), one file per area; each test names the
NVTabular / merlin-core behaviour it checks. A package, so that its module names
(``test_dataset``...) do not clash with tests/ of the same names."""
