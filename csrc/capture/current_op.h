// The id of the op running on this thread (0: none). op_scope sets it; the tracer's launch
// callback reads it to tie a launch's CUPTI correlation id to the op.
#pragma once

#include <cstdint>

namespace visprof {

inline uint64_t& current_op_id() {
  thread_local uint64_t id = 0;
  return id;
}

}  // namespace visprof
