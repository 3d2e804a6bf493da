"""libcurl is loaded at the first remote request (src/io/curl_api.h), never linked: commands
and `import sluice` that stay local do not pay for its ~20 libraries at start-up."""
import glob
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
SLUICE = BUILD / "bin" / "sluice"


def needed(binary):
    """The NEEDED entries of an ELF file's dynamic section."""
    out = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True,
                         check=True).stdout
    return [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines()
            if "(NEEDED)" in line]


def loaded_closure(binary):
    """Every library the dynamic loader maps for `binary` (ldd), directly or not."""
    return subprocess.run(["ldd", str(binary)], capture_output=True, text=True,
                          check=True).stdout


def python_module():
    found = glob.glob(str(BUILD / "python" / "sluice" / "_sluice*.so"))
    if not found:
        pytest.skip("the Python module is not built")
    return found[0]


@pytest.mark.parametrize("which", ["cli", "python"])
def test_libcurl_is_not_linked(which):
    binary = SLUICE if which == "cli" else python_module()
    assert not [n for n in needed(binary) if "curl" in n], needed(binary)
    assert "libcurl" not in loaded_closure(binary)


def test_missing_libcurl_fails_the_request_with_how_to_install_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(SLUICE_LIBCURL=str(tmp_path / "no-libcurl.so.4"), HOME=str(tmp_path),
               AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_ACCESS_KEY_ID="AKEXAMPLE",
               AWS_SECRET_ACCESS_KEY="secret", AWS_REGION="us-east-1")
    r = subprocess.run([str(SLUICE), "inspect", "s3://bucket/ds"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode != 0
    assert "no-libcurl.so.4 could not be loaded" in r.stderr, r.stderr
    assert "apt-get install libcurl4" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "Segmentation" not in r.stderr
