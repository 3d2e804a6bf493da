#include "io/crypto_api.h"

#include <dlfcn.h>
#include <openssl/opensslv.h>

#include <cstdio>
#include <cstdlib>

#include "base/shared_library.h"

namespace sluice::io::internal {

std::string CryptoLibraryName() {
  const char* name = std::getenv("SLUICE_LIBCRYPTO");
  if (name != nullptr && name[0] != '\0') return name;
  return "libcrypto.so." + std::to_string(OPENSSL_VERSION_MAJOR);
}

Result<CryptoApi> ResolveCryptoApi(const std::string& library) {
  SLUICE_ASSIGN_OR_RETURN(
      SharedLibrary lib,
      SharedLibrary::Open(library, RTLD_NOW | RTLD_LOCAL,
                          "install OpenSSL's libcrypto (Debian: apt-get install libssl3)"));
  CryptoApi api{};
  Status missing;
  const std::string need = "OpenSSL " + std::to_string(OPENSSL_VERSION_MAJOR) + " is needed";
  lib.Resolve(&api.evp_sha256, "EVP_sha256", need, &missing);
  lib.Resolve(&api.evp_digest, "EVP_Digest", need, &missing);
  lib.Resolve(&api.hmac, "HMAC", need, &missing);
  if (!missing.ok()) return missing;
  return api;
}

Result<const CryptoApi*> LoadCrypto() {
  // A function-local static: resolved once, by whichever thread comes first.
  static const Result<CryptoApi> api = ResolveCryptoApi(CryptoLibraryName());
  if (!api.ok()) return api.status();
  return &*api;
}

const CryptoApi& Crypto() {
  Result<const CryptoApi*> api = LoadCrypto();
  if (!api.ok()) {
    std::fprintf(stderr, "sluice: %s\n", api.status().message().c_str());
    std::abort();
  }
  return **api;
}

}  // namespace sluice::io::internal
