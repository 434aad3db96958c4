"""``python -m tabprep`` = the ``tabprep`` command."""
from .cli.main import main

if __name__ == "__main__":
    main()
