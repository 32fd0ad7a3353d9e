#pragma once
// libcurl, loaded on first use. Only the sources collector fetches over HTTP; a loadwatch that
// watches processes and the host never maps libcurl and the ~40 libraries it pulls in (GnuTLS,
// Kerberos, LDAP, SSH, ...), about 4 MiB of RSS, as systemd does for its optional libraries.
#include <curl/curl.h>

#include <string>

namespace loadwatch {

/// The libcurl entry points loadwatch uses, resolved from libcurl.so.4.
struct CurlLibrary {
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_reset) easy_reset;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_multi_init) multi_init;
  decltype(&curl_multi_cleanup) multi_cleanup;
  decltype(&curl_multi_add_handle) multi_add_handle;
  decltype(&curl_multi_remove_handle) multi_remove_handle;
  decltype(&curl_multi_perform) multi_perform;
  decltype(&curl_multi_poll) multi_poll;
  decltype(&curl_multi_info_read) multi_info_read;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
  decltype(&curl_url) url;
  decltype(&curl_url_cleanup) url_cleanup;
  decltype(&curl_url_set) url_set;
  decltype(&curl_url_get) url_get;
  decltype(&curl_free) free;
};

/// Loads libcurl and runs curl_global_init once (thread-safe). Null when it cannot be loaded;
/// `error` then says why.
const CurlLibrary* curl_library(std::string* error = nullptr);

}  // namespace loadwatch
