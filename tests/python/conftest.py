"""Shared by the Python tests: makes `import sluice` find $SLUICE_BUILD/python (default
./build) when PYTHONPATH does not already, so `pytest tests/python` works after `make build`.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
_PACKAGE_DIR = str(BUILD / "python")
if _PACKAGE_DIR not in sys.path:
    sys.path.insert(0, _PACKAGE_DIR)
