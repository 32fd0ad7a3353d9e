#pragma once
// Open HTTP connections, in all and per client address: one address, or a handful, cannot take
// the server from the others, and an address that fills its own share only crowds itself.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace loadwatch {

class ConnectionTable {
 public:
  /// A connection as the table sees it.
  class Member {
   public:
    virtual ~Member() = default;
    /// True while the connection waits for a request head (silent, trickling, idle between
    /// keep-alive requests): it does no work, so it may be closed to make room.
    std::atomic<bool> waiting{true};
    /// Closes the connection soon; called from any thread, at most once.
    virtual void evict() = 0;
  };

  enum class Admission {
    admitted,
    admitted_evicting_own,    // the address held its share: its oldest waiting one was closed
    admitted_evicting_other,  // the table was full: the biggest holder's oldest waiting one was
    refused_address,          // the address holds its share, none of it waiting
    refused_full,             // the table is full, and no connection in it is waiting
  };

  ConnectionTable(std::size_t total, std::size_t per_address)
      : total_(total), per_address_(per_address) {}

  /// Admits a new connection from `address`, or closes a waiting one to make room (see
  /// Admission). The evicted member's evict() is called after the table's lock is released.
  Admission admit(const std::string& address, std::uint64_t id,
                  const std::shared_ptr<Member>& member);
  /// Forgets a closed connection (no-op when it was evicted).
  void leave(const std::string& address, std::uint64_t id);
  std::size_t size() const;
  std::size_t total() const { return total_; }
  std::size_t per_address() const { return per_address_; }

 private:
  struct Entry {
    std::uint64_t id;
    std::weak_ptr<Member> member;
  };
  /// Removes and returns the oldest waiting member of `list` (null when none waits).
  std::shared_ptr<Member> take_waiting(std::deque<Entry>& list);

  const std::size_t total_;
  const std::size_t per_address_;
  mutable std::mutex mutex_;
  std::size_t size_ = 0;
  std::unordered_map<std::string, std::deque<Entry>> by_address_;  // oldest first
};

}  // namespace loadwatch
