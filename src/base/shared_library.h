// Libraries opened at run time (dlopen) instead of linked: dependencies that most processes
// never use (libcurl, libcrypto, libmpi) would otherwise cost every `sluice` command and
// `import sluice` their dynamic loading at start (io/curl_api.h, io/crypto_api.h,
// dist/mpi_module.h). A library, once opened, stays loaded for the life of the process.
#pragma once

#include <string>
#include <type_traits>

#include "sluice/base/status.h"

namespace sluice {

class SharedLibrary {
 public:
  // dlopen(file, flags) (RTLD_NOW | RTLD_LOCAL unless a caller needs otherwise). `hint` says
  // how to get the library ("install libcurl4 (Debian: apt-get install libcurl4)"). On
  // failure: FailedPrecondition "FILE could not be loaded: DLERROR; HINT".
  static Result<SharedLibrary> Open(const std::string& file, int flags, std::string hint);

  // The address of `symbol`. On failure: FailedPrecondition "FILE could not be loaded:
  // DLERROR (NOTE); HINT", where `note` says what a missing symbol means, e.g. which version
  // of the library has it (no parentheses when empty).
  Result<void*> Symbol(const char* symbol, const std::string& note = "") const;

  // Symbol() cast to the type of *function (a pointer to function), or its error in
  // *first_error; nothing at all once *first_error holds an error, so that a table of
  // functions is resolved in a row and reports its first missing one.
  template <typename Function>
  void Resolve(Function* function, const char* symbol, const std::string& note,
               Status* first_error) const {
    static_assert(std::is_pointer_v<Function>);
    if (!first_error->ok()) return;
    Result<void*> address = Symbol(symbol, note);
    if (!address.ok()) {
      *first_error = address.status();
      return;
    }
    *function = reinterpret_cast<Function>(*address);
  }

  const std::string& file() const { return file_; }

 private:
  SharedLibrary(void* handle, std::string file, std::string hint)
      : handle_(handle), file_(std::move(file)), hint_(std::move(hint)) {}

  void* handle_;  // never closed
  std::string file_;
  std::string hint_;
};

}  // namespace sluice
