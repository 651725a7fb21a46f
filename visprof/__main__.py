"""``python -m visprof ...``: the same as the ``visprof`` console script."""
import sys

from visprof.cli import main

if __name__ == "__main__":
    sys.exit(main())
