"""Libraries that most processes never use are loaded when first needed, never linked, so that
commands and `import sluice` that stay local do not pay for them at start-up: libcurl at the
first remote request (src/io/curl_api.h), OpenSSL's libcrypto at the first S3 client
(src/io/crypto_api.h), and libmpi with its dependencies through the MPI module
lib/sluice/libsluice_mpi.so, opened only by a job launched by mpirun or srun
(src/dist/mpi_module.h)."""
import glob
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
SLUICE = BUILD / "bin" / "sluice"
MPI_MODULE = BUILD / "lib" / "sluice" / "libsluice_mpi.so"
# Parts of the file names of the libraries that must not be loaded at start.
LAZY = ["libcurl", "libcrypto", "libmpi", "libopen-pal", "libhwloc", "libevent", "libsluice_mpi"]
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"]


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


def sluice_env(tmp_path, **extra):
    """The environment of a local command: no AWS settings, no launcher variables."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "OMPI_", "PMIX_", "SLURM_"))}
    env.update(HOME=str(tmp_path), **extra)
    return env


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("lazy")
    with open(d / "in.jsonl", "w") as f:
        for i in range(200):
            f.write(json.dumps({"text": f"line {i}", "label": i % 3}) + "\n")
    subprocess.run([str(SLUICE), "convert", "jsonl", str(d / "in.jsonl"), str(d / "ds"),
                    "--shard-size", "2KB", "--codec", "none"], check=True,
                   capture_output=True, timeout=120)
    return d / "ds"


@pytest.mark.parametrize("which", ["cli", "python"])
def test_lazy_libraries_are_not_linked(which):
    binary = SLUICE if which == "cli" else python_module()
    closure = loaded_closure(binary)
    for lib in LAZY:
        assert not [n for n in needed(binary) if lib in n], needed(binary)
        assert lib not in closure, closure


@pytest.mark.parametrize("command", [["--version"], ["verify"], ["stats", "--key", "label"]])
def test_a_local_command_loads_none_of_them(command, dataset, tmp_path):
    args = command if command == ["--version"] else [command[0], str(dataset), *command[1:]]
    # LD_DEBUG=files: the loader names every object it opens, dlopen's included.
    r = subprocess.run([str(SLUICE), *args], capture_output=True, text=True, timeout=120,
                       env=sluice_env(tmp_path, LD_DEBUG="files"))
    assert r.returncode == 0, r.stderr[-2000:]
    opened = [line for line in r.stderr.splitlines() if "file=" in line]
    assert opened, "LD_DEBUG=files printed nothing"
    for lib in LAZY:
        assert not [line for line in opened if f"file={lib}" in line], lib


def test_the_mpi_module_exports_only_its_entry_point():
    assert MPI_MODULE.exists(), f"{MPI_MODULE} not built"
    out = subprocess.run(["nm", "-D", "--defined-only", str(MPI_MODULE)], capture_output=True,
                         text=True, check=True).stdout
    functions = [line.split()[-1] for line in out.splitlines() if line.split()[1] == "T"]
    assert functions == ["sluice_mpi_open_transport_v1"], functions
    assert [n for n in needed(MPI_MODULE) if n.startswith("libmpi")], needed(MPI_MODULE)


@pytest.mark.parametrize("variable, file, install", [
    ("SLUICE_LIBCURL", "no-libcurl.so.4", "apt-get install libcurl4"),
    ("SLUICE_LIBCRYPTO", "no-libcrypto.so.3", "apt-get install libssl3")])
def test_missing_library_fails_the_s3_request_with_how_to_install_it(variable, file, install,
                                                                     tmp_path):
    env = sluice_env(tmp_path, **{variable: str(tmp_path / file)},
                     AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_ACCESS_KEY_ID="AKEXAMPLE",
                     AWS_SECRET_ACCESS_KEY="secret", AWS_REGION="us-east-1")
    r = subprocess.run([str(SLUICE), "inspect", "s3://bucket/ds"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode != 0
    assert f"{file} could not be loaded" in r.stderr, r.stderr
    assert install in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "Segmentation" not in r.stderr


def test_missing_mpi_module_fails_the_job_with_how_to_get_it(dataset, tmp_path):
    # What mpirun sets in each rank (one rank, no mpirun needed to reach the loader).
    env = sluice_env(tmp_path, OMPI_COMM_WORLD_SIZE="1",
                     SLUICE_MPI_MODULE=str(tmp_path / "no-module.so"))
    r = subprocess.run([str(SLUICE), "stats", str(dataset), "--key", "label"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 1, r.stderr
    assert f"{tmp_path / 'no-module.so'} could not be loaded" in r.stderr, r.stderr
    assert "lib/sluice/libsluice_mpi.so" in r.stderr and "SLUICE_MPI_MODULE" in r.stderr
    assert "apt-get install libopenmpi3" in r.stderr, r.stderr


def place(src, dst):
    """`src` at `dst`: a hard link (the command is ~150 MB with its debug information), else
    a copy. Not a symbolic link: the module is found from the program's resolved path."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
def test_an_installed_layout_finds_the_module_beside_the_command(dataset, tmp_path):
    prefix = tmp_path / "prefix"
    place(SLUICE, prefix / "bin" / "sluice")
    env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1")
    cmd = MPIRUN + [str(prefix / "bin" / "sluice"), "stats", str(dataset), "--key", "label",
                    "--json"]
    missing = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert missing.returncode != 0
    assert f"{prefix}/bin/../lib/sluice/libsluice_mpi.so could not be loaded" in missing.stderr

    place(MPI_MODULE, prefix / "lib" / "sluice" / "libsluice_mpi.so")
    found = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert found.returncode == 0, found.stderr
    out = json.loads(found.stdout)
    assert out["ranks"] == 2 and out["records"] == 200
