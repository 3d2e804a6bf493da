// OpenSSL's libcrypto, loaded at run time for SigV4 (sigv4.h: SHA-256 and HMAC-SHA256), as
// libcurl is (curl_api.h): linking it cost every `sluice` command and `import sluice` ~1-2 ms
// at start (4.7 MB, 21,000 relocations, its initialisers), though only S3 requests use it.
// <openssl/*.h> still provide the types.
#pragma once

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <string>

#include "sluice/base/status.h"

namespace sluice::io::internal {

// The libcrypto functions sluice calls, with their exact types from OpenSSL's headers.
struct CryptoApi {
  decltype(&EVP_sha256) evp_sha256;
  decltype(&EVP_Digest) evp_digest;
  decltype(&HMAC) hmac;
};

// The file loaded: libcrypto.so.N of the OpenSSL major version sluice was built against
// (libcrypto.so.3); the environment variable SLUICE_LIBCRYPTO, when set, names another.
std::string CryptoLibraryName();

// Opens `library` (it stays loaded) and resolves every CryptoApi function. On failure:
// FailedPrecondition naming the library or symbol and how to install libcrypto.
Result<CryptoApi> ResolveCryptoApi(const std::string& library);

// The process's libcrypto, resolved from CryptoLibraryName() on the first call; later calls
// return the same result, success or error. S3Client::Make calls it, so that a missing
// libcrypto fails the client with its error. Threading: any thread.
Result<const CryptoApi*> LoadCrypto();

// LoadCrypto()'s functions. Aborts with LoadCrypto()'s error if libcrypto cannot be loaded:
// callers that can report an error call LoadCrypto() first.
const CryptoApi& Crypto();

}  // namespace sluice::io::internal
