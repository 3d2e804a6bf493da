// libcurl, loaded at run time. sluice does not link libcurl: its ~20 dependent libraries
// (TLS, Kerberos, LDAP, SSH, ...) cost every process ~13 ms in the dynamic loader, which
// every `sluice` command and `import sluice` would pay even without touching the network.
// Instead the first HTTP engine loads libcurl.so.4 with dlopen and resolves the few functions
// sluice calls into CurlApi. <curl/curl.h> still provides the types and constants.
#pragma once

#include <curl/curl.h>

#include <string>

#include "sluice/base/status.h"

namespace sluice::io::internal {

// The libcurl functions sluice calls, with their exact types from <curl/curl.h>. Named like
// libcurl's without the `curl_` prefix: Curl().easy_setopt(e, CURLOPT_URL, url).
struct CurlApi {
  decltype(&curl_global_init) global_init;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_reset) easy_reset;
  decltype(&curl_easy_setopt) easy_setopt;  // variadic, as in libcurl: no type checking
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_multi_init) multi_init;
  decltype(&curl_multi_cleanup) multi_cleanup;
  decltype(&curl_multi_setopt) multi_setopt;
  decltype(&curl_multi_add_handle) multi_add_handle;
  decltype(&curl_multi_remove_handle) multi_remove_handle;
  decltype(&curl_multi_perform) multi_perform;
  decltype(&curl_multi_poll) multi_poll;
  decltype(&curl_multi_wakeup) multi_wakeup;
  decltype(&curl_multi_info_read) multi_info_read;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
};

// The soname loaded. Default: libcurl.so.4; the environment variable SLUICE_LIBCURL, when
// set, names another file (a path or a soname) instead.
std::string CurlLibraryName();

// Opens `library` (dlopen; it stays loaded for the life of the process) and resolves every
// CurlApi function. Does not call curl_global_init. On failure: FailedPrecondition saying
// which library or symbol is missing and how to install libcurl.
Result<CurlApi> ResolveCurlApi(const std::string& library);

// The process's libcurl: resolved from CurlLibraryName() and initialised with
// curl_global_init on the first call, before any other curl call; later calls return the same
// result, success or error. Threading: any thread.
Result<const CurlApi*> LoadCurl();

// LoadCurl()'s functions. Only after LoadCurl() succeeded (every engine with a running
// transfer has checked that).
const CurlApi& Curl();

}  // namespace sluice::io::internal
