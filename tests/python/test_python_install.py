"""The offline package install of docs/python.md: `pip install --no-build-isolation --no-deps
--target DIR .` yields an importable, working `sluice` outside the source tree. The module is
the one `make build` compiled (setup.py's SLUICE_PREBUILT), so this checks the packaging
(metadata, package files, module placement), not a second compile."""
import os
import subprocess
import sys
from pathlib import Path

from conftest import BUILD, ROOT

PROGRAM = """
import sluice
ds = sluice.from_records([[b"a", b"bb"], [b"ccc"]]).batch(3)
batch = next(iter(ds))
print(sluice.__file__)
print(sorted(bytes(x) for x in batch["record"]))
"""


def test_pip_install_target_gives_a_working_package(tmp_path):
    target = tmp_path / "site"
    env = dict(os.environ, SLUICE_PREBUILT=str(BUILD), PIP_NO_INDEX="1")
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--quiet",
         "--target", str(target), str(ROOT)],
        env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    installed = sorted(p.name for p in (target / "sluice").iterdir())
    assert "__init__.py" in installed and "torch.py" in installed, installed
    assert any(n.startswith("_sluice") and n.endswith(".so") for n in installed), installed

    run = subprocess.run([sys.executable, "-c", PROGRAM], cwd=tmp_path,
                         env=dict(env, PYTHONPATH=str(target)), capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    module_file, records = run.stdout.splitlines()
    assert Path(module_file).resolve().is_relative_to(target.resolve())
    assert records == "[b'a', b'bb', b'ccc']"
