#include "common/switches.h"

#include <cstdlib>
#include <cstring>

namespace visprof {

bool instrumentation_disabled() noexcept {
  static const bool disabled = [] {
    const char* value = std::getenv("VISPROF_DISABLE");
    return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
  }();
  return disabled;
}

}  // namespace visprof
