// JMeter's GraphiteBackendListenerClient keeps one pooled TCP connection to the Graphite host
// and writes a batch of "path value timestamp\n" lines every second (see jmeter_model.cpp for
// the metric paths). This collector is that Graphite host: a poll() loop over plain sockets.
#include "collectors/graphite.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "util/log.h"
#include "util/thread_name.h"
#include "util/unix_time.h"

namespace loadwatch {

namespace {

/// Binds a listening TCP socket to "HOST:PORT", ":PORT" (all addresses, IPv6 dual-stack when
/// available) or "[V6]:PORT".
int bind_listener(const std::string& address, int& port_out) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    throw std::runtime_error("graphite listen address \"" + address + "\" is not HOST:PORT");
  }
  std::string host = address.substr(0, colon);
  std::string port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = host.empty() ? AF_INET6 : AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 && host.empty()) {  // no IPv6 on this host: all IPv4 addresses
    hints.ai_family = AF_INET;
    rc = getaddrinfo(nullptr, port.c_str(), &hints, &res);
  }
  if (rc != 0) {
    throw std::runtime_error("graphite listen address \"" + address + "\": " + gai_strerror(rc));
  }
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6 && host.empty()) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 256) == 0) break;
    last_error = std::strerror(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    throw std::runtime_error("cannot listen for graphite on " + address + ": " + last_error);
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  port_out = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return fd;
}

using Clock = std::chrono::steady_clock;

struct Connection {
  int fd;
  std::string address;       // the peer's address bytes (port left out)
  Clock::time_point active;  // accepted, or last line taken (junk does not count)
  std::string pending;       // bytes of an incomplete line
  bool discarding = false;   // inside an over-long line: drop bytes up to the next '\n'
};

/// The peer address without its port: the unit of the per-address cap.
std::string address_key(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss).sin_addr;
    return std::string(reinterpret_cast<const char*>(&a), sizeof a);
  }
  if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr;
    // A v4-mapped address (dual-stack listener) is the IPv4 address.
    if (IN6_IS_ADDR_V4MAPPED(&a)) return std::string(reinterpret_cast<const char*>(&a) + 12, 4);
    return std::string(reinterpret_cast<const char*>(&a), sizeof a);
  }
  return {};
}

class GraphiteCollector : public Collector {
 public:
  GraphiteCollector(std::unique_ptr<GraphiteListener> listener, std::shared_ptr<JMeterModel> model)
      : listener_(std::move(listener)), model_(std::move(model)) {}
  void collect(SampleContext& ctx, MetricSink& out) override {
    if (!listener_) return;
    model_->forget_quiet(ctx.now);
    model_->collect(out, ctx.now);
    out.gauge("loadwatch_push_connections", "Open connections of a push listener.",
              {{"protocol", "graphite"}}, listener_->connections());
    GraphiteListener::Closed c = listener_->closed();
    for (auto [reason, n] : {std::pair{"idle_timeout", c.idle_timeout},
                             {"evicted", c.evicted},
                             {"per_address_limit", c.per_address_limit},
                             {"full", c.full}}) {
      out.counter("loadwatch_push_closed_connections_total",
                  "Connections a push listener closed to keep room for senders, by reason.",
                  {{"protocol", "graphite"}, {"reason", reason}}, static_cast<double>(n));
    }
  }

 private:
  std::unique_ptr<GraphiteListener> listener_;
  std::shared_ptr<JMeterModel> model_;
};

}  // namespace

GraphiteListener::GraphiteListener(Settings settings, std::shared_ptr<JMeterModel> model)
    : settings_(std::move(settings)), model_(std::move(model)) {
  listen_fd_ = bind_listener(settings_.listen_address, port_);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    close(listen_fd_);
    throw std::runtime_error(std::string("graphite listener: eventfd: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] {
    name_this_thread("lw-graphite");
    run();
  });
}

GraphiteListener::~GraphiteListener() {
  stop();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void GraphiteListener::stop() {
  if (!thread_.joinable()) return;
  std::uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
}

void GraphiteListener::run() {
  std::vector<Connection> conns;
  std::vector<pollfd> fds;
  std::vector<char> buf(64 * 1024);
  // True when the line was taken: only such lines keep a connection's place.
  auto handle_line = [&](std::string_view line) {
    if (graphite_line_blank(line)) return false;
    GraphiteLine parsed;
    if (parse_graphite_line(line, parsed)) {
      model_->count_rejected("parse");
      return false;
    }
    model_->ingest_graphite(parsed, unix_now());
    return true;
  };
  // The connection of `conns` that has gone longest without a line taken, among those `of`
  // selects; end() when there is none.
  auto idlest = [&](auto of) {
    auto best = conns.end();
    for (auto it = conns.begin(); it != conns.end(); ++it) {
      if (of(*it) && (best == conns.end() || it->active < best->active)) best = it;
    }
    return best;
  };
  Clock::time_point now;
  // Closes the connection `of` selects that has gone longest without a line taken, if that
  // is at least evictable_after; else counts the newcomer in `refused` and returns false.
  auto make_room = [&](auto of, std::atomic<std::uint64_t>& refused) {
    auto old = idlest(of);
    if (old == conns.end() || now - old->active < settings_.evictable_after) {
      ++refused;
      return false;
    }
    ++closed_evicted_;
    close(old->fd);
    conns.erase(old);
    return true;
  };
  for (;;) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& c : conns) fds.push_back({c.fd, POLLIN, 0});
    // Wake for the next idle timeout.
    int timeout_ms = -1;
    if (!conns.empty()) {
      auto oldest = std::min_element(conns.begin(), conns.end(), [](const auto& a, const auto& b) {
                      return a.active < b.active;
                    })->active;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          oldest + settings_.idle_timeout - Clock::now());
      timeout_ms = static_cast<int>(std::clamp<std::int64_t>(left.count() + 1, 0, 60000));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("graphite listener: poll: {}", std::strerror(errno));
      break;
    }
    if (fds[0].revents) break;  // stop()
    // Walk the connections polled this round (new ones are appended after).
    size_t polled = conns.size();
    std::vector<size_t> closed;
    now = Clock::now();
    for (size_t i = 0; i < polled; ++i) {
      Connection& c = conns[i];
      // Trickling part of a line, or junk, is not activity: only lines taken move `active`.
      if (now - c.active >= settings_.idle_timeout) {
        ++closed_idle_;
        closed.push_back(i);
        continue;
      }
      if (!fds[i + 2].revents) continue;
      // Bounded: at most 16 reads per connection per wake-up, so one busy sender cannot
      // starve the others or the stop signal.
      for (int round = 0; round < 16; ++round) {
        ssize_t n = recv(c.fd, buf.data(), buf.size(), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          // Peer closed: a last line without '\n' still counts (carbon does the same).
          if (!c.discarding && !c.pending.empty()) handle_line(c.pending);
          closed.push_back(i);
          break;
        }
        if (n < 0) break;
        std::string_view data(buf.data(), static_cast<size_t>(n));
        while (!data.empty()) {
          auto nl = data.find('\n');
          auto piece = data.substr(0, nl);
          if (c.discarding) {
            if (nl != std::string_view::npos) c.discarding = false;
          } else if (c.pending.size() + piece.size() > settings_.max_line) {
            model_->count_rejected("too_long");
            c.pending.clear();
            c.discarding = nl == std::string_view::npos;
          } else if (nl == std::string_view::npos) {
            c.pending.append(piece);
          } else if (c.pending.empty()) {
            if (handle_line(piece)) c.active = now;
          } else {
            c.pending.append(piece);
            if (handle_line(c.pending)) c.active = now;
            c.pending.clear();
          }
          if (nl == std::string_view::npos) break;
          data.remove_prefix(nl + 1);
        }
        if (static_cast<size_t>(n) < buf.size()) break;
      }
    }
    for (auto it = closed.rbegin(); it != closed.rend(); ++it) {
      close(conns[*it].fd);
      conns.erase(conns.begin() + static_cast<std::ptrdiff_t>(*it));
    }
    if (fds[1].revents & POLLIN) {
      // Accept everything waiting (bounded per wake-up), within the caps (see the header).
      for (int k = 0; k < 64; ++k) {
        sockaddr_storage peer{};
        socklen_t len = sizeof peer;
        int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        std::string address = address_key(peer);
        now = Clock::now();
        size_t same = std::count_if(conns.begin(), conns.end(),
                                    [&](const auto& c) { return c.address == address; });
        // Within the address's share, then within the listener's: the newcomer replaces the
        // connection gone longest without a line taken, so a sender that reconnects is not
        // locked out by its own (or a neighbour's) dead or junk connections.
        bool room = (same < settings_.max_per_address ||
                     make_room([&](const Connection& c) { return c.address == address; },
                               closed_per_address_)) &&
                    (conns.size() < settings_.max_connections ||
                     make_room([](const Connection&) { return true; }, closed_full_));
        if (!room) {
          close(fd);
          continue;
        }
        conns.push_back({fd, std::move(address), now, {}, false});
      }
    }
    connections_.store(static_cast<int>(conns.size()));
  }
  for (auto& c : conns) close(c.fd);
  connections_.store(0);
}

GraphiteListener::Closed GraphiteListener::closed() const {
  return {closed_idle_.load(), closed_evicted_.load(), closed_per_address_.load(),
          closed_full_.load()};
}

std::unique_ptr<Collector> make_graphite_collector(const CollectorEnv& env) {
  auto model = std::make_shared<JMeterModel>("graphite");
  // Anyone who reaches the port can push: its thread counts open runs only when allowed.
  if (env.options.push_run_annotations) model->set_run_observer(env.runs);
  std::unique_ptr<GraphiteListener> listener;
  if (!env.options.graphite_listen_address.empty()) {
    listener = std::make_unique<GraphiteListener>(
        GraphiteListener::Settings{env.options.graphite_listen_address}, model);
    spdlog::info("graphite listener on {} (port {})", env.options.graphite_listen_address,
                 listener->port());
  }
  return std::make_unique<GraphiteCollector>(std::move(listener), std::move(model));
}

}  // namespace loadwatch
