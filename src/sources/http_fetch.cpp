#include "sources/http_fetch.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <tuple>

#include "sources/curl_library.h"
#include "util/bounded_file.h"
#include "version.h"

namespace loadwatch {

const char* fetch_error_reason(FetchError e) {
  switch (e) {
    case FetchError::None:
      return "";
    case FetchError::Timeout:
      return "timeout";
    case FetchError::Connect:
      return "connect";
    case FetchError::HttpStatus:
      return "http_status";
    case FetchError::Parse:
      return "parse";
    case FetchError::TooLarge:
      return "too_large";
    case FetchError::Credentials:
      return "credentials";
    case FetchError::Stopped:
      return "stopped";
  }
  return "";
}

namespace {

// What the libcurl callbacks of one transfer see.
struct Transfer {
  const std::atomic<bool>* stop = nullptr;
  std::string body;
  std::uint64_t limit = 0;
  bool too_large = false;
  bool sized = false;  // the body was reserved from Content-Length (or could not be)
  const CurlLibrary* lib = nullptr;
  CURL* handle = nullptr;
  char error[CURL_ERROR_SIZE] = {};
};

// Called with decoded bytes (curl inflates gzip before this), so the limit bounds memory
// even for a small compressed body that inflates to gigabytes. Returning a short count
// aborts the transfer with CURLE_WRITE_ERROR.
size_t on_write(char* data, size_t size, size_t count, void* user) {
  auto* im = static_cast<Transfer*>(user);
  size_t len = size * count;
  if (im->body.size() + len > im->limit) {
    im->too_large = true;
    return 0;
  }
  if (!im->sized) {
    // One allocation of the announced size instead of doubling: a 16 MiB body would
    // otherwise hold up to 48 MiB while its buffer grows (old and new copies, 2x slack).
    im->sized = true;
    curl_off_t announced = -1;
    if (im->lib && im->handle &&
        im->lib->easy_getinfo(im->handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced) ==
            CURLE_OK &&
        announced > 0 && static_cast<std::uint64_t>(announced) <= im->limit) {
      im->body.reserve(static_cast<std::size_t>(announced));
    }
  }
  im->body.append(data, len);
  return len;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* im = static_cast<Transfer*>(user);
  return im->stop && im->stop->load(std::memory_order_relaxed) ? 1 : 0;
}

FetchError classify(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return FetchError::Timeout;
    case CURLE_FILESIZE_EXCEEDED:
      return FetchError::TooLarge;
    // A body that does not inflate, or bytes that are not HTTP: the answer is unreadable.
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_WEIRD_SERVER_REPLY:
      return FetchError::Parse;
    case CURLE_ABORTED_BY_CALLBACK:
      return FetchError::Stopped;
    // Our own client certificate, key or CA file is missing or bad: fix loadwatch's side.
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return FetchError::Credentials;
    default:
      return FetchError::Connect;
  }
}

// server_name: libcurl has no SNI-only option. Its documented way to speak to one name and
// connect to another is CURLOPT_CONNECT_TO: the request goes to https://SERVER_NAME:PORT/...
// (so SNI and the certificate check use SERVER_NAME), the TCP connection to the URL's host,
// and the Host header stays the URL's, as with Go's tls.Config.ServerName in Prometheus.
struct ServerNameRoute {
  std::string url;          // the URL with server_name as its host
  std::string connect_to;   // "SERVER_NAME:PORT:HOST:PORT"
  std::string host_header;  // "Host: HOST[:PORT]" of the original URL
};

bool route_to_server_name(const CurlLibrary& curl, const std::string& url,
                          const std::string& server_name, ServerNameRoute& out) {
  CURLU* u = curl.url();
  if (!u) return false;
  auto get = [&](CURLUPart part, unsigned flags, std::string& value) {
    char* text = nullptr;
    if (curl.url_get(u, part, &text, flags) != CURLUE_OK) return false;
    value = text;
    curl.free(text);
    return true;
  };
  std::string host, port, url_port, rewritten;
  bool ok = curl.url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
            get(CURLUPART_HOST, 0, host) && get(CURLUPART_PORT, CURLU_DEFAULT_PORT, port);
  bool explicit_port = ok && get(CURLUPART_PORT, 0, url_port);
  ok = ok && curl.url_set(u, CURLUPART_HOST, server_name.c_str(), 0) == CURLUE_OK &&
       get(CURLUPART_URL, 0, rewritten);
  curl.url_cleanup(u);
  if (!ok) return false;
  out.url = rewritten;
  out.connect_to = server_name + ":" + port + ":" + host + ":" + port;
  out.host_header = "Host: " + host + (explicit_port ? ":" + url_port : "");
  return true;
}

}  // namespace

struct HttpFetcher::Impl : Transfer {
  const CurlLibrary* curl = nullptr;
  std::string load_error;
  CURL* easy = nullptr;
  CURLM* multi = nullptr;
};

HttpFetcher::HttpFetcher(const std::atomic<bool>* stop) : impl_(new Impl) {
  impl_->stop = stop;
  impl_->curl = curl_library(&impl_->load_error);
  if (!impl_->curl) return;
  impl_->easy = impl_->curl->easy_init();
  impl_->multi = impl_->curl->multi_init();
}

HttpFetcher::~HttpFetcher() {
  if (impl_->easy) impl_->curl->easy_cleanup(impl_->easy);
  if (impl_->multi) impl_->curl->multi_cleanup(impl_->multi);
  delete impl_;
}

FetchResult HttpFetcher::get(const std::string& url, const FetchOptions& options) {
  return perform(url, options, nullptr);
}

FetchResult HttpFetcher::post(const std::string& url, const std::string& body,
                              const FetchOptions& options) {
  return perform(url, options, &body);
}

FetchResult HttpFetcher::perform(const std::string& url, const FetchOptions& options,
                                 const std::string* post_body) {
  FetchResult result;
  Impl& im = *impl_;
  auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  if (!im.easy || !im.multi) {
    result.error = FetchError::Connect;
    result.message = im.curl ? "libcurl initialisation failed" : im.load_error;
    return result;
  }
  const CurlLibrary& curl = *im.curl;
  // The CA, certificate and key are read here, through the bounded reader (regular files only,
  // capped), and handed to libcurl as blobs: a FIFO or a link to /dev/zero swapped in for one
  // can neither hang the scrape past its timeout nor be read forever. Read at each request,
  // so a rotated file counts from the next one.
  std::string ca_pem, cert_pem, key_pem;
  for (auto [path, what, pem] : {std::tuple{&options.tls.ca_file, "ca_file", &ca_pem},
                                 std::tuple{&options.tls.cert_file, "cert_file", &cert_pem},
                                 std::tuple{&options.tls.key_file, "key_file", &key_pem}}) {
    if (path->empty()) continue;
    BoundedFile file(*path);
    int err = file.read(kMaxPemFileBytes, *pem);
    if (err != 0 || pem->empty()) {
      result.error = FetchError::Credentials;
      result.message = std::string("cannot load tls ") + what + " " + *path + ": " +
                       (err != 0 ? file.describe(err, kMaxPemFileBytes) : "empty file");
      return result;
    }
  }
  im.body.clear();
  im.too_large = false;
  im.sized = false;
  im.lib = im.curl;
  im.handle = im.easy;
  im.limit = options.max_bytes;
  im.error[0] = '\0';

  CURL* h = im.easy;
  // Every option is set anew for each request: nothing (a CA, a password) carries over from
  // the previous one. Kept: the open connection, TLS session and DNS caches.
  curl.easy_reset(h);
  curl_slist* headers = nullptr;
  curl_slist* connect_to = nullptr;
  if (!options.accept.empty()) {
    headers = curl.slist_append(headers, ("Accept: " + options.accept).c_str());
  }
  if (post_body && !options.content_type.empty()) {
    headers = curl.slist_append(headers, ("Content-Type: " + options.content_type).c_str());
  }
  std::string target = url;
  if (!options.tls.server_name.empty() && url.rfind("https://", 0) == 0) {
    ServerNameRoute route;
    if (!route_to_server_name(curl, url, options.tls.server_name, route)) {
      curl.slist_free_all(headers);
      result.error = FetchError::Connect;
      result.message = "cannot use server_name " + options.tls.server_name + " with this URL";
      return result;
    }
    target = route.url;
    connect_to = curl.slist_append(connect_to, route.connect_to.c_str());
    headers = curl.slist_append(headers, route.host_header.c_str());
    curl.easy_setopt(h, CURLOPT_CONNECT_TO, connect_to);
  }
  if (!options.bearer_token.empty()) {
    headers = curl.slist_append(headers, ("Authorization: Bearer " + options.bearer_token).c_str());
  }
  if (!options.username.empty()) {
    curl.easy_setopt(h, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl.easy_setopt(h, CURLOPT_USERNAME, options.username.c_str());
    curl.easy_setopt(h, CURLOPT_PASSWORD, options.password.c_str());
  }
  // CURL_BLOB_COPY: libcurl keeps its own copy for the transfer.
  auto blob = [](std::string& pem) { return curl_blob{pem.data(), pem.size(), CURL_BLOB_COPY}; };
  if (!ca_pem.empty()) {
    curl_blob b = blob(ca_pem);
    curl.easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
    // No CA store cache (libcurl 7.87+ keeps one for 24 h): a rotated CA file counts from
    // the next connection, as in Prometheus.
    curl.easy_setopt(h, CURLOPT_CA_CACHE_TIMEOUT, 0L);
  }
  if (!cert_pem.empty()) {
    curl_blob c = blob(cert_pem);
    curl_blob k = blob(key_pem);
    curl.easy_setopt(h, CURLOPT_SSLCERT_BLOB, &c);
    curl.easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    curl.easy_setopt(h, CURLOPT_SSLKEY_BLOB, &k);
    curl.easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (options.tls.insecure_skip_verify) {
    curl.easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl.easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  long timeout_ms = static_cast<long>(std::max<std::int64_t>(1, options.timeout.count()));
  curl.easy_setopt(h, CURLOPT_URL, target.c_str());
  if (post_body) {
    curl.easy_setopt(h, CURLOPT_POSTFIELDS, post_body->c_str());
    curl.easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post_body->size()));
  } else {
    curl.easy_setopt(h, CURLOPT_HTTPGET, 1L);
  }
  curl.easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl.easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl.easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip");
  curl.easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options.max_bytes));
  curl.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  std::string agent =
      options.user_agent.empty() ? std::string("loadwatch/" LOADWATCH_VERSION) : options.user_agent;
  curl.easy_setopt(h, CURLOPT_USERAGENT, agent.c_str());
  curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
  curl.easy_setopt(h, CURLOPT_WRITEDATA, static_cast<Transfer*>(&im));
  curl.easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl.easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl.easy_setopt(h, CURLOPT_XFERINFODATA, static_cast<Transfer*>(&im));
  curl.easy_setopt(h, CURLOPT_ERRORBUFFER, im.error);

  // A multi handle with a 50 ms poll instead of curl_easy_perform: the stop flag is seen
  // within 50 ms even while a peer accepts and never answers (the progress callback alone
  // may run only once a second when nothing moves).
  CURLcode code = CURLE_OK;
  bool stopped = false;
  curl.multi_add_handle(im.multi, h);
  for (;;) {
    int running = 0;
    CURLMcode mc = curl.multi_perform(im.multi, &running);
    if (mc != CURLM_OK) {
      code = CURLE_FAILED_INIT;
      break;
    }
    if (running == 0) {
      int left = 0;
      code = CURLE_GOT_NOTHING;
      while (CURLMsg* msg = curl.multi_info_read(im.multi, &left)) {
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == h) code = msg->data.result;
      }
      break;
    }
    if (im.stop && im.stop->load(std::memory_order_relaxed)) {
      stopped = true;
      break;
    }
    curl.multi_poll(im.multi, nullptr, 0, 50, nullptr);
  }
  curl.multi_remove_handle(im.multi, h);
  if (!stopped && code == CURLE_OK) curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &result.status);
  curl.easy_reset(h);  // drops the password and the lists below from the handle
  curl.slist_free_all(headers);
  curl.slist_free_all(connect_to);

  result.seconds = elapsed();
  // Hand the body over (or free it): a failed 16 MiB attempt must not stay resident.
  std::string body;
  body.swap(im.body);
  if (stopped) {
    result.error = FetchError::Stopped;
    result.message = "stopped";
    return result;
  }
  if (im.too_large) {
    result.error = FetchError::TooLarge;
    result.message = "response larger than " + std::to_string(options.max_bytes) + " bytes";
    return result;
  }
  if (code != CURLE_OK) {
    result.error = classify(code);
    result.message = im.error[0] ? std::string(im.error) : curl.easy_strerror(code);
    if (result.error == FetchError::TooLarge) {
      result.message = "response larger than " + std::to_string(options.max_bytes) + " bytes";
    }
    return result;
  }
  if (result.status < 200 || result.status > 299) {
    result.error = FetchError::HttpStatus;
    result.message = "HTTP status " + std::to_string(result.status);
    if (options.keep_error_body) result.body = std::move(body);
    return result;
  }
  result.body = std::move(body);
  return result;
}

}  // namespace loadwatch
