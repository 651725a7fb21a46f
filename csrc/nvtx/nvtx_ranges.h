// NVTX ranges in the "visprof" domain, which Nsight Systems shows as a row and Nsight
// Compute can filter on: ncu --nvtx --nvtx-include "visprof@attention/".
//
// The scheme (docs/nsight.md): per forward, nested push/pop ranges model -> module path ->
// category -> op. Each range carries an NVTX category (Kind below) so that readers of a
// report (visprof nsys import) tell visprof's ranges from ranges users push in the same
// domain. An op is one handle that pushes two ranges at once: its category ("attention",
// the name ncu's filter matches exactly) around the op itself ("attention:core
// aten.addmm.default", payload = the op's id).
//
// Messages are registered once (nvtxDomainRegisterStringA) and pushed by handle, so a push
// costs no string handling and no lock (VISPROF_NVTX_ASCII=1 pushes their text instead, for
// tools that do not resolve registered strings). Without the CUDA backend, or with VISPROF_DISABLE=1,
// every call is a no-op that still keeps the depth count (and the test log), so
// exception-safety and scheme tests run anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace visprof {
namespace nvtx {

// NVTX categories of the visprof domain (named in the domain, so Nsight shows the names).
enum Kind : uint32_t { kUser = 0, kModel = 1, kModule = 2, kCategory = 3, kOp = 4 };

// Registers `message` as a range of `kind` and returns a handle for push_registered().
uint32_t register_message(const std::string& message, uint32_t kind = kUser);
// Registers an op: its handle pushes `category` (kind kCategory) and, inside it, `message`
// (kind kOp), both with the push's colour and payload, and pop() pops both.
uint32_t register_op(const std::string& category, const std::string& message);
void push_registered(uint32_t handle, uint32_t argb_color, int64_t payload);
void push(const std::string& message, uint32_t argb_color, int64_t payload, uint32_t kind = kUser);
// Pops what the last push on this thread pushed (one range, or an op's two).
void pop();
// push_registered without the per-thread record of what it pushed: returns how many ranges it
// pushed (1, or an op's 2), which the caller pops with pop_unstacked(). For the ATen observer,
// which keeps its own stack: the thread_local one costs a __tls_get_addr per push and per pop
// from a dlopen'ed module (~0.1 us per op on the CPU host, bench/observer_costs.py).
int push_unstacked(uint32_t handle, uint32_t argb_color, int64_t payload);
void pop_unstacked(int count);
// An instantaneous marker (visprof writes its run's settings as one, for importers).
void mark(const std::string& message, uint32_t argb_color, int64_t payload);
// Pushes made by visprof on this thread and not yet popped (an op's two ranges count once).
int depth();
bool enabled();

// A log of every range pushed and popped in the process, for tests of the scheme on
// machines without an Nsight tool. Off by default; costs one relaxed atomic load per call.
struct LogEntry {
  bool push;            // false: a pop of one range
  std::string message;  // pushed ranges only
  uint32_t kind;
  int64_t payload;
  uint32_t color;
};
void set_log(bool on);
std::vector<LogEntry> take_log();

// RAII range for C++ callers: popped on every way out of the scope, exceptions included.
class ScopedRange {
 public:
  ScopedRange(const std::string& message, uint32_t argb_color = 0xFF76B900, int64_t payload = 0) {
    push(message, argb_color, payload);
  }
  ~ScopedRange() { pop(); }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

}  // namespace nvtx
}  // namespace visprof
