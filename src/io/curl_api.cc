#include "io/curl_api.h"

#include <dlfcn.h>

#include <cstdlib>

#include "base/shared_library.h"

namespace sluice::io::internal {

std::string CurlLibraryName() {
  const char* name = std::getenv("SLUICE_LIBCURL");
  return name != nullptr && name[0] != '\0' ? name : "libcurl.so.4";
}

Result<CurlApi> ResolveCurlApi(const std::string& library) {
  // RTLD_LOCAL: curl's symbols stay out of the way of other libraries.
  SLUICE_ASSIGN_OR_RETURN(
      SharedLibrary lib,
      SharedLibrary::Open(library, RTLD_NOW | RTLD_LOCAL,
                          "install libcurl4 (Debian: apt-get install libcurl4)"));
  CurlApi api{};
  Status missing;
  const std::string need = "libcurl 7.68 or newer is needed";
  lib.Resolve(&api.global_init, "curl_global_init", need, &missing);
  lib.Resolve(&api.easy_init, "curl_easy_init", need, &missing);
  lib.Resolve(&api.easy_cleanup, "curl_easy_cleanup", need, &missing);
  lib.Resolve(&api.easy_reset, "curl_easy_reset", need, &missing);
  lib.Resolve(&api.easy_setopt, "curl_easy_setopt", need, &missing);
  lib.Resolve(&api.easy_getinfo, "curl_easy_getinfo", need, &missing);
  lib.Resolve(&api.easy_strerror, "curl_easy_strerror", need, &missing);
  lib.Resolve(&api.multi_init, "curl_multi_init", need, &missing);
  lib.Resolve(&api.multi_cleanup, "curl_multi_cleanup", need, &missing);
  lib.Resolve(&api.multi_setopt, "curl_multi_setopt", need, &missing);
  lib.Resolve(&api.multi_add_handle, "curl_multi_add_handle", need, &missing);
  lib.Resolve(&api.multi_remove_handle, "curl_multi_remove_handle", need, &missing);
  lib.Resolve(&api.multi_perform, "curl_multi_perform", need, &missing);
  lib.Resolve(&api.multi_poll, "curl_multi_poll", need, &missing);
  lib.Resolve(&api.multi_wakeup, "curl_multi_wakeup", need, &missing);
  lib.Resolve(&api.multi_info_read, "curl_multi_info_read", need, &missing);
  lib.Resolve(&api.slist_append, "curl_slist_append", need, &missing);
  lib.Resolve(&api.slist_free_all, "curl_slist_free_all", need, &missing);
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
