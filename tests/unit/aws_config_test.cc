// ResolveAwsConfig over a fake environment and fake ~/.aws files.
#include "sluice/io/aws_config.h"

#include <gtest/gtest.h>

#include <map>

namespace sluice::io {
namespace {

struct FakeSources {
  std::map<std::string, std::string> env{{"HOME", "/home/u"}};
  std::map<std::string, std::string> files;

  AwsConfigSources Get() const {
    AwsConfigSources s;
    s.getenv = [this](const std::string& name) -> std::optional<std::string> {
      auto it = env.find(name);
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    s.read_file = [this](const std::string& path) -> std::optional<std::string> {
      auto it = files.find(path);
      if (it == files.end()) return std::nullopt;
      return it->second;
    };
    return s;
  }
  AwsConfig Resolve() const {
    auto r = ResolveAwsConfig(Get());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : AwsConfig();
  }
};

TEST(AwsConfig, NothingConfiguredMeansAwsDefaultsAndNoCredentials) {
  FakeSources f;
  AwsConfig c = f.Resolve();
  EXPECT_EQ(c.profile, "default");
  EXPECT_EQ(c.region, "us-east-1");
  EXPECT_EQ(c.endpoint_url, "");
  EXPECT_FALSE(c.credentials.has_value());
  EXPECT_FALSE(c.anonymous);
  EXPECT_NE(c.credentials_source.find("/home/u/.aws/credentials"), std::string::npos);
}

TEST(AwsConfig, EnvironmentCredentialsWin) {
  FakeSources f;
  f.env["AWS_ACCESS_KEY_ID"] = "AKENV";
  f.env["AWS_SECRET_ACCESS_KEY"] = "secret-env";
  f.env["AWS_SESSION_TOKEN"] = "tok";
  f.files["/home/u/.aws/credentials"] =
      "[default]\naws_access_key_id = AKFILE\naws_secret_access_key = s\n";
  AwsConfig c = f.Resolve();
  ASSERT_TRUE(c.credentials.has_value());
  EXPECT_EQ(c.credentials->access_key_id, "AKENV");
  EXPECT_EQ(c.credentials->session_token, "tok");
  EXPECT_EQ(c.credentials_source.find("secret"), std::string::npos);
}

TEST(AwsConfig, ProfileFromBothFilesWithNestedS3Settings) {
  FakeSources f;
  f.env["AWS_PROFILE"] = "dev";
  f.files["/home/u/.aws/credentials"] =
      "# comment\n[default]\naws_access_key_id=AKDEF\naws_secret_access_key=sdef\n\n"
      "[dev]\naws_access_key_id = AKDEV\naws_secret_access_key = sdev\n";
  f.files["/home/u/.aws/config"] =
      "[default]\nregion = eu-west-1\n"
      "[profile dev]\nregion = ap-south-1\ns3 =\n  endpoint_url = http://minio:9000\n"
      "  addressing_style = virtual\n";
  AwsConfig c = f.Resolve();
  EXPECT_EQ(c.profile, "dev");
  EXPECT_EQ(c.region, "ap-south-1");
  EXPECT_EQ(c.endpoint_url, "http://minio:9000");
  EXPECT_EQ(c.addressing, S3Addressing::kVirtualHosted);
  ASSERT_TRUE(c.credentials.has_value());
  EXPECT_EQ(c.credentials->access_key_id, "AKDEV");
  EXPECT_NE(c.credentials_source.find("[dev]"), std::string::npos);
}

TEST(AwsConfig, EnvironmentOverridesProfileRegionAndEndpoint) {
  FakeSources f;
  f.files["/home/u/.aws/config"] = "[default]\nregion = eu-west-1\nendpoint_url = http://a:1\n";
  EXPECT_EQ(f.Resolve().endpoint_url, "http://a:1");
  EXPECT_EQ(f.Resolve().region, "eu-west-1");
  f.env["AWS_DEFAULT_REGION"] = "us-west-2";
  EXPECT_EQ(f.Resolve().region, "us-west-2");
  f.env["AWS_REGION"] = "sa-east-1";
  EXPECT_EQ(f.Resolve().region, "sa-east-1");
  f.env["AWS_ENDPOINT_URL"] = "http://b:2";
  EXPECT_EQ(f.Resolve().endpoint_url, "http://b:2");
  f.env["AWS_ENDPOINT_URL_S3"] = "http://c:3";
  EXPECT_EQ(f.Resolve().endpoint_url, "http://c:3");
}

TEST(AwsConfig, ServicesSectionGivesTheS3Endpoint) {
  FakeSources f;
  f.files["/home/u/.aws/config"] =
      "[default]\nservices = local\n[services local]\ns3 =\n  endpoint_url = http://svc:7480\n";
  EXPECT_EQ(f.Resolve().endpoint_url, "http://svc:7480");
}

TEST(AwsConfig, CredentialsInTheConfigFileAreUsedLast) {
  FakeSources f;
  f.files["/home/u/.aws/config"] = "[default]\naws_access_key_id=AKCONF\naws_secret_access_key=x\n";
  AwsConfig c = f.Resolve();
  ASSERT_TRUE(c.credentials.has_value());
  EXPECT_EQ(c.credentials->access_key_id, "AKCONF");
}

TEST(AwsConfig, FileLocationsFollowTheirVariables) {
  FakeSources f;
  f.env["AWS_SHARED_CREDENTIALS_FILE"] = "/etc/creds";
  f.env["AWS_CONFIG_FILE"] = "/etc/conf";
  f.files["/etc/creds"] = "[default]\naws_access_key_id=AKX\naws_secret_access_key=y\n";
  f.files["/etc/conf"] = "[default]\nregion=eu-north-1\n";
  AwsConfig c = f.Resolve();
  EXPECT_EQ(c.region, "eu-north-1");
  ASSERT_TRUE(c.credentials.has_value());
  EXPECT_EQ(c.credentials->access_key_id, "AKX");
}

TEST(AwsConfig, UnknownProfileIsAnError) {
  FakeSources f;
  f.env["AWS_PROFILE"] = "nope";
  f.files["/home/u/.aws/config"] = "[default]\nregion = eu-west-1\n";
  auto r = ResolveAwsConfig(f.Get());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("nope"), std::string::npos);
}

TEST(AwsConfig, BadAddressingStyleIsAnError) {
  FakeSources f;
  f.files["/home/u/.aws/config"] = "[default]\ns3 =\n  addressing_style = sideways\n";
  EXPECT_EQ(ResolveAwsConfig(f.Get()).status().code(), StatusCode::kInvalidArgument);
}

TEST(AwsConfig, MaxAttemptsFromTheEnvironmentElseTheProfile) {
  FakeSources f;
  EXPECT_EQ(f.Resolve().max_attempts, 0);  // sluice's default
  f.files["/home/u/.aws/config"] = "[default]\nmax_attempts = 3\n";
  EXPECT_EQ(f.Resolve().max_attempts, 3);
  f.env["AWS_MAX_ATTEMPTS"] = "12";
  EXPECT_EQ(f.Resolve().max_attempts, 12);
}

TEST(AwsConfig, MalformedMaxAttemptsIsAnErrorNamingWhere) {
  for (const char* bad : {"0", "-2", "ten", "5x", "101"}) {
    FakeSources f;
    f.env["AWS_MAX_ATTEMPTS"] = bad;
    auto r = ResolveAwsConfig(f.Get());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("AWS_MAX_ATTEMPTS"), std::string::npos) << bad;
  }
  FakeSources f;
  f.files["/home/u/.aws/config"] = "[default]\nmax_attempts = many\n";
  auto r = ResolveAwsConfig(f.Get());
  EXPECT_NE(r.status().message().find("/home/u/.aws/config [default] max_attempts"),
            std::string::npos)
      << r.status().ToString();
}

TEST(AwsConfig, NoSignRequestMeansAnonymous) {
  FakeSources f;
  f.env["AWS_NO_SIGN_REQUEST"] = "YES";
  EXPECT_TRUE(f.Resolve().anonymous);
  f.env["AWS_NO_SIGN_REQUEST"] = "false";
  EXPECT_FALSE(f.Resolve().anonymous);
}

TEST(AwsConfig, HalfACredentialPairIsNoCredential) {
  FakeSources f;
  f.env["AWS_ACCESS_KEY_ID"] = "AKONLY";
  EXPECT_FALSE(f.Resolve().credentials.has_value());
}

}  // namespace
}  // namespace sluice::io
