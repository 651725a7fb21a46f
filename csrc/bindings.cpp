// The only file that knows about Python. Everything else in csrc/ is plain C++.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "alloc/alloc_books.h"
#include "alloc/alloc_hooks.h"
#include "alloc/block_mirror.h"
#include "alloc/torch_trace.h"
#include "capture/op_scope.h"
#include "capture/op_scope_api.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/switches.h"
#include "cupti/records.h"
#include "native_info.h"
#include "nvtx/nvtx_api.h"
#include "nvtx/nvtx_ranges.h"
#include "timer/event_timer.h"

#ifdef VISPROF_WITH_CUDA
#include "cupti/api_selection.h"
#include "cupti/fabricated_records.h"
#include "cupti/tracer.h"
#endif

namespace py = pybind11;
using namespace visprof;

namespace {

// Hands a vector of packed rows to NumPy without copying; Python views it with the dtype.
template <typename Row>
py::array_t<uint8_t> rows_as_bytes(std::vector<Row>&& rows) {
  auto* owned = new std::vector<Row>(std::move(rows));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<Row>*>(p); });
  return py::array_t<uint8_t>({static_cast<py::ssize_t>(owned->size() * sizeof(Row))},
                              reinterpret_cast<const uint8_t*>(owned->data()), free_when_done);
}

py::dict records_to_python(TraceRecords&& records) {
  py::dict out;
  out["kernel_names"] = records.names;
  out["kernels"] = rows_as_bytes(std::move(records.kernels));
  out["api_calls"] = rows_as_bytes(std::move(records.api_calls));
  out["external_correlations"] = records.external_correlations;
  out["dropped"] = records.dropped;
  out["callback_errors"] = callback_errors().count();
  return out;
}

py::dict books_to_python(const DeviceBooks& b) {
  py::dict out;
  out["live"] = b.live;
  out["peak"] = b.peak;
  out["requested_live"] = b.requested_live;
  out["requested_peak"] = b.requested_peak;
  out["allocs"] = b.allocs;
  out["frees"] = b.frees;
  out["failed"] = b.failed;
  out["tag_live"] = b.tag_live;
  out["tag_peak"] = b.tag_peak;
  out["live_at_peak"] = b.live_at_peak;
  return out;
}

[[noreturn]] void not_built(const char* what) {
  throw NotBuiltError(std::string(what) + " needs the CUDA backend; this visprof._C is CPU-only");
}

void bind_tracer(py::module_& m) {
  auto t = m.def_submodule("tracer", "CUPTI activity tracer (one per process).");
  t.attr("KERNELS") = static_cast<uint32_t>(1u << 0);
  t.attr("MEMCPY") = static_cast<uint32_t>(1u << 1);
  t.attr("MEMSET") = static_cast<uint32_t>(1u << 2);
  t.attr("RUNTIME") = static_cast<uint32_t>(1u << 3);
  t.attr("DRIVER") = static_cast<uint32_t>(1u << 4);
  t.attr("EXTERNAL_CORRELATION") = static_cast<uint32_t>(1u << 5);
  t.attr("ALL") = static_cast<uint32_t>(0x3f);
  t.attr("WORK_APIS") = static_cast<uint32_t>(1u << 6);
  t.attr("CALLBACK_CORRELATION") = static_cast<uint32_t>(1u << 7);
#ifdef VISPROF_WITH_CUDA
  t.def("start", [](uint32_t kinds, bool share_idle_subscriber) {
    py::gil_scoped_release release;
    Tracer::instance().start(kinds, share_idle_subscriber);
  }, py::arg("kinds") = static_cast<uint32_t>(kTraceAll), py::arg("share_idle_subscriber") = false);
  t.def("shared_subscription", [] { return Tracer::instance().shared_subscription(); });
  t.def("correlates_by_callback", [] { return Tracer::instance().correlates_by_callback(); });
  t.def("work_submitting_apis", [] {
    std::vector<std::string> names;
    for (const ApiId& api : work_submitting_apis()) names.push_back(api.name);
    return names;
  }, "Names of the runtime/driver APIs that WORK_APIS records.");
  t.def("stop", [] {
    py::gil_scoped_release release;
    Tracer::instance().stop();
  });
  t.def("active", [] { return Tracer::instance().active(); });
  t.def("drain", [] {
    TraceRecords records;
    {
      py::gil_scoped_release release;
      records = Tracer::instance().drain();
    }
    return records_to_python(std::move(records));
  });
  t.def("push_external_id", &Tracer::push_external_id);
  t.def("pop_external_id", &Tracer::pop_external_id);
  t.def("timebase_sample", [] {
    TimebaseSample s = Tracer::instance().timebase_sample();
    return py::make_tuple(s.cupti_ns, s.monotonic_ns);
  });
#else
  t.def("start", [](uint32_t, bool) {
    if (!instrumentation_disabled()) not_built("kernel tracing");  // disabled: a no-op, as in CUDA builds
  }, py::arg("kinds") = 0x3fu,
        py::arg("share_idle_subscriber") = false);
  t.def("shared_subscription", [] { return false; });
  t.def("correlates_by_callback", [] { return false; });
  t.def("work_submitting_apis", [] { return std::vector<std::string>(); });
  t.def("stop", [] {});
  t.def("active", [] { return false; });
  t.def("drain", [] { not_built("kernel tracing"); });
  t.def("push_external_id", [](uint64_t) {});
  t.def("pop_external_id", [] {});
  t.def("timebase_sample", [] { not_built("kernel tracing"); });
#endif
}

void bind_timer(py::module_& m) {
  py::class_<EventTimer>(m, "EventTimer",
                         "Intervals timed by CUDA events on any stream, or by the host clock.")
      .def(py::init<int>(), py::arg("device"))
      .def("start", &EventTimer::start, py::arg("stream") = 0)
      .def("stop", &EventTimer::stop, py::arg("interval"), py::arg("stream") = 0)
      .def("elapsed_ns", [](EventTimer& self, size_t first) {
        std::vector<int64_t> ns;
        {
          py::gil_scoped_release release;
          ns = self.elapsed_ns(first);
        }
        return py::array_t<int64_t>(static_cast<py::ssize_t>(ns.size()), ns.data());
      }, py::arg("first") = 0)
      .def("reset", &EventTimer::reset)
      .def("__len__", &EventTimer::size)
      .def_property_readonly("uses_gpu", &EventTimer::uses_gpu)
      .def_property_readonly("device", &EventTimer::device);
}

void bind_alloc(py::module_& m) {
  auto a = m.def_submodule("alloc", "Allocation hooks and their books.");
  a.def("push_tag", &AllocBooks::push_tag);
  a.def("pop_tag", &AllocBooks::pop_tag);
  a.def("current_tag", &AllocBooks::current_tag);
  a.def("reset_peaks", [] {
    AllocBooks::instance().reset_peaks();
    AllocBooks::reserved().reset_peaks();
  });
  a.def("stats", [](int device) { return books_to_python(AllocBooks::instance().snapshot(device)); },
        py::arg("device"), "Bytes held by tensors (hooks or the caching allocator's trace).");
  a.def("reserved_stats", [](int device) { return books_to_python(AllocBooks::reserved().snapshot(device)); },
        py::arg("device"), "Bytes the caching allocator reserved (its segments), from its trace.");

  // The caching allocator's trace (alloc/torch_trace.h); the tracker module calls in through
  // the capsule, tests and the seeding of the books through feed_trace_events.
  a.attr("TRACE_ALLOC") = static_cast<int32_t>(kTraceAlloc);
  a.attr("TRACE_FREE_REQUESTED") = static_cast<int32_t>(kTraceFreeRequested);
  a.attr("TRACE_FREE_COMPLETED") = static_cast<int32_t>(kTraceFreeCompleted);
  a.attr("TRACE_SEGMENT_ALLOC") = static_cast<int32_t>(kTraceSegmentAlloc);
  a.attr("TRACE_SEGMENT_FREE") = static_cast<int32_t>(kTraceSegmentFree);
  a.attr("TRACE_SEGMENT_MAP") = static_cast<int32_t>(kTraceSegmentMap);
  a.attr("TRACE_SEGMENT_UNMAP") = static_cast<int32_t>(kTraceSegmentUnmap);
  a.attr("TRACE_OOM") = static_cast<int32_t>(kTraceOom);
  a.attr("TRACE_SEED_BLOCK") = static_cast<int32_t>(kTraceSeedBlock);
  a.def("set_trace_enabled", &torch_trace::set_enabled, py::arg("on"));
  a.def("trace_enabled", &torch_trace::enabled);
  a.def("clear_trace_books", &torch_trace::clear);
  a.def("block_mirror_counts", [](int device) {
    const MirrorCounts c = BlockMirror::instance().counts(device);
    py::dict out;
    out["split_rules"] = c.split_rules;
    out["seeded"] = c.seeded;
    out["expandable"] = c.expandable;
    out["fallbacks"] = c.fallbacks;
    return out;
  }, py::arg("device"), "How the block sizes of the traced allocations were found (alloc/block_mirror.h).");
  a.def("feed_trace_events", [](const std::vector<std::tuple<int32_t, uint64_t, uint64_t, int32_t>>& events) {
    for (const auto& [action, addr, size, device] : events) torch_trace::on_event(action, addr, size, device);
  }, py::arg("events"), "(action, address, size, device) tuples, as the tracker would deliver them.");
  a.def("_torch_trace_capsule", [] {
    return py::capsule(const_cast<TorchTraceApi*>(&torch_trace::api()), kTorchTraceCapsuleName);
  }, "The trace entry points for visprof's allocator-tracker module (alloc/torch_trace_api.h).");
  a.def("devices", [] { return AllocBooks::instance().devices(); });
  a.def("host_malloc", [](size_t size, int device) {
    py::gil_scoped_release release;  // lets tests hammer the books from many threads
    return reinterpret_cast<uintptr_t>(host_malloc(size, device));
  }, py::arg("size"), py::arg("device") = -1);
  a.def("host_free", [](uintptr_t ptr, int device) {
    py::gil_scoped_release release;
    host_free(reinterpret_cast<void*>(ptr), device);
  }, py::arg("ptr"), py::arg("device") = -1);
  a.def("device_malloc", [](size_t size, int device, uintptr_t stream) {
    // The exact path torch's CUDAPluggableAllocator takes, callable from Python for benchmarks.
    return reinterpret_cast<uintptr_t>(
        visprof_torch_malloc(static_cast<ssize_t>(size), device, reinterpret_cast<void*>(stream)));
  }, py::arg("size"), py::arg("device") = 0, py::arg("stream") = 0);
  a.def("device_free", [](uintptr_t ptr, int device, uintptr_t stream) {
    visprof_torch_free(reinterpret_cast<void*>(ptr), 0, device, reinterpret_cast<void*>(stream));
  }, py::arg("ptr"), py::arg("device") = 0, py::arg("stream") = 0);
  a.def("cupy_entry_points", [] {
    return py::make_tuple(reinterpret_cast<uintptr_t>(&visprof_cupy_malloc),
                          reinterpret_cast<uintptr_t>(&visprof_cupy_free));
  });
  a.attr("TORCH_MALLOC") = "visprof_torch_malloc";
  a.attr("TORCH_FREE") = "visprof_torch_free";
}

void bind_nvtx(py::module_& m) {
  auto n = m.def_submodule("nvtx", "NVTX ranges in the 'visprof' domain (scheme: docs/nsight.md).");
  n.attr("KIND_USER") = static_cast<uint32_t>(nvtx::kUser);
  n.attr("KIND_MODEL") = static_cast<uint32_t>(nvtx::kModel);
  n.attr("KIND_MODULE") = static_cast<uint32_t>(nvtx::kModule);
  n.attr("KIND_CATEGORY") = static_cast<uint32_t>(nvtx::kCategory);
  n.attr("KIND_OP") = static_cast<uint32_t>(nvtx::kOp);
  n.def("register_message", &nvtx::register_message, py::arg("message"), py::arg("kind") = 0u);
  n.def("register_op", &nvtx::register_op, py::arg("category"), py::arg("message"));
  n.def("push", &nvtx::push, py::arg("message"), py::arg("color") = 0xFF76B900u,
        py::arg("payload") = 0, py::arg("kind") = 0u);
  n.def("push_registered", &nvtx::push_registered, py::arg("handle"), py::arg("color") = 0xFF76B900u,
        py::arg("payload") = 0);
  n.def("pop", &nvtx::pop);
  n.def("mark", &nvtx::mark, py::arg("message"), py::arg("color") = 0xFF76B900u, py::arg("payload") = 0);
  n.def("depth", &nvtx::depth);
  n.def("enabled", &nvtx::enabled);
  n.def("_set_log", &nvtx::set_log, py::arg("on"));
  n.def("_take_log", [] {
    py::list out;
    for (const nvtx::LogEntry& e : nvtx::take_log()) {
      if (e.push) {
        out.append(py::make_tuple("push", e.message, e.kind, e.payload, e.color));
      } else {
        out.append(py::make_tuple("pop"));
      }
    }
    return out;
  }, "Ranges pushed and popped since _set_log(True), in order: ('push', message, kind, payload, colour) or ('pop',).");
  n.def("_capsule", [] {
    static const NvtxApi api{&nvtx::push_registered, &nvtx::pop, &nvtx::push_unstacked, &nvtx::pop_unstacked};
    return py::capsule(const_cast<NvtxApi*>(&api), kNvtxCapsuleName);
  }, "push_registered/pop for visprof's ATen observer module (nvtx/nvtx_api.h).");
  n.def("_scoped_range_then_raise", [](const std::string& message) {
    // Exercises the C++ RAII range on the exception path, for tests.
    nvtx::ScopedRange range(message);
    throw Error("raised inside a visprof scoped range");
  });
}

void bind_op_scope(py::module_& m) {
  m.def("op_enter", &op_enter, py::arg("external_id"), py::arg("nvtx_handle") = -1,
        py::arg("color") = 0u, py::arg("tag") = -1);
  m.def("op_exit", &op_exit);
  m.def("op_depth", &op_depth);
  m.def("_op_scope_capsule", [] {
    static const OpScopeApi api{&op_enter, &op_exit};
    return py::capsule(const_cast<OpScopeApi*>(&api), kOpScopeCapsuleName);
  }, "op_enter/op_exit for visprof's ATen observer module (capture/op_scope_api.h).");
}

void bind_testing(py::module_& m) {
  auto t = m.def_submodule("_testing", "Fabricated CUPTI records for tests without a GPU.");
#ifdef VISPROF_WITH_CUDA
  t.def("kernel", [](const std::string& name, uint64_t start, uint64_t end, uint32_t device,
                     uint32_t stream, uint32_t correlation, std::array<int32_t, 3> grid,
                     std::array<int32_t, 3> block, uint16_t registers, int32_t static_shared,
                     int32_t dynamic_shared) {
    FabricatedKernel k;
    k.name = name;
    k.start = start;
    k.end = end;
    k.device = device;
    k.stream = stream;
    k.correlation = correlation;
    for (int i = 0; i < 3; ++i) k.grid[i] = grid[i], k.block[i] = block[i];
    k.registers = registers;
    k.static_shared = static_shared;
    k.dynamic_shared = dynamic_shared;
    return py::bytes(fabricate_kernel(k));
  }, py::arg("name"), py::arg("start"), py::arg("end"), py::arg("device") = 0, py::arg("stream") = 7,
     py::arg("correlation") = 0, py::arg("grid") = std::array<int32_t, 3>{1, 1, 1},
     py::arg("block") = std::array<int32_t, 3>{1, 1, 1}, py::arg("registers") = 0,
     py::arg("static_shared") = 0, py::arg("dynamic_shared") = 0);
  t.def("memcpy", [](uint64_t bytes, uint64_t start, uint64_t end, uint32_t device, uint32_t stream,
                     uint32_t correlation) {
    return py::bytes(fabricate_memcpy(bytes, start, end, device, stream, correlation));
  });
  t.def("memset", [](uint64_t bytes, uint64_t start, uint64_t end, uint32_t device, uint32_t stream,
                     uint32_t correlation) {
    return py::bytes(fabricate_memset(bytes, start, end, device, stream, correlation));
  });
  t.def("api", [](bool driver, uint32_t cbid, uint64_t start, uint64_t end, uint32_t thread,
                  uint32_t correlation) {
    return py::bytes(fabricate_api(driver, cbid, start, end, thread, correlation));
  });
  t.def("external_correlation", [](uint64_t external_id, uint32_t correlation) {
    return py::bytes(fabricate_external_correlation(external_id, correlation));
  });
  t.def("parse", [](const py::bytes& buffer, uint64_t dropped,
                    const std::vector<std::pair<uint32_t, uint64_t>>& correlations) {
    std::string data = buffer;
    return records_to_python(Tracer::parse_buffer(reinterpret_cast<const uint8_t*>(data.data()), data.size(),
                                                  dropped, correlations));
  }, py::arg("buffer"), py::arg("dropped") = 0, py::arg("correlations") = std::vector<std::pair<uint32_t, uint64_t>>{});
#endif
  t.def("record_sizes", [] { return py::make_tuple(sizeof(KernelRow), sizeof(ApiRow)); });
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "visprof native core: CUPTI tracer, event timer, allocation hooks, NVTX.";
  auto base = py::register_exception<Error>(m, "NativeError", PyExc_RuntimeError);
  py::register_exception<CuptiBusyError>(m, "CuptiBusyError", base.ptr());
  py::register_exception<NotBuiltError>(m, "NotBuiltError", base.ptr());

  m.def("native_info", [] {
    NativeInfo info = native_info();
    py::dict out;
    out["backend"] = info.backend;
    out["instrumentation_disabled"] = info.instrumentation_disabled;
    out["cuda_runtime_built"] = info.cuda_runtime_built;
    out["cuda_runtime_loaded"] = info.cuda_runtime_loaded;
    out["cuda_driver"] = info.cuda_driver;
    out["cupti_api_built"] = info.cupti_api_built;
    out["cupti_api_loaded"] = info.cupti_api_loaded;
    out["cupti_library"] = info.cupti_library;
    out["gpu_count"] = info.gpu_count;
    out["gpu_names"] = info.gpu_names;
    out["gpu_error"] = info.gpu_error;
    return out;
  });
  m.def("monotonic_ns", &monotonic_ns, "visprof's host clock (CLOCK_MONOTONIC ns).");
  m.def("callback_errors", [] {
    return py::make_tuple(callback_errors().count(), callback_errors().last());
  });

  bind_tracer(m);
  bind_timer(m);
  bind_alloc(m);
  bind_nvtx(m);
  bind_op_scope(m);
  bind_testing(m);
}
