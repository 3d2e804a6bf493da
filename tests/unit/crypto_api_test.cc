// libcrypto loaded at run time (src/io/crypto_api.h): the library resolves, SigV4's hashes go
// through it, and a missing library or symbol becomes an error naming the fix.
#include "io/crypto_api.h"

#include <gtest/gtest.h>

#include "io/sigv4.h"

namespace sluice::io::internal {
namespace {

TEST(CryptoApi, LoadsOnceAndEveryFunctionResolves) {
  Result<const CryptoApi*> first = LoadCrypto();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Result<const CryptoApi*> second = LoadCrypto();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(&Crypto(), *first);
  EXPECT_NE(Crypto().evp_sha256(), nullptr);
}

TEST(CryptoApi, HashesGoThroughTheLoadedLibrary) {
  // FIPS 180-2, appendix B.1, and the empty message.
  EXPECT_EQ(Sha256Hex(ByteView("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(ByteView()), kEmptySha256);
}

TEST(CryptoApi, MissingLibraryNamesItAndTheFix) {
  Result<CryptoApi> r = ResolveCryptoApi("libcrypto-sluice-test-missing.so.3");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  const std::string m = r.status().message();
  EXPECT_NE(m.find("libcrypto-sluice-test-missing.so.3 could not be loaded: "), std::string::npos)
      << m;
  EXPECT_NE(m.find("apt-get install libssl3"), std::string::npos) << m;
}

TEST(CryptoApi, LibraryWithoutCryptoSymbolsNamesTheMissingSymbol) {
  Result<CryptoApi> r = ResolveCryptoApi("libz.so.1");  // loads, but is not libcrypto
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("EVP_sha256"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace sluice::io::internal
