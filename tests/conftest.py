"""Tests are laid out as the package is (tests/<layer>/); shared helpers live in tests/helpers/."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
