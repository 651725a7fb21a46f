"""``python -m visprof ...``: the same as the ``visprof`` console script."""
import sys

from visprof.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
