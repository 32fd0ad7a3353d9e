#include "web/connection_table.h"

namespace loadwatch {

std::shared_ptr<ConnectionTable::Member> ConnectionTable::take_waiting(std::deque<Entry>& list) {
  for (auto it = list.begin(); it != list.end(); ++it) {
    std::shared_ptr<Member> m = it->member.lock();
    if (m && m->waiting.load()) {
      list.erase(it);
      --size_;
      return m;
    }
  }
  return nullptr;
}

ConnectionTable::Admission ConnectionTable::admit(const std::string& address, std::uint64_t id,
                                                  const std::shared_ptr<Member>& member) {
  std::shared_ptr<Member> victim;
  Admission result = Admission::admitted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& mine = by_address_[address];
    if (mine.size() >= per_address_) {
      victim = take_waiting(mine);
      result = victim ? Admission::admitted_evicting_own : Admission::refused_address;
    } else if (size_ >= total_) {
      // The biggest holder gives way first: the one most likely flooding.
      std::deque<Entry>* biggest = nullptr;
      for (auto& [who, list] : by_address_) {
        if (!biggest || list.size() > biggest->size()) biggest = &list;
      }
      if (biggest) victim = take_waiting(*biggest);
      result = victim ? Admission::admitted_evicting_other : Admission::refused_full;
    }
    if (result == Admission::refused_address || result == Admission::refused_full) {
      if (mine.empty()) by_address_.erase(address);
    } else {
      mine.push_back({id, member});
      ++size_;
    }
  }
  if (victim) victim->evict();
  return result;
}

void ConnectionTable::leave(const std::string& address, std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_address_.find(address);
  if (it == by_address_.end()) return;
  for (auto e = it->second.begin(); e != it->second.end(); ++e) {
    if (e->id == id) {
      it->second.erase(e);
      --size_;
      break;
    }
  }
  if (it->second.empty()) by_address_.erase(it);
}

std::size_t ConnectionTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return size_;
}

}  // namespace loadwatch
