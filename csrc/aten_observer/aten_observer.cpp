// visprof._aten_observer: links kernels to ops from a C++ RecordFunction observer instead of
// a Python TorchDispatchMode, so that the attributed pass costs no Python per op.
//
// Two modes, both on the calling thread only (thread-local callback):
//   record  logs every aten op call (RecordFunction scope FUNCTION) of one forward in call
//           order, with its nesting depth. Python aligns that log with the ops its dispatch
//           mode captured in an earlier forward (the template, which knows modules, shapes and
//           FLOPs) and hands back a plan: for each logged call, the template op it is, or -1.
//   replay  walks the same calls again in later forwards. Call k of an iteration is checked
//           against call k of the recording (same op name), and if the plan maps it to
//           template op j, op_enter(id of (iteration, j), its NVTX range) runs before it and
//           op_exit after it, with host timestamps around it. A call that differs from the
//           recording stops the replay for the rest of that iteration (counted as diverged),
//           so a data-dependent forward can never be attributed to the wrong op. The calls
//           nested inside a template op are not seen (the callback is off until the op
//           exits, and the replay skips them in the recording): they are the op's own work,
//           and not observing them saves 0.06-0.46 us per op on the H200 (docs/nsight.md).
//
// Replay also pushes the NVTX module ranges of the scheme (docs/nsight.md) without Python
// module hooks: for each template op, Python precomputed how many module ranges to pop and
// which to push before it (the path from the previous op's module to its own), so that the
// timed iterations show model -> module path -> category -> op in Nsight at the cost of a
// few registered pushes per module change. The ranges still open after the last op of an
// iteration, or when it diverges or raises, are popped (balanced on every way out).
//
// Compiled at run time against the torch in the process (visprof/native/aten_observer.py), because
// RecordFunction is C++ API without a stable ABI across torch versions. op_enter/op_exit come
// from visprof._C through a capsule (capture/op_scope_api.h).
#include <ATen/record_function.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture/op_scope_api.h"
#include "nvtx/nvtx_api.h"
#include "common/clock.h"

namespace py = pybind11;

namespace visprof {
namespace {

enum class Mode { kOff, kRecord, kReplay };

struct Observer {
  Mode mode = Mode::kOff;
  at::CallbackHandle handle = at::INVALID_CALLBACK_HANDLE;
  // The recording: op name and depth. Names are copied: an operator's name lives as long as
  // its registration, but other FUNCTION-scope records (torch.compile's regions) own theirs.
  std::vector<std::string> names;
  // The name pointers RecordFunction gave: an aten op's points into its schema, the same in
  // every forward, so the replay checks a call by pointer first and by text only where the
  // pointers differ (a name copied per call). The text compare of every call cost a cache
  // miss on the recording's heap strings: on the CPU host, a fifth of the replay's own time.
  std::vector<const char*> name_ptrs;
  std::vector<int32_t> depths;
  int32_t depth = 0;
  // The replay.
  OpScopeApi api{};
  std::vector<int32_t> plan;  // per recorded call: template op index, or -1
  // Per recorded call: the index of the first call after the calls nested inside it. A
  // template op's nested calls are its own work (align() never maps them), so the replay
  // switches its callback off from the op's entry to its exit: torch then skips their
  // RecordFunction, which costs more than the switch (bench/observer_costs.py: ~135-260 ns
  // per observed call against ~120 ns the switch pair on the H200 host). Only for ops with
  // more than nested_limit nested calls in the recording: a leaf op has nothing to skip, and
  // the switch (torch rebuilds its thread's callback lists, copying the global ones under a
  // lock) is not free. -1 switches for every op; a large limit never (observe every call).
  std::vector<int32_t> subtree_end;
  int32_t nested_limit = 0;
  bool timestamps = true;       // host times around each op (the attributed pass's; not --nvtx-only's)
  std::vector<int64_t> nvtx_handles;
  std::vector<uint32_t> colors;
  size_t n_ops = 0;
  int32_t last_op = -1;  // the iteration's last ranged template op (the plan may range fewer than n_ops)
  uint64_t first_id = 1;
  int64_t iteration = -1;
  size_t position = 0;
  bool diverged = false;
  std::vector<int64_t> diverged_iterations;
  int64_t observed_calls = 0;  // calls on_enter saw in the replayed iterations
  std::vector<uint64_t> starts, ends;  // per (iteration, template op)
  std::vector<int64_t> open_slots;     // per open call: 2 x its (iteration, op) slot + 1 if it switched the callback off, or -1
  // NVTX module ranges (structure): per template op j, pops[j] ranges to pop and the pushes
  // push_begin[j]..push_begin[j+1] of (handle, colour, payload) to make before it.
  bool structure = false;
  NvtxApi nvtx{};
  std::vector<int32_t> pops, push_begin;
  std::vector<int64_t> push_handles, push_payloads;
  std::vector<uint32_t> push_colors;
  int32_t open_ranges = 0;
};

void close_structure(Observer& o) {
  for (; o.open_ranges > 0; --o.open_ranges) o.nvtx.pop();
}

// Moves the open module ranges from the previous template op's module to op's.
void enter_structure(Observer& o, size_t op) {
  for (int32_t i = 0; i < o.pops[op] && o.open_ranges > 0; ++i, --o.open_ranges) o.nvtx.pop();
  for (int32_t p = o.push_begin[op]; p < o.push_begin[op + 1]; ++p, ++o.open_ranges) {
    o.nvtx.push_registered(static_cast<uint32_t>(o.push_handles[p]), o.push_colors[p], o.push_payloads[p]);
  }
}

Observer& observer() {
  static Observer* instance = new Observer();  // never destroyed: torch may call back at exit
  return *instance;
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  Observer& o = observer();
  if (o.mode == Mode::kRecord) {
    o.names.push_back(fn.name());
    // Only an operator's name outlives the call (a record that owns its name frees it, and the
    // address could come back holding another name).
    o.name_ptrs.push_back(fn.operator_name().has_value() ? fn.name() : nullptr);
    o.depths.push_back(o.depth++);
    return nullptr;
  }
  int64_t slot = -1;
  if (o.mode == Mode::kReplay && o.iteration >= 0) ++o.observed_calls;
  if (o.mode == Mode::kReplay && o.iteration >= 0 && !o.diverged) {
    const size_t k = o.position++;
    const char* name = fn.name();
    if (k >= o.plan.size() || (name != o.name_ptrs[k] && std::strcmp(o.names[k].c_str(), name) != 0)) {
      o.diverged = true;
    } else if (o.plan[k] >= 0) {
      const size_t op = static_cast<size_t>(o.plan[k]);
      slot = o.iteration * static_cast<int64_t>(o.n_ops) + static_cast<int64_t>(op);
      if (o.structure) enter_structure(o, op);
      if (o.timestamps) o.starts[slot] = monotonic_ns();
      o.api.enter(o.first_id + static_cast<uint64_t>(slot), o.nvtx_handles[op], o.colors[op], -1);
      // Not called for the op's nested calls; this RecordFunction still calls on_exit (it
      // keeps the callbacks it started with), which switches the callback back on.
      const bool switch_off = o.subtree_end[k] - static_cast<int32_t>(k) - 1 > o.nested_limit;
      if (switch_off) {
        at::disableCallback(o.handle);
        o.position = static_cast<size_t>(o.subtree_end[k]);
      }
      slot = 2 * slot + (switch_off ? 1 : 0);
    }
  }
  o.open_slots.push_back(slot);
  return nullptr;
}

void on_exit(const at::RecordFunction&, at::ObserverContext*) {
  Observer& o = observer();
  if (o.mode == Mode::kRecord) {
    --o.depth;
    return;
  }
  if (o.open_slots.empty()) return;
  const int64_t entry = o.open_slots.back();
  o.open_slots.pop_back();
  if (entry >= 0) {
    const int64_t slot = entry / 2;
    if (entry % 2) at::reenableCallback(o.handle);
    o.api.exit();
    if (o.timestamps) o.ends[slot] = monotonic_ns();
    // The iteration's last op: its module ranges end with it, not at the next iteration.
    if (o.structure && slot % static_cast<int64_t>(o.n_ops) == o.last_op) close_structure(o);
  }
}

void install(Mode mode) {
  Observer& o = observer();
  if (o.mode != Mode::kOff) throw std::runtime_error("the visprof ATen observer is already running");
  o.mode = mode;
  o.open_slots.clear();
  o.handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&on_enter, &on_exit).scopes({at::RecordScope::FUNCTION}).needsInputs(false));
}

void uninstall() {
  Observer& o = observer();
  if (o.handle != at::INVALID_CALLBACK_HANDLE) at::removeCallback(o.handle);
  o.handle = at::INVALID_CALLBACK_HANDLE;
  o.mode = Mode::kOff;
}

// Closes the running iteration: one that made fewer calls than the recording diverged too.
void close_iteration(Observer& o) {
  if (o.structure) close_structure(o);
  if (o.iteration >= 0 && (o.diverged || o.position != o.plan.size())) o.diverged_iterations.push_back(o.iteration);
  o.iteration = -1;
}

// For each recorded call, the index of the next call not nested inside it.
std::vector<int32_t> subtree_ends(const std::vector<int32_t>& depths) {
  const int32_t n = static_cast<int32_t>(depths.size());
  std::vector<int32_t> ends(depths.size(), n);
  std::vector<int32_t> open;  // calls whose end is not found yet, depths increasing
  for (int32_t k = 0; k < n; ++k) {
    while (!open.empty() && depths[open.back()] >= depths[k]) {
      ends[open.back()] = k;
      open.pop_back();
    }
    open.push_back(k);
  }
  return ends;
}

void record_start() {
  Observer& o = observer();
  o.names.clear();
  o.name_ptrs.clear();
  o.depths.clear();
  o.depth = 0;
  install(Mode::kRecord);
}

py::tuple record_stop() {
  uninstall();
  const Observer& o = observer();
  py::list names;
  for (const std::string& name : o.names) names.append(py::str(name));
  return py::make_tuple(names, o.depths);
}

void set_structure(Observer& o, const py::object& nvtx_api, std::vector<int32_t> pops, std::vector<int32_t> push_begin,
                   std::vector<int64_t> push_handles, std::vector<uint32_t> push_colors,
                   std::vector<int64_t> push_payloads) {
  o.structure = !nvtx_api.is_none();
  o.open_ranges = 0;
  if (!o.structure) return;
  py::capsule capsule = nvtx_api.cast<py::capsule>();
  if (std::strcmp(capsule.name(), kNvtxCapsuleName) != 0) throw std::invalid_argument("not visprof._C's NVTX capsule");
  if (pops.size() != o.n_ops || push_begin.size() != o.n_ops + 1) {
    throw std::invalid_argument("the module-range plan must have one entry per template op");
  }
  const size_t pushes = push_handles.size();
  if (push_colors.size() != pushes || push_payloads.size() != pushes || push_begin.front() != 0 ||
      static_cast<size_t>(push_begin.back()) != pushes) {
    throw std::invalid_argument("module-range pushes and their offsets disagree");
  }
  for (size_t j = 0; j < o.n_ops; ++j) {
    if (push_begin[j] > push_begin[j + 1]) throw std::invalid_argument("module-range offsets must not decrease");
  }
  o.nvtx = *static_cast<const NvtxApi*>(capsule.get_pointer());
  o.pops = std::move(pops);
  o.push_begin = std::move(push_begin);
  o.push_handles = std::move(push_handles);
  o.push_colors = std::move(push_colors);
  o.push_payloads = std::move(push_payloads);
}

void replay_start(py::capsule op_scope, std::vector<int32_t> plan, std::vector<int64_t> nvtx_handles,
                  std::vector<uint32_t> colors, uint64_t first_id, int64_t iterations, py::object nvtx_api,
                  std::vector<int32_t> module_pops, std::vector<int32_t> module_push_begin,
                  std::vector<int64_t> module_handles, std::vector<uint32_t> module_colors,
                  std::vector<int64_t> module_payloads, int32_t nested_limit, bool timestamps) {
  Observer& o = observer();
  if (std::strcmp(op_scope.name(), kOpScopeCapsuleName) != 0) throw std::invalid_argument("not visprof._C's op scope capsule");
  if (plan.size() != o.names.size()) throw std::invalid_argument("the plan must have one entry per recorded call");
  if (nvtx_handles.size() != colors.size()) throw std::invalid_argument("one NVTX handle and colour per op");
  for (int32_t op : plan) {
    if (op >= static_cast<int32_t>(nvtx_handles.size())) throw std::invalid_argument("plan names an op out of range");
  }
  o.api = *static_cast<const OpScopeApi*>(op_scope.get_pointer());
  o.last_op = plan.empty() ? -1 : *std::max_element(plan.begin(), plan.end());
  o.plan = std::move(plan);
  o.subtree_end = subtree_ends(o.depths);
  o.nested_limit = nested_limit;
  o.timestamps = timestamps;
  o.nvtx_handles = std::move(nvtx_handles);
  o.colors = std::move(colors);
  o.n_ops = o.nvtx_handles.size();
  set_structure(o, nvtx_api, std::move(module_pops), std::move(module_push_begin), std::move(module_handles),
                std::move(module_colors), std::move(module_payloads));
  o.first_id = first_id;
  o.iteration = -1;
  o.diverged_iterations.clear();
  o.observed_calls = 0;
  o.starts.assign(o.n_ops * static_cast<size_t>(iterations), 0);
  o.ends.assign(o.n_ops * static_cast<size_t>(iterations), 0);
  install(Mode::kReplay);
}

void begin_iteration(int64_t iteration) {
  Observer& o = observer();
  if (o.mode != Mode::kReplay) throw std::runtime_error("begin_iteration outside a replay");
  if (iteration < 0 || static_cast<size_t>(iteration + 1) * o.n_ops > o.starts.size()) {
    throw std::invalid_argument("iteration out of the range given to replay_start");
  }
  close_iteration(o);
  o.iteration = iteration;
  o.position = 0;
  o.diverged = false;
}

py::tuple replay_stop() {
  Observer& o = observer();
  close_iteration(o);
  uninstall();
  // Ops still open (the forward raised inside an op) pop what they pushed, then the module
  // ranges around them.
  for (int64_t slot : o.open_slots) {
    if (slot >= 0) o.api.exit();
  }
  o.open_slots.clear();
  if (o.structure) close_structure(o);
  o.structure = false;
  return py::make_tuple(o.starts, o.ends, o.diverged_iterations, o.observed_calls);
}

}  // namespace
}  // namespace visprof

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace visprof;
  m.doc() = "Links kernels to ops from a C++ RecordFunction observer (see aten_observer.cpp).";
  m.def("record_start", &record_start, "Logs every aten op call on this thread until record_stop().");
  m.def("record_stop", &record_stop, "Stops recording; returns (names, depths) of the calls in call order.");
  m.def("replay_start", &replay_start, py::arg("op_scope"), py::arg("plan"), py::arg("nvtx_handles"),
        py::arg("colors"), py::arg("first_id"), py::arg("iterations"), py::arg("nvtx_api") = py::none(),
        py::arg("module_pops") = std::vector<int32_t>(), py::arg("module_push_begin") = std::vector<int32_t>(),
        py::arg("module_handles") = std::vector<int64_t>(), py::arg("module_colors") = std::vector<uint32_t>(),
        py::arg("module_payloads") = std::vector<int64_t>(), py::arg("nested_limit") = 0,
        py::arg("timestamps") = true,
        "Replays the recording on this thread: plan[k] is the template op of recorded call k, or -1. "
        "With nvtx_api (visprof._C.nvtx._capsule()), also pushes module ranges: before template op j, "
        "pops module_pops[j] and pushes entries module_push_begin[j]..module_push_begin[j+1]. "
        "nested_limit: the callback is off inside a template op with more nested calls than that "
        "(-1: every op; a large value sees every call, slower; for comparison); "
        "timestamps=False leaves the host times of the ops 0.");
  m.def("begin_iteration", &begin_iteration, py::arg("iteration"));
  m.def("replay_stop", &replay_stop,
        "Stops replaying; returns (start_ns, end_ns, diverged iterations, calls the observer saw in them).");
}
