#include "cli/run_client.h"

#include <memory>
#include <stdexcept>

#include "sources/curl_library.h"
#include "util/secret_file.h"
#include "version.h"

namespace loadwatch {

namespace {

constexpr std::size_t kMaxAnswerBytes = 16 << 20;

size_t on_write(char* data, size_t size, size_t n, void* user) {
  auto* body = static_cast<std::string*>(user);
  if (body->size() + size * n > kMaxAnswerBytes) return 0;  // aborts the transfer
  body->append(data, size * n);
  return size * n;
}

const CurlLibrary& curl_or_throw() {
  std::string why;
  const CurlLibrary* curl = curl_library(&why);
  if (!curl) throw std::runtime_error("cannot load libcurl: " + why);
  return *curl;
}

}  // namespace

RunClient::RunClient(RunClientOptions options) : options_(std::move(options)) {
  while (!options_.url.empty() && options_.url.back() == '/') options_.url.pop_back();
  if (options_.url.rfind("http://", 0) != 0 && options_.url.rfind("https://", 0) != 0) {
    throw std::runtime_error("--url: want http://HOST:PORT or https://HOST:PORT, got \"" +
                             options_.url + "\"");
  }
  if (!options_.password_file.empty()) {
    std::string error;
    if (!read_secret_file(options_.password_file, password_, error)) {
      throw std::runtime_error("--password-file: " + error);
    }
  }
  curl_or_throw();
}

RunAnswer RunClient::get(const std::string& path) const { return request(path, nullptr); }

RunAnswer RunClient::post(const std::string& path, const std::string& json) const {
  return request(path, &json);
}

RunAnswer RunClient::request(const std::string& path, const std::string* json) const {
  const CurlLibrary& curl = curl_or_throw();
  RunAnswer answer;
  std::unique_ptr<CURL, decltype(curl.easy_cleanup)> h(curl.easy_init(), curl.easy_cleanup);
  std::unique_ptr<CURLM, decltype(curl.multi_cleanup)> multi(curl.multi_init(), curl.multi_cleanup);
  if (!h || !multi) {
    answer.error = "libcurl could not make a handle";
    return answer;
  }
  curl_slist* headers = nullptr;
  headers = curl.slist_append(headers, "Accept: application/json");
  if (json) headers = curl.slist_append(headers, "Content-Type: application/json");
  std::unique_ptr<curl_slist, decltype(curl.slist_free_all)> header_list(headers,
                                                                         curl.slist_free_all);
  char error_buf[CURL_ERROR_SIZE] = "";
  std::string url = options_.url + path;
  long timeout_ms = static_cast<long>(options_.timeout.count());
  curl.easy_setopt(h.get(), CURLOPT_URL, url.c_str());
  curl.easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers);
  curl.easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  curl.easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, timeout_ms);
  curl.easy_setopt(h.get(), CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl.easy_setopt(h.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl.easy_setopt(h.get(), CURLOPT_FOLLOWLOCATION, 0L);
  curl.easy_setopt(h.get(), CURLOPT_USERAGENT, "loadwatch-run/" LOADWATCH_VERSION);
  curl.easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, on_write);
  curl.easy_setopt(h.get(), CURLOPT_WRITEDATA, static_cast<void*>(&answer.body));
  curl.easy_setopt(h.get(), CURLOPT_ERRORBUFFER, error_buf);
  if (json) {
    curl.easy_setopt(h.get(), CURLOPT_POSTFIELDS, json->c_str());
    curl.easy_setopt(h.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(json->size()));
  }
  if (!options_.user.empty()) {
    curl.easy_setopt(h.get(), CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl.easy_setopt(h.get(), CURLOPT_USERNAME, options_.user.c_str());
    curl.easy_setopt(h.get(), CURLOPT_PASSWORD, password_.c_str());
  }
  if (!options_.ca_file.empty())
    curl.easy_setopt(h.get(), CURLOPT_CAINFO, options_.ca_file.c_str());

  // The loaded library has no curl_easy_perform: drive the one transfer through a multi handle.
  curl.multi_add_handle(multi.get(), h.get());
  CURLcode result = CURLE_OK;
  bool done = false;
  while (!done) {
    int running = 0;
    if (curl.multi_perform(multi.get(), &running) != CURLM_OK) {
      result = CURLE_FAILED_INIT;
      break;
    }
    int left = 0;
    while (CURLMsg* msg = curl.multi_info_read(multi.get(), &left)) {
      if (msg->msg == CURLMSG_DONE) {
        result = msg->data.result;
        done = true;
      }
    }
    if (!done && running == 0) break;
    if (!done) curl.multi_poll(multi.get(), nullptr, 0, 100, nullptr);
  }
  long status = 0;
  curl.easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &status);
  curl.multi_remove_handle(multi.get(), h.get());
  if (result != CURLE_OK || status == 0) {
    answer.error =
        url + ": " + (error_buf[0] ? std::string(error_buf) : curl.easy_strerror(result));
    return answer;
  }
  answer.reached = true;
  answer.status = status;
  return answer;
}

}  // namespace loadwatch
