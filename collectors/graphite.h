#pragma once
// Collector "graphite": a TCP listener for JMeter's Graphite Backend Listener (plaintext).

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "collector.h"
#include "push/jmeter_model.h"

namespace loadwatch {

/// Listens on a TCP address (`HOST:PORT`, `:PORT`, `[::1]:PORT`) for Graphite plaintext lines
/// and feeds them to a JMeterModel. One thread polls the listening socket and every connection;
/// lines longer than max_line are dropped (counted as too_long), connections beyond
/// max_connections are closed at once. The constructor binds (throws std::runtime_error naming
/// the address on failure); stop() or the destructor ends the thread within one poll wake-up.
class GraphiteListener {
 public:
  struct Settings {
    std::string listen_address;
    std::size_t max_line = 4096;
    std::size_t max_connections = 64;
  };
  GraphiteListener(Settings settings, std::shared_ptr<JMeterModel> model);
  ~GraphiteListener();
  GraphiteListener(const GraphiteListener&) = delete;
  GraphiteListener& operator=(const GraphiteListener&) = delete;

  /// The bound port (useful with port 0).
  int port() const { return port_; }
  /// Open client connections right now (any thread).
  int connections() const { return connections_.load(); }
  void stop();

 private:
  void run();

  Settings settings_;
  std::shared_ptr<JMeterModel> model_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::thread thread_;
};

/// Factory for the collector table: a no-op collector unless --graphite.listen-address is set.
std::unique_ptr<Collector> make_graphite_collector(const CollectorEnv& env);

}  // namespace loadwatch
