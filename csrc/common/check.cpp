#include "common/check.h"

namespace visprof {

std::string format_failure(const char* call, const char* file, int line, const std::string& why) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + why;
}

void CallbackErrors::record(const char* what) noexcept {
  // Only static strings are stored, so recording never allocates inside a callback.
  last_.store(what, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::string CallbackErrors::last() const {
  const char* what = last_.load(std::memory_order_relaxed);
  return what ? std::string(what) : std::string();
}

void CallbackErrors::reset() noexcept {
  count_.store(0, std::memory_order_relaxed);
  last_.store(nullptr, std::memory_order_relaxed);
}

CallbackErrors& callback_errors() {
  static CallbackErrors errors;
  return errors;
}

}  // namespace visprof
