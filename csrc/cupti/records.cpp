#include "cupti/records.h"

namespace visprof {

uint32_t StringTable::intern(const char* s) {
  std::string key(s ? s : "<unknown>");
  auto found = index_.find(key);
  if (found != index_.end()) return found->second;
  const auto id = static_cast<uint32_t>(strings_.size());
  strings_.push_back(key);
  index_.emplace(std::move(key), id);
  return id;
}

void StringTable::clear() {
  strings_.clear();
  index_.clear();
}

}  // namespace visprof
