#include "sources/curl_library.h"

#include <dlfcn.h>

#include <mutex>

namespace loadwatch {

namespace {

// Debian's libcurl4 (OpenSSL flavour) soname; the package depends on it.
constexpr const char* kLibcurl = "libcurl.so.4";

template <typename Fn>
bool resolve(void* handle, const char* name, Fn& out, std::string& error) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!out) error = std::string(kLibcurl) + " has no " + name;
  return out != nullptr;
}

struct Loaded {
  CurlLibrary api{};
  std::string error;
  bool ok = false;
};

Loaded load() {
  Loaded l;
  void* handle = dlopen(kLibcurl, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    l.error = std::string("cannot load ") + kLibcurl + ": " + (why ? why : "unknown error");
    return l;
  }
  CurlLibrary& a = l.api;
  std::string& e = l.error;
  l.ok = resolve(handle, "curl_easy_init", a.easy_init, e) &&
         resolve(handle, "curl_easy_cleanup", a.easy_cleanup, e) &&
         resolve(handle, "curl_easy_reset", a.easy_reset, e) &&
         resolve(handle, "curl_easy_setopt", a.easy_setopt, e) &&
         resolve(handle, "curl_easy_getinfo", a.easy_getinfo, e) &&
         resolve(handle, "curl_easy_strerror", a.easy_strerror, e) &&
         resolve(handle, "curl_multi_init", a.multi_init, e) &&
         resolve(handle, "curl_multi_cleanup", a.multi_cleanup, e) &&
         resolve(handle, "curl_multi_add_handle", a.multi_add_handle, e) &&
         resolve(handle, "curl_multi_remove_handle", a.multi_remove_handle, e) &&
         resolve(handle, "curl_multi_perform", a.multi_perform, e) &&
         resolve(handle, "curl_multi_poll", a.multi_poll, e) &&
         resolve(handle, "curl_multi_info_read", a.multi_info_read, e) &&
         resolve(handle, "curl_slist_append", a.slist_append, e) &&
         resolve(handle, "curl_slist_free_all", a.slist_free_all, e) &&
         resolve(handle, "curl_url", a.url, e) &&
         resolve(handle, "curl_url_cleanup", a.url_cleanup, e) &&
         resolve(handle, "curl_url_set", a.url_set, e) &&
         resolve(handle, "curl_url_get", a.url_get, e) && resolve(handle, "curl_free", a.free, e);
  if (!l.ok) return l;
  // curl_global_init is not thread-safe in every libcurl build: it runs here, once, first.
  using GlobalInit = decltype(&curl_global_init);
  GlobalInit global_init = nullptr;
  if (!resolve(handle, "curl_global_init", global_init, e) ||
      global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    if (e.empty()) e = "curl_global_init failed";
    l.ok = false;
  }
  return l;  // the handle stays open for the life of the process
}

}  // namespace

const CurlLibrary* curl_library(std::string* error) {
  static const Loaded loaded = load();
  if (!loaded.ok && error) *error = loaded.error;
  return loaded.ok ? &loaded.api : nullptr;
}

}  // namespace loadwatch
