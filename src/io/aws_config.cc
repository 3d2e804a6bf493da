// AWS configuration: environment variables and the two INI files of ~/.aws.
#include "sluice/io/aws_config.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace sluice::io {

namespace {

// section -> key -> value. A key written "s3 =" followed by indented "k = v" lines gives
// keys "s3.k" (the nested form AWS uses for per-service settings).
using IniFile = std::map<std::string, std::map<std::string, std::string>>;

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

IniFile ParseIni(std::string_view text) {
  IniFile ini;
  std::string section, nested;
  std::istringstream in{std::string(text)};
  std::string raw;
  while (std::getline(in, raw)) {
    const bool indented = !raw.empty() && (raw[0] == ' ' || raw[0] == '\t');
    std::string line = Trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = Trim(std::string_view(line).substr(1, line.size() - 2));
      nested.clear();
      ini[section];
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos || section.empty()) continue;
    std::string key = Trim(std::string_view(line).substr(0, eq));
    std::string value = Trim(std::string_view(line).substr(eq + 1));
    if (indented && !nested.empty()) {
      ini[section][nested + "." + key] = value;
      continue;
    }
    nested = value.empty() ? key : "";
    if (!value.empty()) ini[section][key] = value;
  }
  return ini;
}

const std::map<std::string, std::string>* Section(const IniFile& ini, const std::string& name) {
  auto it = ini.find(name);
  return it == ini.end() ? nullptr : &it->second;
}

std::string Get(const std::map<std::string, std::string>* s, const std::string& key) {
  if (s == nullptr) return "";
  auto it = s->find(key);
  return it == s->end() ? "" : it->second;
}

bool Truthy(const std::optional<std::string>& v) {
  if (!v.has_value()) return false;
  std::string s = *v;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

std::optional<AwsCredentials> CredentialsIn(const std::map<std::string, std::string>* s) {
  const std::string id = Get(s, "aws_access_key_id");
  const std::string secret = Get(s, "aws_secret_access_key");
  if (id.empty() || secret.empty()) return std::nullopt;
  return AwsCredentials{id, secret, Get(s, "aws_session_token")};
}

}  // namespace

AwsConfigSources ProcessAwsConfigSources() {
  AwsConfigSources s;
  s.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  s.read_file = [](const std::string& path) -> std::optional<std::string> {
    std::ifstream f(path, std::ios::binary);
    if (!f) return std::nullopt;
    std::ostringstream text;
    text << f.rdbuf();
    return text.str();
  };
  return s;
}

Result<AwsConfig> ResolveAwsConfig(const AwsConfigSources& sources) {
  auto env = [&](const char* name) -> std::string {
    auto v = sources.getenv(name);
    return v.has_value() ? *v : "";
  };
  AwsConfig config;
  const std::string home = env("HOME");
  const std::string credentials_path = !env("AWS_SHARED_CREDENTIALS_FILE").empty()
                                           ? env("AWS_SHARED_CREDENTIALS_FILE")
                                           : home + "/.aws/credentials";
  const std::string config_path =
      !env("AWS_CONFIG_FILE").empty() ? env("AWS_CONFIG_FILE") : home + "/.aws/config";
  const bool profile_named = !env("AWS_PROFILE").empty();
  if (profile_named) config.profile = env("AWS_PROFILE");

  auto credentials_text = sources.read_file(credentials_path);
  auto config_text = sources.read_file(config_path);
  const IniFile credentials_ini = credentials_text ? ParseIni(*credentials_text) : IniFile();
  const IniFile config_ini = config_text ? ParseIni(*config_text) : IniFile();
  const auto* cred_section = Section(credentials_ini, config.profile);
  const auto* conf_section =
      Section(config_ini, config.profile == "default" ? "default" : "profile " + config.profile);
  if (conf_section == nullptr && config.profile == "default") {
    conf_section = Section(config_ini, "profile default");
  }
  if (profile_named && cred_section == nullptr && conf_section == nullptr) {
    return InvalidArgument("AWS_PROFILE=" + config.profile + ": no such profile in " +
                           credentials_path + " or " + config_path);
  }
  const auto* services = Section(config_ini, "services " + Get(conf_section, "services"));

  // Region.
  for (const std::string& v :
       {env("AWS_REGION"), env("AWS_DEFAULT_REGION"), Get(conf_section, "region")}) {
    if (!v.empty()) {
      config.region = v;
      break;
    }
  }
  // Endpoint.
  for (const std::string& v :
       {env("AWS_ENDPOINT_URL_S3"), env("AWS_ENDPOINT_URL"), Get(services, "s3.endpoint_url"),
        Get(conf_section, "s3.endpoint_url"), Get(conf_section, "endpoint_url")}) {
    if (!v.empty()) {
      config.endpoint_url = v;
      break;
    }
  }
  // Addressing.
  const std::string style = Get(conf_section, "s3.addressing_style");
  if (style == "path") {
    config.addressing = S3Addressing::kPath;
  } else if (style == "virtual") {
    config.addressing = S3Addressing::kVirtualHosted;
  } else if (!style.empty() && style != "auto") {
    return InvalidArgument(config_path + " [" + config.profile + "]: s3 addressing_style '" +
                           style + "' is not auto, path or virtual");
  }
  config.anonymous = Truthy(sources.getenv("AWS_NO_SIGN_REQUEST"));
  // Attempts.
  for (const auto& [where, v] :
       {std::pair<std::string, std::string>{"AWS_MAX_ATTEMPTS", env("AWS_MAX_ATTEMPTS")},
        {config_path + " [" + config.profile + "] max_attempts",
         Get(conf_section, "max_attempts")}}) {
    if (v.empty()) continue;
    int n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 1 || n > 100) {
      return InvalidArgument(where + " = '" + v + "': not a number of attempts from 1 to 100");
    }
    config.max_attempts = n;
    break;
  }

  // Credentials: environment, credentials file, config file.
  if (!env("AWS_ACCESS_KEY_ID").empty() && !env("AWS_SECRET_ACCESS_KEY").empty()) {
    config.credentials = AwsCredentials{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"),
                                        env("AWS_SESSION_TOKEN")};
    config.credentials_source = "environment (AWS_ACCESS_KEY_ID)";
  } else if (auto c = CredentialsIn(cred_section)) {
    config.credentials = std::move(c);
    config.credentials_source = credentials_path + " [" + config.profile + "]";
  } else if (auto c2 = CredentialsIn(conf_section)) {
    config.credentials = std::move(c2);
    config.credentials_source = config_path + " [" + config.profile + "]";
  } else {
    config.credentials_source = "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile '" +
                                config.profile + "' in " + credentials_path + " and " + config_path;
  }
  return config;
}

}  // namespace sluice::io
