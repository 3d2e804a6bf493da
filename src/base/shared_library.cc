#include "base/shared_library.h"

#include <dlfcn.h>

namespace sluice {
namespace {

// dlerror() for the last dl call; never null.
std::string LastDlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown error";
}

}  // namespace

Result<SharedLibrary> SharedLibrary::Open(const std::string& file, int flags, std::string hint) {
  void* handle = dlopen(file.c_str(), flags);
  if (handle == nullptr) {
    return FailedPrecondition(file + " could not be loaded: " + LastDlError() + "; " + hint);
  }
  return SharedLibrary(handle, file, std::move(hint));
}

Result<void*> SharedLibrary::Symbol(const char* symbol, const std::string& note) const {
  dlerror();  // so that the dlerror() below is this call's
  void* address = dlsym(handle_, symbol);
  if (address == nullptr) {
    return FailedPrecondition(file_ + " could not be loaded: " + LastDlError() +
                              (note.empty() ? "" : " (" + note + ")") + "; " + hint_);
  }
  return address;
}

}  // namespace sluice
