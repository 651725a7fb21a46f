#include "capture/op_scope.h"

#include <vector>

#include "alloc/alloc_books.h"
#include "capture/current_op.h"
#include "nvtx/nvtx_ranges.h"

#ifdef VISPROF_WITH_CUDA
#include "cupti/tracer.h"
#endif

namespace visprof {
namespace {

enum Pushed : uint8_t { kExternalId = 1, kNvtx = 2, kTag = 4, kCurrentOp = 8 };
thread_local std::vector<uint8_t> pushed_stack;
thread_local std::vector<uint64_t> op_stack;  // ids behind current_op_id(), for nesting

}  // namespace

void op_enter(uint64_t external_id, int64_t nvtx_handle, uint32_t argb_color, int64_t tag) {
  uint8_t pushed = 0;
#ifdef VISPROF_WITH_CUDA
  const Tracer& tracer = Tracer::instance();
  if (external_id != 0 && tracer.active()) {
    if (tracer.correlates_by_callback()) {  // a thread-local store instead of CUPTI's push
      op_stack.push_back(current_op_id());
      current_op_id() = external_id;
      pushed |= kCurrentOp;
    } else {
      Tracer::push_external_id(external_id);
      pushed |= kExternalId;
    }
  }
#endif
  if (nvtx_handle >= 0) {
    nvtx::push_registered(static_cast<uint32_t>(nvtx_handle), argb_color,
                          static_cast<int64_t>(external_id));
    pushed |= kNvtx;
  }
  if (tag >= 0) {
    AllocBooks::push_tag(static_cast<uint32_t>(tag));
    pushed |= kTag;
  }
  pushed_stack.push_back(pushed);
}

void op_exit() {
  if (pushed_stack.empty()) return;
  const uint8_t pushed = pushed_stack.back();
  pushed_stack.pop_back();
  if (pushed & kTag) AllocBooks::pop_tag();
  if (pushed & kNvtx) nvtx::pop();
#ifdef VISPROF_WITH_CUDA
  if (pushed & kExternalId) Tracer::pop_external_id();
#endif
  if ((pushed & kCurrentOp) && !op_stack.empty()) {
    current_op_id() = op_stack.back();
    op_stack.pop_back();
  }
}

int op_depth() { return static_cast<int>(pushed_stack.size()); }

}  // namespace visprof
