"""tabprep's version, in a module of its own so that any layer can name it without importing
the top-level package (which imports the workflow)."""
__version__ = "0.1.0"
