// The streams a device has handed out, weakly held, so synchronize() can
// wait for every live one. Shared by the backends.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bronze/error.hpp"

namespace bronze::runtime {

template <class S>
class StreamSet {
 public:
  void add(const std::shared_ptr<S>& s) {
    std::lock_guard<std::mutex> g(mu_);
    streams_.push_back(s);
  }

  // True when every live stream has finished its work.
  bool query_all() {
    for (auto& s : live())
      if (!s->query()) return false;
    return true;
  }

  // Waits for every live stream, their failures left for their synchronize().
  void wait_all() {
    for (auto& s : live()) s->wait();
  }

  // Waits for every live stream; each is drained even when another reports
  // a failure, and the failures are raised together.
  void synchronize_all() {
    std::string errors;
    for (auto& s : live()) {
      try {
        s->synchronize();
      } catch (const DeviceError& e) {
        errors += errors.empty() ? e.what() : std::string("; ") + e.what();
      }
    }
    if (!errors.empty()) throw DeviceError(errors);
  }

 private:
  // The streams still alive (the others are forgotten), held while used.
  std::vector<std::shared_ptr<S>> live() {
    std::vector<std::shared_ptr<S>> out;
    std::lock_guard<std::mutex> g(mu_);
    for (auto it = streams_.begin(); it != streams_.end();) {
      if (auto s = it->lock()) {
        out.push_back(std::move(s));
        ++it;
      } else {
        it = streams_.erase(it);
      }
    }
    return out;
  }

  std::mutex mu_;
  std::vector<std::weak_ptr<S>> streams_;
};

}  // namespace bronze::runtime
