#include "cli/client_flags.h"

#include <cstdlib>
#include <set>
#include <stdexcept>

#include "cli/command_line.h"
#include "config/config.h"
#include "util/bounded_file.h"

namespace loadwatch {

namespace {

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

/// "gen-2=http://10.0.0.2:9797" or "http://10.0.0.2:9797" (named "10.0.0.2:9797").
Daemon parse_daemon(const std::string& text, const char* flag) {
  Daemon d;
  std::string url = text;
  auto scheme = text.find("://");
  auto eq = text.find('=');
  if (eq != std::string::npos && (scheme == std::string::npos || eq < scheme)) {
    d.name = text.substr(0, eq);
    d.named = true;
    url = text.substr(eq + 1);
    if (d.name.empty() || d.name.size() > 64) {
      throw std::invalid_argument(std::string(flag) + ": a host name of 1 to 64 bytes in \"" +
                                  text + "\"");
    }
    for (char c : d.name) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.';
      if (!ok) throw std::invalid_argument(std::string(flag) + ": a host name is [A-Za-z0-9._-]");
    }
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    throw std::invalid_argument(
        std::string(flag) + ": want http://HOST:PORT or https://HOST:PORT, got \"" + url + "\"");
  }
  if (d.name.empty()) {
    std::string rest = url.substr(url.find("://") + 3);
    d.name = rest.substr(0, rest.find('/'));
    // Credentials in the URL (user:password@) never name a host: names are shown and stored.
    if (auto at = d.name.rfind('@'); at != std::string::npos) d.name = d.name.substr(at + 1);
  }
  d.options.url = url;
  return d;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    auto comma = s.find(',', from);
    std::string part = trimmed(s.substr(from, comma - from));
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

}  // namespace

void add_client_flags(CommandLine& app, ClientFlags& flags, const std::string& what) {
  if (flags.env_defaults) {
    flags.user = env_or("LOADWATCH_USER", "");
    flags.password_file = env_or("LOADWATCH_PASSWORD_FILE", "");
  }
  std::string env_note = flags.env_defaults
                             ? " (default $LOADWATCH_URL, URLs separated by commas, else "
                               "http://127.0.0.1:9797)"
                             : "";
  app.option("--url", flags.urls,
             what + "; repeatable, one per host; NAME=URL names the host" + env_note)
      .one_value_each()
      .take_all();
  app.option("--url-file", flags.url_file,
             "A file of --url values, one a line (# starts a comment)");
  app.option(
      "--user", flags.user,
      std::string("Basic-auth user") + (flags.env_defaults ? " (default $LOADWATCH_USER)" : ""));
  app.option("--password-file", flags.password_file,
             std::string("File holding the basic-auth password") +
                 (flags.env_defaults ? " (default $LOADWATCH_PASSWORD_FILE)" : ""));
  app.option("--ca-file", flags.ca_file, "CA certificates for an https:// URL");
  app.option("--timeout", flags.timeout, "Per request").capture_default();
}

std::vector<Daemon> resolve_daemons(const ClientFlags& flags) {
  std::vector<std::pair<std::string, const char*>> given;
  for (const auto& u : flags.urls) given.emplace_back(u, "--url");
  if (!flags.url_file.empty()) {
    std::string text, error;
    if (read_bounded_file(flags.url_file, kMaxUrlFileBytes, text, &error) != 0) {
      throw std::invalid_argument("--url-file: " + error);
    }
    std::size_t from = 0;
    while (from < text.size()) {
      auto nl = text.find('\n', from);
      std::string line = text.substr(from, nl - from);
      from = nl == std::string::npos ? text.size() : nl + 1;
      line = trimmed(line.substr(0, line.find('#')));
      if (!line.empty()) given.emplace_back(line, "--url-file");
    }
  }
  if (given.empty() && flags.env_defaults) {
    for (const auto& u : split_commas(env_or("LOADWATCH_URL", "http://127.0.0.1:9797"))) {
      given.emplace_back(u, "$LOADWATCH_URL");
    }
  }
  if (given.size() > kMaxDaemons) {
    throw std::invalid_argument("--url: at most " + std::to_string(kMaxDaemons) + " loadwatches");
  }
  std::chrono::milliseconds timeout;
  try {
    timeout = parse_duration(flags.timeout);
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("--timeout: ") + e.what());
  }
  if (timeout.count() <= 0) throw std::invalid_argument("--timeout: must be positive");
  std::vector<Daemon> out;
  std::set<std::string> names;
  for (const auto& [text, flag] : given) {
    Daemon d = parse_daemon(text, flag);
    if (!names.insert(d.name).second) {
      throw std::invalid_argument(std::string(flag) + ": two hosts named \"" + d.name +
                                  "\" (name them: NAME=URL)");
    }
    d.options.user = flags.user;
    d.options.password_file = flags.password_file;
    d.options.ca_file = flags.ca_file;
    d.options.timeout = timeout;
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::string> client_args(const std::vector<Daemon>& daemons, const ClientFlags& flags) {
  std::vector<std::string> args;
  for (const Daemon& d : daemons) {
    args.push_back("--url=" + (d.named ? d.name + "=" : std::string()) + d.options.url);
  }
  args.push_back("--timeout=" + flags.timeout);
  if (!flags.user.empty()) args.push_back("--user=" + flags.user);
  if (!flags.password_file.empty()) args.push_back("--password-file=" + flags.password_file);
  if (!flags.ca_file.empty()) args.push_back("--ca-file=" + flags.ca_file);
  return args;
}

}  // namespace loadwatch
