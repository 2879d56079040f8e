// A thread-safe cache of immutable values by string key, bounded by the bytes its values hold:
// the least recently used values leave first once the bound is passed. Values are shared, so one
// evicted while a reader holds it lives until that reader lets go.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace skade {

template <typename V>
class ByteBoundedCache {
 public:
  using Ptr = std::shared_ptr<const V>;

  explicit ByteBoundedCache(int64_t limit_bytes) : limit_(limit_bytes) {}

  // The value under `key` (now the most recently used), or null.
  Ptr Find(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second.position);
    return it->second.value;
  }

  // Keeps `value` under `key` unless a value is there already or it alone passes the bound.
  void Put(const std::string& key, Ptr value, int64_t bytes) {
    std::lock_guard lock(mu_);
    if (entries_.count(key) || bytes > limit_) return;
    order_.push_front(key);
    entries_[key] = Entry{std::move(value), bytes, order_.begin()};
    held_ += bytes;
    while (held_ > limit_ && !order_.empty()) {
      auto victim = entries_.find(order_.back());
      held_ -= victim->second.bytes;
      entries_.erase(victim);
      order_.pop_back();
    }
  }

 private:
  struct Entry {
    Ptr value;
    int64_t bytes = 0;
    std::list<std::string>::iterator position;
  };
  std::mutex mu_;
  std::list<std::string> order_;  // most recent first; guarded by mu_
  std::unordered_map<std::string, Entry> entries_;
  int64_t held_ = 0;
  const int64_t limit_;
};

}  // namespace skade
