// visprof._aten_observer: links kernels to ops from a C++ RecordFunction observer instead of
// a Python TorchDispatchMode, so that the attributed pass costs no Python per op.
//
// Two modes, both on the calling thread only (thread-local callback):
//   record  logs every aten op call (RecordFunction scope FUNCTION) of one forward in call
//           order, with its nesting depth. Python aligns that log with the ops its dispatch
//           mode captured in an earlier forward (the template, which knows modules, shapes and
//           FLOPs) and hands back a plan: for each logged call, the template op it is, or -1.
//   replay  walks the same calls again in later forwards. Each call of an iteration is checked
//           against the recording's call in the same place (same op name), and if the plan maps it to
//           template op j, op_enter(id of (iteration, j), its NVTX range) runs before it and
//           op_exit after it, with host timestamps around it (--nvtx-only, without CUPTI and
//           host times, pushes the op's NVTX range directly instead). A call that differs from the
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
#include <ATen/core/function_schema.h>
#include <ATen/record_function.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "capture/op_scope_api.h"
#include "nvtx/nvtx_api.h"
#include "common/clock.h"

namespace py = pybind11;

namespace visprof {
namespace {

// Which op a RecordFunction runs is held as a reference to the op's schema (its private fn_).
// Comparing that address costs nothing, where fn.name() reads the name out of the schema: a
// cache miss per call while a launch-bound forward runs (perf on the CPU host: ~0.1 us of the
// callback's ~0.15 us). fn_ is reached by the explicit-instantiation rule (access is not
// checked in an explicit instantiation); runtime_module.py compiles without
// VISPROF_RECORD_FUNCTION_FN if this torch's fn_ differs, and record mode checks the address
// against fn.name() on every call before the replay trusts it (schemas_trusted).
#ifdef VISPROF_RECORD_FUNCTION_FN
struct RecordFunctionFn {
  using type = std::variant<std::string, at::RecordFunction::schema_ref_t> at::RecordFunction::*;
  friend type fn_member(RecordFunctionFn);
};
template <typename Tag, typename Tag::type Member>
struct ExposeMember {
  friend typename Tag::type fn_member(Tag) { return Member; }
};
template struct ExposeMember<RecordFunctionFn, &at::RecordFunction::fn_>;

const c10::FunctionSchema* schema_of(const at::RecordFunction& fn) {
  const auto* ref = std::get_if<at::RecordFunction::schema_ref_t>(&(fn.*fn_member(RecordFunctionFn{})));
  return ref != nullptr ? &ref->get() : nullptr;
}
#else
const c10::FunctionSchema* schema_of(const at::RecordFunction&) { return nullptr; }
#endif

enum class Mode : uint8_t { kOff, kRecord, kReplay };

// One call on_enter sees in a replayed iteration, in call order: the recorded calls minus
// those nested inside an op that switches the callback off (replay_steps()). Everything the
// callback reads about a call sits in these 40 bytes, and the steps are read in order: on
// the H200 host a replayed op is launch-bound, and between two callbacks torch and the CUDA
// driver evict the observer's data, so each separate array read per call was a cache miss
// (perf on the CPU host: the name check alone a fifth of the callback's time).
struct ReplayStep {
  // The name pointer RecordFunction gave when recording: an aten op's points into its
  // schema, the same in every forward, so a call is checked by pointer first and by text
  // only where the pointers differ. nullptr where the record owned its name (compare text).
  const char* name_ptr = nullptr;
  const c10::FunctionSchema* schema = nullptr;  // schema_of() when recorded (nullptr: none, or not trusted)
  int32_t call = 0;         // index in the recording
  int32_t op = -1;          // template op it is ranged as, or -1
  uint32_t nvtx_handle = 0;
  uint32_t color = 0;
  bool has_range = false;   // nvtx_handle is a registered range to push
  // The callback is off from the op's entry to its exit, so torch skips the RecordFunction
  // of its nested calls (they are the op's own work, align() never maps them), which costs
  // more than the switch (bench/observer_costs.py: ~135-260 ns per observed call against
  // ~120 ns the switch pair on the H200 host). Only for ops with more than nested_limit
  // nested calls: a leaf op has nothing to skip, and the switch (torch rebuilds its thread's
  // callback lists, copying the global ones under a lock) is not free.
  bool switch_off = false;
  // Allocation tag the op scope pushes around the op (the memory pass's category), or -1:
  // the memory pass replays too, since a Python dispatch mode changes what some models run.
  int32_t tag = -1;
};

// Per open call of a replayed iteration (open_slots): its (iteration, op) slot, whether it
// switched the callback off, and how many NVTX ranges it pushed (an op pushes two).
constexpr int64_t kNotRanged = -1;
int64_t encode_open(int64_t slot, bool switched, int widths) {
  return slot * 8 + (switched ? 4 : 0) + widths;
}

struct alignas(64) Observer {
  // What every callback reads first, in one cache line.
  Mode mode = Mode::kOff;
  bool diverged = false;
  bool structure = false;   // push the module ranges (the NVTX scheme's path)
  bool timestamps = true;   // host times around each op (the attributed pass's; not --nvtx-only's)
  bool link_ids = true;     // push each op's id into visprof._C's tracer (the attributed pass)
  int32_t last_op = -1;     // the iteration's last ranged template op (the plan may range fewer than n_ops)
  int64_t iteration = -1;
  size_t position = 0;      // the next step
  const ReplayStep* steps = nullptr;
  size_t n_steps = 0;
  int64_t n_ops = 0;
  int64_t observed_calls = 0;  // calls on_enter saw in the replayed iterations
  uint64_t first_id = 1;
  // What a ranged op reads, in the next lines.
  at::CallbackHandle handle = at::INVALID_CALLBACK_HANDLE;
  NvtxApi nvtx{};
  std::vector<int64_t> open_slots;  // per open call: encode_open(), or kNotRanged
  OpScopeApi api{};
  // NVTX module ranges (structure): per template op j, pops[j] ranges to pop and the pushes
  // push_begin[j]..push_begin[j+1] of (handle, colour, payload) to make before it.
  std::vector<int32_t> pops, push_begin;
  std::vector<int64_t> push_handles, push_payloads;
  std::vector<uint32_t> push_colors;
  std::vector<uint8_t> module_widths;  // per open module range: the NVTX ranges it pushed
  // The recording: op name and depth. Names are copied: an operator's name lives as long as
  // its registration, but other FUNCTION-scope records (torch.compile's regions) own theirs.
  std::vector<std::string> names;
  std::vector<const char*> name_ptrs;  // see ReplayStep::name_ptr
  std::vector<const c10::FunctionSchema*> schemas;  // schema_of() each call
  bool schemas_trusted = true;  // schema_of() named the same op as fn.name() on every recorded call
  std::vector<int32_t> depths;
  int32_t depth = 0;
  // The replay.
  std::vector<ReplayStep> replay_steps;
  std::vector<int64_t> diverged_iterations;
  std::vector<uint64_t> starts, ends;  // per (iteration, template op)
};

// Created when the module loads and never destroyed (torch may call back at exit); a plain
// pointer, so the callbacks pay no guard check of a function-local static.
Observer* const the_observer = new Observer();

void close_structure(Observer& o) {
  for (; !o.module_widths.empty(); o.module_widths.pop_back()) o.nvtx.pop_unstacked(o.module_widths.back());
}

// Moves the open module ranges from the previous template op's module to op's.
void enter_structure(Observer& o, size_t op) {
  for (int32_t i = 0; i < o.pops[op] && !o.module_widths.empty(); ++i, o.module_widths.pop_back()) {
    o.nvtx.pop_unstacked(o.module_widths.back());
  }
  for (int32_t p = o.push_begin[op]; p < o.push_begin[op + 1]; ++p) {
    o.module_widths.push_back(static_cast<uint8_t>(
        o.nvtx.push_unstacked(static_cast<uint32_t>(o.push_handles[p]), o.push_colors[p], o.push_payloads[p])));
  }
}

// Ranges op (slot's id as payload): through visprof._C's op scope where the tracer needs the
// op's id, else a direct NVTX push (--nvtx-only). Returns the NVTX ranges pushed directly.
int enter_op(Observer& o, const ReplayStep& step, int64_t slot) {
  const uint64_t id = o.first_id + static_cast<uint64_t>(slot);
  if (o.link_ids) {
    o.api.enter(id, step.has_range ? static_cast<int64_t>(step.nvtx_handle) : -1, step.color, step.tag);
    return 0;
  }
  return step.has_range ? o.nvtx.push_unstacked(step.nvtx_handle, step.color, static_cast<int64_t>(id)) : 0;
}

void exit_op(Observer& o, int widths) {
  if (o.link_ids) o.api.exit();
  else if (widths > 0) o.nvtx.pop_unstacked(widths);
}

// Whether fn runs the op the recording had at step: the same schema, else the same name.
bool same_op(const Observer& o, const ReplayStep& step, const at::RecordFunction& fn) {
  if (step.schema != nullptr && schema_of(fn) == step.schema) return true;
  const char* name = fn.name();
  return name == step.name_ptr || std::strcmp(o.names[step.call].c_str(), name) == 0;
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  Observer& o = *the_observer;
  if (o.mode == Mode::kRecord) {
    o.names.push_back(fn.name());
    // Only an operator's name outlives the call (a record that owns its name frees it, and the
    // address could come back holding another name).
    o.name_ptrs.push_back(fn.operator_name().has_value() ? fn.name() : nullptr);
    const c10::FunctionSchema* schema = schema_of(fn);
    if (schema != nullptr && schema->name().c_str() != fn.name()) o.schemas_trusted = false;
    o.schemas.push_back(schema);
    o.depths.push_back(o.depth++);
    return nullptr;
  }
  int64_t open = kNotRanged;
  if (o.mode == Mode::kReplay && o.iteration >= 0) {
    ++o.observed_calls;
    if (!o.diverged) {
      const ReplayStep* step = o.position < o.n_steps ? &o.steps[o.position++] : nullptr;
      if (step == nullptr || !same_op(o, *step, fn)) {
        o.diverged = true;
      } else if (step->op >= 0) {
        const int64_t slot = o.iteration * o.n_ops + step->op;
        if (o.structure) enter_structure(o, static_cast<size_t>(step->op));
        if (o.timestamps) o.starts[slot] = monotonic_ns();
        const int widths = enter_op(o, *step, slot);
        // This RecordFunction still calls on_exit (it keeps the callbacks it started with),
        // which switches the callback back on.
        if (step->switch_off) at::disableCallback(o.handle);
        open = encode_open(slot, step->switch_off, widths);
      }
      // The next call comes after this op's launches, which evict the steps from the caches:
      // fetching the next one now hides that miss (perf: the step's first read was a quarter
      // of the callback's time).
      if (o.position < o.n_steps) __builtin_prefetch(o.steps + o.position);
    }
  }
  o.open_slots.push_back(open);
  return nullptr;
}

void on_exit(const at::RecordFunction&, at::ObserverContext*) {
  Observer& o = *the_observer;
  if (o.mode == Mode::kRecord) {
    --o.depth;
    return;
  }
  if (o.open_slots.empty()) return;
  const int64_t open = o.open_slots.back();
  o.open_slots.pop_back();
  if (open == kNotRanged) return;
  const int64_t slot = open / 8;
  if (open & 4) at::reenableCallback(o.handle);
  exit_op(o, static_cast<int>(open & 3));
  if (o.timestamps) o.ends[slot] = monotonic_ns();
  // The iteration's last op: its module ranges end with it, not at the next iteration.
  if (o.structure && slot % o.n_ops == o.last_op) close_structure(o);
}

void install(Mode mode) {
  Observer& o = *the_observer;
  if (o.mode != Mode::kOff) throw std::runtime_error("the visprof ATen observer is already running");
  o.mode = mode;
  o.open_slots.clear();
  o.handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&on_enter, &on_exit).scopes({at::RecordScope::FUNCTION}).needsInputs(false));
}

void uninstall() {
  Observer& o = *the_observer;
  if (o.handle != at::INVALID_CALLBACK_HANDLE) at::removeCallback(o.handle);
  o.handle = at::INVALID_CALLBACK_HANDLE;
  o.mode = Mode::kOff;
}

// Closes the running iteration: one that made fewer calls than the recording diverged too.
void close_iteration(Observer& o) {
  if (o.structure) close_structure(o);
  if (o.iteration >= 0 && (o.diverged || o.position != o.n_steps)) o.diverged_iterations.push_back(o.iteration);
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

// The calls on_enter sees in a replayed iteration (ReplayStep): walks the recording and skips
// the calls nested inside each ranged op that switches the callback off.
std::vector<ReplayStep> replay_steps(const Observer& o, const std::vector<int32_t>& plan,
                                     const std::vector<int64_t>& nvtx_handles, const std::vector<uint32_t>& colors,
                                     const std::vector<int32_t>& tags, int32_t nested_limit) {
  const std::vector<int32_t> subtree_end = subtree_ends(o.depths);
  std::vector<ReplayStep> steps;
  for (int32_t k = 0; k < static_cast<int32_t>(plan.size());) {
    ReplayStep step;
    step.name_ptr = o.name_ptrs[k];
    step.schema = o.schemas_trusted ? o.schemas[k] : nullptr;
    step.call = k;
    step.op = plan[k];
    if (step.op >= 0) {
      step.has_range = nvtx_handles[step.op] >= 0;
      step.nvtx_handle = step.has_range ? static_cast<uint32_t>(nvtx_handles[step.op]) : 0;
      step.color = colors[step.op];
      step.tag = tags.empty() ? -1 : tags[step.op];
      step.switch_off = subtree_end[k] - k - 1 > nested_limit;
    }
    steps.push_back(step);
    k = step.switch_off ? subtree_end[k] : k + 1;
  }
  return steps;
}

void record_start() {
  Observer& o = *the_observer;
  o.names.clear();
  o.name_ptrs.clear();
  o.schemas.clear();
  o.schemas_trusted = true;
  o.depths.clear();
  o.depth = 0;
  install(Mode::kRecord);
}

py::tuple record_stop() {
  uninstall();
  const Observer& o = *the_observer;
  py::list names;
  for (const std::string& name : o.names) names.append(py::str(name));
  return py::make_tuple(names, o.depths);
}

void set_structure(Observer& o, const py::object& nvtx_api, std::vector<int32_t> pops, std::vector<int32_t> push_begin,
                   std::vector<int64_t> push_handles, std::vector<uint32_t> push_colors,
                   std::vector<int64_t> push_payloads) {
  o.structure = !nvtx_api.is_none();
  o.module_widths.clear();
  if (!o.structure) return;
  const size_t n_ops = static_cast<size_t>(o.n_ops);
  if (pops.size() != n_ops || push_begin.size() != n_ops + 1) {
    throw std::invalid_argument("the module-range plan must have one entry per template op");
  }
  const size_t pushes = push_handles.size();
  if (push_colors.size() != pushes || push_payloads.size() != pushes || push_begin.front() != 0 ||
      static_cast<size_t>(push_begin.back()) != pushes) {
    throw std::invalid_argument("module-range pushes and their offsets disagree");
  }
  for (size_t j = 0; j < n_ops; ++j) {
    if (push_begin[j] > push_begin[j + 1]) throw std::invalid_argument("module-range offsets must not decrease");
  }
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
                  std::vector<int64_t> module_payloads, int32_t nested_limit, bool timestamps,
                  py::object nvtx_direct, std::vector<int32_t> tags) {
  Observer& o = *the_observer;
  if (std::strcmp(op_scope.name(), kOpScopeCapsuleName) != 0) throw std::invalid_argument("not visprof._C's op scope capsule");
  if (plan.size() != o.names.size()) throw std::invalid_argument("the plan must have one entry per recorded call");
  if (nvtx_handles.size() != colors.size()) throw std::invalid_argument("one NVTX handle and colour per op");
  if (!tags.empty() && tags.size() != colors.size()) throw std::invalid_argument("one allocation tag per op, or none");
  for (int32_t op : plan) {
    if (op >= static_cast<int32_t>(nvtx_handles.size())) throw std::invalid_argument("plan names an op out of range");
  }
  // Without a capsule for direct pushes, ops are ranged through the op scope, which also
  // hands their ids to visprof._C's tracer (the attributed pass links kernels by them).
  for (const py::object* given : {&nvtx_api, &nvtx_direct}) {
    if (given->is_none()) continue;
    py::capsule capsule = given->cast<py::capsule>();
    if (std::strcmp(capsule.name(), kNvtxCapsuleName) != 0) throw std::invalid_argument("not visprof._C's NVTX capsule");
    o.nvtx = *static_cast<const NvtxApi*>(capsule.get_pointer());
  }
  o.api = *static_cast<const OpScopeApi*>(op_scope.get_pointer());
  o.link_ids = nvtx_direct.is_none();
  o.last_op = plan.empty() ? -1 : *std::max_element(plan.begin(), plan.end());
  o.replay_steps = replay_steps(o, plan, nvtx_handles, colors, tags, nested_limit);
  o.steps = o.replay_steps.data();
  o.n_steps = o.replay_steps.size();
  o.timestamps = timestamps;
  o.n_ops = static_cast<int64_t>(nvtx_handles.size());
  set_structure(o, nvtx_api, std::move(module_pops), std::move(module_push_begin), std::move(module_handles),
                std::move(module_colors), std::move(module_payloads));
  o.first_id = first_id;
  o.iteration = -1;
  o.diverged_iterations.clear();
  o.observed_calls = 0;
  o.starts.assign(static_cast<size_t>(o.n_ops * iterations), 0);
  o.ends.assign(static_cast<size_t>(o.n_ops * iterations), 0);
  install(Mode::kReplay);
}

void begin_iteration(int64_t iteration) {
  Observer& o = *the_observer;
  if (o.mode != Mode::kReplay) throw std::runtime_error("begin_iteration outside a replay");
  if (iteration < 0 || static_cast<size_t>((iteration + 1) * o.n_ops) > o.starts.size()) {
    throw std::invalid_argument("iteration out of the range given to replay_start");
  }
  close_iteration(o);
  o.iteration = iteration;
  o.position = 0;
  o.diverged = false;
}

py::tuple replay_stop() {
  Observer& o = *the_observer;
  close_iteration(o);
  uninstall();
  // Ops still open (the forward raised inside an op) pop what they pushed, then the module
  // ranges around them.
  for (auto open = o.open_slots.rbegin(); open != o.open_slots.rend(); ++open) {
    if (*open != kNotRanged) exit_op(o, static_cast<int>(*open & 3));
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
        py::arg("timestamps") = true, py::arg("nvtx_direct") = py::none(), py::arg("tags") = std::vector<int32_t>(),
        "Replays the recording on this thread: plan[k] is the template op of recorded call k, or -1. "
        "With nvtx_api (visprof._C.nvtx._capsule()), also pushes module ranges: before template op j, "
        "pops module_pops[j] and pushes entries module_push_begin[j]..module_push_begin[j+1]. "
        "nested_limit: the callback is off inside a template op with more nested calls than that "
        "(-1: every op; a large value sees every call, slower; for comparison); "
        "timestamps=False leaves the host times of the ops 0; "
        "nvtx_direct (visprof._C.nvtx._capsule()) pushes the op ranges directly instead of through the "
        "op scope, which links op ids to CUPTI records (--nvtx-only runs without CUPTI); "
        "tags: per template op, the allocation tag the op scope pushes around it (-1: none; empty: none at all).");
  m.def("checks_by_schema", [] {
    const Observer& o = *the_observer;
    return o.schemas_trusted &&
           std::any_of(o.schemas.begin(), o.schemas.end(), [](const c10::FunctionSchema* s) { return s != nullptr; });
  }, "Whether the replay of the last recording checks each call by its schema's address (else by name).");
  m.def("begin_iteration", &begin_iteration, py::arg("iteration"));
  m.def("replay_stop", &replay_stop,
        "Stops replaying; returns (start_ns, end_ns, diverged iterations, calls the observer saw in them).");
}
