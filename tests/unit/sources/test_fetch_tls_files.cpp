// A source's TLS files (ca_file, cert_file, key_file) go through the bounded reader: a FIFO,
// a device or an oversized file is a credentials error at once, never a hung scrape.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "sources/http_fetch.h"
#include "util/bounded_file.h"

using namespace loadwatch;
namespace fs = std::filesystem;

TEST_CASE("a FIFO, a device or a huge file as a TLS file fails the scrape as credentials") {
  char tmpl[] = "/tmp/lw-fetch-tls-XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  REQUIRE(::mkfifo((dir / "ca.pem").c_str(), 0600) == 0);
  fs::create_symlink("/dev/zero", dir / "cert.pem");
  std::ofstream(dir / "key.pem") << std::string(kMaxPemFileBytes + 1, 'k');
  std::ofstream(dir / "empty.pem").flush();

  HttpFetcher fetcher;
  FetchOptions options;
  options.timeout = std::chrono::seconds(5);
  auto fetch = [&] {
    const auto start = std::chrono::steady_clock::now();
    FetchResult r = fetcher.get("https://127.0.0.1:1/metrics", options);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
    CHECK(r.error == FetchError::Credentials);
    return r.message;
  };
  options.tls.ca_file = (dir / "ca.pem").string();
  CHECK(fetch() ==
        "cannot load tls ca_file " + options.tls.ca_file + ": is a FIFO, not a regular file");
  options.tls.ca_file.clear();
  options.tls.cert_file = (dir / "cert.pem").string();
  options.tls.key_file = (dir / "key.pem").string();
  CHECK(fetch() == "cannot load tls cert_file " + options.tls.cert_file +
                       ": is a character device, not a regular file");
  options.tls.cert_file = (dir / "empty.pem").string();
  CHECK(fetch() == "cannot load tls cert_file " + options.tls.cert_file + ": empty file");
  std::ofstream(dir / "cert.ok") << "-----BEGIN CERTIFICATE-----\n";
  options.tls.cert_file = (dir / "cert.ok").string();
  CHECK(fetch() == "cannot load tls key_file " + options.tls.key_file + ": is larger than " +
                       std::to_string(kMaxPemFileBytes) + " bytes");
  fs::remove_all(dir);
}
