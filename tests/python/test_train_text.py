"""Smoke test of examples/train_text.py: 20 steps, dense and --moe 4, finite loss.
Run: SLUICE_BUILD=build /usr/bin/python3 -m pytest -q tests/python/test_train_text.py
"""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build")))
KERNEL_DOCS = "/usr/share/doc/linux-doc-6.1/Documentation"


@pytest.mark.skipif(not os.path.isdir(KERNEL_DOCS), reason="linux-doc-6.1 not installed")
@pytest.mark.parametrize("moe", [0, 4])
def test_train_text_runs_with_finite_loss(moe):
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"), SLUICE_BUILD=BUILD)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_text.py"),
                        "--steps", "20", "--corpus-mb", "0.5", "--moe", str(moe)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"loss ([\d.]+) -> ([\d.]+) over 20 steps", r.stdout)
    assert m, r.stdout
    first, last = float(m.group(1)), float(m.group(2))
    assert last < first, r.stdout  # from ~log(vocab): even 20 steps learn unigram statistics
