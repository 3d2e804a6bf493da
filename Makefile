# The two commands of the README: `make demo` and `make test`. Everything else is a step of them.
PY       ?= /usr/bin/python3
BUILD    ?= build
JOBS     ?= $(shell nproc)
CMAKE_FLAGS ?=
# ccache when installed (scripts/install-deps installs it): paths under the checkout's parent
# directory are hashed relative to the build directory, so clones in other places (CI) share
# the cache. Evaluated when a recipe runs, i.e. after `deps`.
LAUNCHER = $(shell command -v ccache >/dev/null 2>&1 && \
  echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR ?= $(abspath $(CURDIR)/..)
export CCACHE_NOHASHDIR ?= 1

.PHONY: deps build test unit pytest asan asan-python fuzz demo bench clean format install

deps:
	scripts/install-deps

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_WERROR=ON \
	  -DPython3_EXECUTABLE=$(PY) $(LAUNCHER) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# Every test: unit tests (GoogleTest via CTest), Python tests (pytest), the unit tests and the
# Python package's tests again under ASan+UBSan, and a short run of each libFuzzer target.
test: build
	$(MAKE) unit pytest asan asan-python fuzz

unit:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300

pytest:
	SLUICE_BUILD=$(abspath $(BUILD)) PYTHONPATH=$(abspath $(BUILD))/python \
	  $(PY) -m pytest -q tests/python

asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSLUICE_WERROR=ON \
	  -DSLUICE_SANITIZE=ON -DSLUICE_BENCH=OFF -DPython3_EXECUTABLE=$(PY) $(LAUNCHER)
	cmake --build build-asan -j $(JOBS) --target sluice_tests
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 600

# The Python package's tests with the sanitized module (python3 itself is not sanitized).
asan-python: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSLUICE_WERROR=ON \
	  -DSLUICE_SANITIZE=ON -DSLUICE_BENCH=OFF -DPython3_EXECUTABLE=$(PY) $(LAUNCHER)
	cmake --build build-asan -j $(JOBS) --target _sluice sluice
	LD_PRELOAD=$$(gcc -print-file-name=libasan.so):$$(gcc -print-file-name=libubsan.so) \
	  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  SLUICE_BUILD=$(abspath build-asan) $(PY) -m pytest -q -p no:cacheprovider \
	  tests/python/test_python_*.py -k "not sluice_convert"

FUZZ_SECONDS ?= 30
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSLUICE_FUZZ=ON -DSLUICE_BENCH=OFF $(LAUNCHER)
	cmake --build build-fuzz -j $(JOBS)
	scripts/run-fuzzers build-fuzz $(FUZZ_SECONDS)

demo: build
	scripts/demo

# The command and the MPI module it loads under mpirun/srun: PREFIX/bin/sluice and
# PREFIX/lib/sluice/libsluice_mpi.so (docs/dist.md).
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

bench: build
	scripts/bench-all

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) build-asan build-fuzz
