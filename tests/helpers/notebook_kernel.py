"""Runs code cells in a real Jupyter kernel (nbclient), as a notebook user does, and returns what
each cell printed to stdout and showed as its value. A cell that raises fails the caller's test,
with the kernel's traceback."""
from __future__ import annotations

from pathlib import Path

import pytest


def run_cells(cells: list[str], folder: Path, timeout_s: int = 600) -> list[str]:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    client = nbclient.NotebookClient(notebook, timeout=timeout_s, kernel_name="python3",
                                     resources={"metadata": {"path": str(folder)}})
    client.execute()
    return [_shown(cell) for cell in notebook.cells]


def _shown(cell) -> str:
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream" and output.name == "stdout":
            parts.append(output.text)
        elif output.output_type == "execute_result":
            parts.append(output.data["text/plain"])
    return "".join(parts)
