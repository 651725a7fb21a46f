"""``visprof.cli.app.main`` in this process, its output captured by pytest's ``capsys``, and what a
refused command must print."""
from __future__ import annotations

from visprof.cli.app import main


def run_cli(capsys, *argv):
    """(exit code, stdout, stderr) of ``visprof ARGV``."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str) -> str:
    """The one ``visprof: error:`` line of a refused command, no traceback and nothing else."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("visprof: error: "), err
    assert "Traceback" not in err
    return lines[0]
