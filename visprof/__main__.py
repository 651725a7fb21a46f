"""``python -m visprof ...``: the same as the ``visprof`` console script."""
from visprof.cli.app import run

if __name__ == "__main__":
    run()
