#pragma once
// Whole-transfer deadlines for civetweb connections (request bodies, responses).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace loadwatch {

/// civetweb 1.15 bounds only each wait for data (request_timeout_ms without a byte), and a
/// read or write of N bytes returns only when all N have moved: a client that sends a body or
/// reads a response one byte every few seconds would hold its worker thread for hours. This
/// watcher shuts down the socket of a transfer that outlives its deadline, so the blocked
/// mg_read/mg_write returns at once: only its reading side for a request body (the server can
/// still answer), both sides for a response. civetweb does not expose a connection's socket, so the
/// watcher finds it by its address pair in /proc/self/fd, only when a deadline passes.
///
/// Thread-safe. A transfer's socket is looked up and shut down only while its Watch lives, and
/// the Watch's destructor waits for a lookup in progress, so the descriptor cannot be closed
/// and reused in between.
class TransferDeadlines {
 public:
  using Clock = std::chrono::steady_clock;

  /// The connection as civetweb's request info names it.
  struct Peer {
    std::string address;  // remote IP as text ("127.0.0.1", "::1")
    int port = 0;         // remote port
    int local_port = 0;   // the listening port it came in on
  };

  /// Registration of one transfer; unregisters when destroyed.
  class Watch {
   public:
    Watch(TransferDeadlines& owner, std::uint64_t id) : owner_(&owner), id_(id) {}
    Watch(Watch&& other) noexcept : owner_(other.owner_), id_(other.id_) { other.owner_ = nullptr; }
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    Watch& operator=(Watch&&) = delete;
    ~Watch();
    /// Moves the deadline (e.g. as a body of unknown length keeps arriving).
    void set_deadline(Clock::time_point deadline);
    /// True once the deadline passed and the socket was shut down.
    bool expired() const;

   private:
    TransferDeadlines* owner_;
    std::uint64_t id_;
  };

  TransferDeadlines();
  ~TransferDeadlines();
  TransferDeadlines(const TransferDeadlines&) = delete;
  TransferDeadlines& operator=(const TransferDeadlines&) = delete;

  enum class Direction { receive, send };
  Watch watch(Peer peer, Clock::time_point deadline, Direction direction);
  /// Transfers cut off so far.
  std::uint64_t expired_total() const;

 private:
  struct Entry {
    Peer peer;
    Clock::time_point deadline;
    Direction direction;
    bool expired = false;
  };
  void run();

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Entry> entries_;
  std::uint64_t next_id_ = 0;
  std::uint64_t expired_total_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

/// shutdown(2)s (`how`: SHUT_RD, SHUT_RDWR) the TCP socket of this process whose local port and
/// remote address and port are `peer`'s; false when there is none.
bool shutdown_socket_of(const TransferDeadlines::Peer& peer, int how);

}  // namespace loadwatch
