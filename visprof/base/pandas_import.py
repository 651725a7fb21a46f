"""pandas, imported where a DataFrame is asked for: an optional dependency (``visprof[pandas]``),
so its absence is one line that says how to install it, not a ModuleNotFoundError from inside."""
from __future__ import annotations

from visprof.base.errors import VisprofError


def import_pandas(what: str):
    """The pandas module; a VisprofError naming ``what`` needed it where it is not installed."""
    try:
        import pandas
    except ImportError:
        raise VisprofError(f'{what} needs pandas: pip install "visprof[pandas]"') from None
    return pandas


__all__ = ["import_pandas"]
