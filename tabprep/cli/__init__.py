"""The ``tabprep`` command line (click): ``fit``, ``transform``, ``fit-transform``, ``convert``,
``check``, ``inspect``, ``generate`` and ``demo``. Run ``tabprep --help``."""
