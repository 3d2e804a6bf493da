#include "io/curl_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

namespace sluice::io::internal {

namespace {

constexpr const char* kInstallHint = "install libcurl4 (Debian: apt-get install libcurl4)";

// dlerror() for the last dl call; never null.
std::string LastDlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown error";
}

}  // namespace

std::string CurlLibraryName() {
  const char* name = std::getenv("SLUICE_LIBCURL");
  return name != nullptr && name[0] != '\0' ? name : "libcurl.so.4";
}

Result<CurlApi> ResolveCurlApi(const std::string& library) {
  // Never closed: curl keeps global state (TLS back end, DNS threads) for the process.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return FailedPrecondition(library + " could not be loaded: " + LastDlError() + "; " +
                              kInstallHint);
  }
  CurlApi api{};
  Status missing;
  // Casts the symbol to the member's type; records the first missing one.
  auto resolve = [&](auto* member, const char* name) {
    if (!missing.ok()) return;
    void* symbol = dlsym(handle, name);
    if (symbol == nullptr) {
      missing = FailedPrecondition(library + " could not be loaded: " + LastDlError() +
                                   " (libcurl 7.68 or newer is needed); " + kInstallHint);
      return;
    }
    *member = reinterpret_cast<std::remove_pointer_t<decltype(member)>>(symbol);
  };
  resolve(&api.global_init, "curl_global_init");
  resolve(&api.easy_init, "curl_easy_init");
  resolve(&api.easy_cleanup, "curl_easy_cleanup");
  resolve(&api.easy_reset, "curl_easy_reset");
  resolve(&api.easy_setopt, "curl_easy_setopt");
  resolve(&api.easy_getinfo, "curl_easy_getinfo");
  resolve(&api.easy_strerror, "curl_easy_strerror");
  resolve(&api.multi_init, "curl_multi_init");
  resolve(&api.multi_cleanup, "curl_multi_cleanup");
  resolve(&api.multi_setopt, "curl_multi_setopt");
  resolve(&api.multi_add_handle, "curl_multi_add_handle");
  resolve(&api.multi_remove_handle, "curl_multi_remove_handle");
  resolve(&api.multi_perform, "curl_multi_perform");
  resolve(&api.multi_poll, "curl_multi_poll");
  resolve(&api.multi_wakeup, "curl_multi_wakeup");
  resolve(&api.multi_info_read, "curl_multi_info_read");
  resolve(&api.slist_append, "curl_slist_append");
  resolve(&api.slist_free_all, "curl_slist_free_all");
  if (!missing.ok()) return missing;
  return api;
}

Result<const CurlApi*> LoadCurl() {
  // A function-local static: resolved and initialised once, by whichever thread comes first.
  static const Result<CurlApi> api = []() -> Result<CurlApi> {
    Result<CurlApi> r = ResolveCurlApi(CurlLibraryName());
    if (!r.ok()) return r;
    const CURLcode code = r->global_init(CURL_GLOBAL_DEFAULT);
    if (code != CURLE_OK) {
      return FailedPrecondition("curl_global_init failed: " + std::string(r->easy_strerror(code)));
    }
    return r;
  }();
  if (!api.ok()) return api.status();
  return &*api;
}

const CurlApi& Curl() { return **LoadCurl(); }

}  // namespace sluice::io::internal
