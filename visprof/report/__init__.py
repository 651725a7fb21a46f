"""Reports over a ``ProfileResult`` (and, for the trace, the attributed recording)."""
from visprof.report.chrome_trace import to_chrome_trace
from visprof.report.csv import write_categories_csv, write_modules_csv
from visprof.report.table import render

__all__ = ["render", "to_chrome_trace", "write_categories_csv", "write_modules_csv"]
