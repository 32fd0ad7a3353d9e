// libmicrohttpd 0.9.75 (Debian 12), event-driven: MHD_USE_EPOLL_INTERNAL_THREAD with a small
// thread pool (each pool thread runs its own epoll loop and accepts from the shared listen
// socket), so an open connection costs its memory pool, not a thread.
//   microhttpd_server port=0 threads=2 connections=4000 per_ip=0 timeout=10 memory=32768
//                     max_requests=1000 max_age=300 [tls_cert=PEM tls_key=PEM]
// - connections: MHD_OPTION_CONNECTION_LIMIT, split evenly over the pool threads; a thread at
//   its share stops accepting, further clients wait in the listen backlog (1,024).
// - per_ip: MHD_OPTION_PER_IP_CONNECTION_LIMIT, daemon-wide (0 = none); a connection over it
//   is accepted and closed at once.
// - timeout: MHD_OPTION_CONNECTION_TIMEOUT, seconds of *inactivity*: every byte received
//   restarts it, so a client trickling a header byte a second is never timed out. 0.9.75 has
//   no deadline for the whole head; only the memory limit (the head must fit in it, else 431)
//   and the per-address share bound what slow clients hold.
// - memory: MHD_OPTION_CONNECTION_MEMORY_LIMIT, the per-connection pool (read buffer + head).
// - max_requests / max_age: the response carries "Connection: close" once a connection has
//   served that many requests or is that many seconds old, so keep-alive cannot pin a slot.
// A slow handler (the report, a bcrypt check) would not run on a pool thread: the handler calls
// MHD_suspend_connection (MHD_ALLOW_SUSPEND_RESUME is set), hands the work to a worker pool,
// and the worker calls MHD_resume_connection when the answer is ready; the next call of the
// handler queues it. /metrics, served from memory, needs none of that.
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_args.h"
#include "metrics_body.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
  long max_requests = 1000;
  long max_age_s = 300;
};
Settings settings;

/// Per TCP connection (MHD's socket context), for the keep-alive limits.
struct ConnectionState {
  Clock::time_point opened = Clock::now();
  long requests = 0;
};

struct Responses {
  MHD_Response* metrics_keep = nullptr;
  MHD_Response* metrics_close = nullptr;
  MHD_Response* healthy_keep = nullptr;
  MHD_Response* healthy_close = nullptr;
  MHD_Response* not_found = nullptr;  // closes: cheap clients of unknown paths do not linger
  MHD_Response* not_allowed = nullptr;
  MHD_Response* bad_framing = nullptr;  // closes
};
Responses responses;

MHD_Response* persistent(const std::string& body, bool close) {
  MHD_Response* r = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()),
                                                    MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
  if (close) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  return r;
}

void notify_connection(void*, MHD_Connection*, void** socket_context,
                       MHD_ConnectionNotificationCode code) {
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    *socket_context = new ConnectionState;
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    delete static_cast<ConnectionState*>(*socket_context);
    *socket_context = nullptr;
  }
}

MHD_Result handle(void*, MHD_Connection* connection, const char* url, const char* method,
                  const char*, const char*, size_t* upload_data_size, void** request_context) {
  static int first_call_marker;
  if (*request_context == nullptr) {  // head complete; the body (if any) comes next calls
    *request_context = &first_call_marker;
    // MHD 0.9.75 serves a request with both Content-Length and Transfer-Encoding and keeps
    // the connection; RFC 9112 section 6.1 says close it. A response queued before the body
    // is read, marked "Connection: close", does.
    if (MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Content-Length") &&
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Transfer-Encoding")) {
      return MHD_queue_response(connection, MHD_HTTP_BAD_REQUEST, responses.bad_framing);
    }
    return MHD_YES;
  }
  if (*upload_data_size != 0) {  // no route here takes a body: drop it
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
      std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    return MHD_queue_response(connection, MHD_HTTP_METHOD_NOT_ALLOWED, responses.not_allowed);
  }
  auto* state = static_cast<ConnectionState*>(
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT)->socket_context);
  bool close = false;
  if (state) {
    ++state->requests;
    close = state->requests >= settings.max_requests ||
            Clock::now() - state->opened >= std::chrono::seconds(settings.max_age_s);
  }
  if (std::strcmp(url, "/metrics") == 0) {
    return MHD_queue_response(connection, MHD_HTTP_OK,
                              close ? responses.metrics_close : responses.metrics_keep);
  }
  if (std::strcmp(url, "/-/healthy") == 0) {
    return MHD_queue_response(connection, MHD_HTTP_OK,
                              close ? responses.healthy_close : responses.healthy_keep);
  }
  return MHD_queue_response(connection, MHD_HTTP_NOT_FOUND, responses.not_found);
}

std::string read_file(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  settings.max_requests = bench_arg(argc, argv, "max_requests", 1000);
  settings.max_age_s = bench_arg(argc, argv, "max_age", 300);
  static const std::string ok = "OK\n", missing = "not found\n", method = "GET only\n",
                           framing = "Content-Length with Transfer-Encoding\n";
  responses.metrics_keep = persistent(metrics_body(), false);
  responses.metrics_close = persistent(metrics_body(), true);
  responses.healthy_keep = persistent(ok, false);
  responses.healthy_close = persistent(ok, true);
  responses.not_found = persistent(missing, true);
  responses.not_allowed = persistent(method, true);
  responses.bad_framing = persistent(framing, true);

  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(bench_arg(argc, argv, "port", 0)));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Blocked before the pool threads start, so every thread inherits it and sigwait() gets it.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  const unsigned threads = static_cast<unsigned>(bench_arg(argc, argv, "threads", 2));
  // TLS is GnuTLS in libmicrohttpd: PEM in memory, the cipher choice a GnuTLS priority string
  // (MHD_OPTION_HTTPS_PRIORITIES), not OpenSSL's.
  const std::string cert_pem = read_file(bench_str(argc, argv, "tls_cert"));
  const std::string key_pem = read_file(bench_str(argc, argv, "tls_key"));
  std::vector<MHD_OptionItem> tls_options;
  unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  if (!cert_pem.empty()) {
    flags |= MHD_USE_TLS;
    tls_options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(key_pem.c_str())});
    tls_options.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(cert_pem.c_str())});
  }
  tls_options.push_back({MHD_OPTION_END, 0, nullptr});
  MHD_Daemon* daemon = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &handle, nullptr, MHD_OPTION_SOCK_ADDR, &addr,
      MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
      static_cast<unsigned>(bench_arg(argc, argv, "connections", 4000)),
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<unsigned>(bench_arg(argc, argv, "per_ip", 0)),
      MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned>(bench_arg(argc, argv, "timeout", 10)),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      static_cast<size_t>(bench_arg(argc, argv, "memory", 32768)), MHD_OPTION_LISTEN_BACKLOG_SIZE,
      1024u, MHD_OPTION_NOTIFY_CONNECTION, &notify_connection, nullptr, MHD_OPTION_ARRAY,
      tls_options.data(), MHD_OPTION_END);
  if (!daemon) {
    std::fprintf(stderr, "libmicrohttpd failed to start\n");
    return 1;
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
  std::printf("listening %u threads=%u\n", info ? info->port : 0u, threads);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  MHD_stop_daemon(daemon);
  return 0;
}
