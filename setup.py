"""Builds sluice._sluice with CMake (the same build as `make build`, only the module target)
and packages it with python/sluice/. Used by
`/usr/bin/python3 -m pip install --no-build-isolation --no-deps --target DIR .` (docs/python.md);
needs cmake, ninja, a C++20 compiler, pybind11 and the libraries of scripts/install-deps."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        # SLUICE_PREBUILT=DIR packages the module an existing CMake build dir holds (as
        # `make build` makes it) instead of compiling again; tests use it.
        prebuilt = os.environ.get("SLUICE_PREBUILT")
        build_dir = Path(prebuilt) if prebuilt else Path(self.build_temp).resolve() / "cmake"
        if not prebuilt:
            jobs = os.environ.get("SLUICE_JOBS", str(os.cpu_count() or 1))
            subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
                            "-DCMAKE_BUILD_TYPE=Release", "-DSLUICE_BENCH=OFF",
                            f"-DPython3_EXECUTABLE={sys.executable}"], check=True)
            subprocess.run(["cmake", "--build", str(build_dir), "--target", "_sluice", "-j", jobs],
                           check=True)
        built = next((build_dir / "python" / "sluice").glob("_sluice*.so"), None)
        if built is None:
            sys.exit(f"setup.py: no _sluice*.so in {build_dir / 'python' / 'sluice'}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(
    ext_modules=[Extension("sluice._sluice", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # Not build/: that is the CMake build directory of `make build`.
    options={"build": {"build_base": "build-pip"}, "egg_info": {"egg_base": "build-pip"}},
)
