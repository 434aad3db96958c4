"""``python -m tabprep.cli`` = the ``tabprep`` command."""
from .main import main

if __name__ == "__main__":
    main()
