// civetweb 1.15 configured as src/web/http_server.cpp configures it: one worker thread per
// connection served at once (max_connections, 1,200 by default, at most a quarter of the soft
// RLIMIT_NOFILE), a 5 s deadline for the whole head, 10 s between keep-alive requests, 16 KiB
// heads, listen backlog 1,024, TCP_NODELAY, responses from begin_request, and the workers'
// stack pages given back when a connection closes. Only the route table is missing.
//   civetweb_server port=0 connections=1200
#include <civetweb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "bench_args.h"
#include "metrics_body.h"

namespace {

/// src/web/http_server.cpp's trim_stack (private there), so that this server's RSS is
/// civetweb's as loadwatch runs it: an idle worker keeps a few stack pages, not its deepest.
void trim_stack() {
  static const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  if (gettid() == getpid()) return;
  thread_local std::uintptr_t low = 0, high = 0;
  if (low == 0) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void* addr = nullptr;
    size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    low = (reinterpret_cast<std::uintptr_t>(addr) + page - 1) & ~(page - 1);
    high = reinterpret_cast<std::uintptr_t>(addr) + size;
  }
  auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  if (frame <= low || frame >= high) return;
  std::uintptr_t top = (frame - page) & ~(page - 1);
  if (top > low + page) madvise(reinterpret_cast<void*>(low), top - low, MADV_DONTNEED);
}

void respond(mg_connection* conn, int status, const std::string& body) {
  mg_response_header_start(conn, status);
  mg_response_header_add(conn, "Content-Type", "text/plain; version=0.0.4", -1);
  mg_response_header_add(conn, "Content-Length", std::to_string(body.size()).c_str(), -1);
  mg_response_header_send(conn);
  mg_write(conn, body.data(), body.size());
}

int dispatch(mg_connection* conn) {
  const mg_request_info* ri = mg_get_request_info(conn);
  std::string uri = ri->local_uri ? ri->local_uri : "";
  static const std::string ok = "OK\n", missing = "not found\n";
  if (uri == "/metrics") {
    respond(conn, 200, metrics_body());
    return 200;
  }
  if (uri == "/-/healthy") {
    respond(conn, 200, ok);
    return 200;
  }
  respond(conn, 404, missing);
  return 404;
}

}  // namespace

int main(int argc, char** argv) {
  long connections = bench_arg(argc, argv, "connections", 1200);
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    connections = std::min<long>(connections, static_cast<long>(rl.rlim_cur / 4));
  }
  connections = std::max(connections, 4L);
  const std::string port = "127.0.0.1:" + std::to_string(bench_arg(argc, argv, "port", 0));
  const std::string threads = std::to_string(connections);
  metrics_body();
  const char* options[] = {"listening_ports",
                           port.c_str(),
                           "num_threads",
                           threads.c_str(),
                           "request_timeout_ms",
                           "5000",
                           "keep_alive_timeout_ms",
                           "10000",
                           "enable_keep_alive",
                           "yes",
                           "max_request_size",
                           "16384",
                           "listen_backlog",
                           "1024",
                           "tcp_nodelay",
                           "1",
                           "enable_directory_listing",
                           "no",
                           nullptr};
  // Blocked before any thread starts, so every thread inherits it and sigwait() gets it.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  mg_callbacks callbacks{};
  callbacks.begin_request = dispatch;
  callbacks.connection_close = [](const mg_connection*) { trim_stack(); };
  callbacks.log_message = [](const mg_connection*, const char*) { return 1; };
  mg_init_library(0);
  mg_context* ctx = mg_start(&callbacks, nullptr, options);
  if (!ctx) {
    std::fprintf(stderr, "civetweb failed to start on %s\n", port.c_str());
    return 1;
  }
  mg_server_port ports[1]{};
  if (mg_get_server_ports(ctx, 1, ports) < 1) return 1;
  std::printf("listening %d workers=%ld\n", ports[0].port, connections);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  mg_stop(ctx);
  return 0;
}
