#pragma once
// Collector "graphite": a TCP listener for JMeter's Graphite Backend Listener (plaintext).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "collectors/collector.h"
#include "push/jmeter_model.h"

namespace loadwatch {

/// Listens on a TCP address (`HOST:PORT`, `:PORT`, `[::1]:PORT`) for Graphite plaintext lines
/// and feeds them to a JMeterModel. One thread polls the listening socket and every connection;
/// lines longer than max_line are dropped (counted as too_long). The constructor binds (throws
/// std::runtime_error naming the address on failure); stop() or the destructor ends the thread
/// within one poll wake-up.
///
/// Connections that send nothing must not lock senders out (JMeter writes a batch every
/// second on one pooled connection):
/// - activity is a line taken: a partial, blank, malformed or over-long line is not;
/// - a connection without a line taken for idle_timeout is closed;
/// - one client address holds at most max_per_address connections; a new one beyond replaces
///   that address's connection gone longest without a line taken, if that is at least
///   evictable_after, and is closed otherwise;
/// - when all max_connections are taken, a new connection replaces the one that has gone
///   longest without a line taken, if that is at least evictable_after; otherwise the new
///   one is closed. An active sender is thus never displaced by idle or junk ones.
class GraphiteListener {
 public:
  struct Settings {
    std::string listen_address;
    std::size_t max_line = 4096;
    std::size_t max_connections = 64;
    std::size_t max_per_address = 16;
    std::chrono::milliseconds idle_timeout{60000};
    std::chrono::milliseconds evictable_after{3000};
  };

  /// Connections closed by the rules above, by reason.
  struct Closed {
    std::uint64_t idle_timeout = 0;
    std::uint64_t evicted = 0;            // replaced by a new connection (share or full)
    std::uint64_t per_address_limit = 0;  // new connection refused: its address has too many
    std::uint64_t full = 0;               // new connection refused: none could be replaced
  };
  GraphiteListener(Settings settings, std::shared_ptr<JMeterModel> model);
  ~GraphiteListener();
  GraphiteListener(const GraphiteListener&) = delete;
  GraphiteListener& operator=(const GraphiteListener&) = delete;

  /// The bound port (useful with port 0).
  int port() const { return port_; }
  /// Open client connections right now (any thread).
  int connections() const { return connections_.load(); }
  /// Connections closed by a limit since start (any thread).
  Closed closed() const;
  void stop();

 private:
  void run();

  Settings settings_;
  std::shared_ptr<JMeterModel> model_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::atomic<std::uint64_t> closed_idle_{0}, closed_evicted_{0}, closed_per_address_{0},
      closed_full_{0};
  std::thread thread_;
};

/// Factory for the collector table: a no-op collector unless --graphite.listen-address is set.
std::unique_ptr<Collector> make_graphite_collector(const CollectorEnv& env);

}  // namespace loadwatch
