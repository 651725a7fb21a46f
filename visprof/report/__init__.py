"""Reports over a ``ProfileResult`` (and, for the trace, the attributed recording)."""
from .chrome_trace import to_chrome_trace
from .csv import write_categories_csv, write_modules_csv
from .table import render

__all__ = ["render", "to_chrome_trace", "write_categories_csv", "write_modules_csv"]
