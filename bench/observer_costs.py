"""What each piece of the --nvtx-only path costs on this host, in ns, in a tight C++ loop:
torch's RecordFunction per observed aten call, the observer's per-callback off/on switch (and
the thread-local RecordFunction switch it replaced), the host clock read the replay makes twice
per op, and a registered NVTX push/pop with no tool attached. Explains bench/nvtx_overhead.py's
per-op figure; the host (a VM on the H200 machine) decides most of it.

    python bench/observer_costs.py --json bench/results/h200-s18-nvtx/observer-costs-h200.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402

SOURCE = r'''
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <chrono>
#include <ctime>
#include <map>
#include <string>
#ifdef WITH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace {
std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction&) { return nullptr; }
void on_exit(const at::RecordFunction&, at::ObserverContext*) {}
at::CallbackHandle install() {
  return at::addThreadLocalCallback(
      at::RecordFunctionCallback(&on_enter, &on_exit).scopes({at::RecordScope::FUNCTION}).needsInputs(false));
}
template <class F> double ns_per(int64_t n, F f) {
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
}
std::map<std::string, double> costs(int64_t n) {
  std::map<std::string, double> out;
  auto x = at::ones({1});
  out["aten_call_unobserved"] = ns_per(n, [&] { auto y = at::detach(x); });
  at::CallbackHandle h = install();
  out["aten_call_observed"] = ns_per(n, [&] { auto y = at::detach(x); });
  out["callback_off_on"] = ns_per(n, [&] { at::disableCallback(h); at::reenableCallback(h); });
  out["record_function_tls_off_on"] = ns_per(n, [&] { at::enableRecordFunction(false); at::enableRecordFunction(true); });
  at::removeCallback(h);
  out["clock_gettime_monotonic"] = ns_per(n, [] { timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); });
#ifdef WITH_NVTX
  nvtxDomainHandle_t d = nvtxDomainCreateA("visprof-costs");
  nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "op");
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION; a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED; a.message.registered = s;
  out["nvtx_push_pop_registered"] = ns_per(n, [&] { nvtxDomainRangePushEx(d, &a); nvtxDomainRangePop(d); });
#endif
  return out;
}
}  // namespace

PYBIND11_MODULE(observer_costs, m) { m.def("costs", &costs); }
'''


def build(workdir: Path):
    import torch
    from visprof.native.runtime_module import cuda_include_dir

    torch_dir = Path(torch.__file__).resolve().parent
    source = workdir / "observer_costs.cpp"
    source.write_text(SOURCE)
    cuda = cuda_include_dir()
    nvtx = cuda is not None and (cuda / "nvtx3" / "nvToolsExt.h").is_file()
    target = workdir / f"observer_costs{sysconfig.get_config_var('EXT_SUFFIX')}"
    command = [os.environ.get("CXX", "c++"), "-O2", "-shared", "-fPIC", "-std=c++20",
               f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
               f"-I{torch_dir / 'include'}", f"-I{torch_dir / 'include' / 'torch' / 'csrc' / 'api' / 'include'}",
               f"-I{sysconfig.get_paths()['include']}", *([f"-I{cuda}", "-DWITH_NVTX"] if nvtx else []),
               str(source), f"-L{torch_dir / 'lib'}", "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{torch_dir / 'lib'}",
               "-o", str(target)]
    subprocess.run(command, check=True)
    sys.path.insert(0, str(workdir))
    import observer_costs
    return observer_costs


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        module = build(Path(workdir))
        runs = [module.costs(args.calls) for _ in range(args.repeats)]
    median = {key: sorted(run[key] for run in runs)[len(runs) // 2] for key in runs[0]}
    clocksource = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    result = {"provenance": provenance(), "calls": args.calls, "repeats": args.repeats, "median_ns": median,
              "runs_ns": runs, "clocksource": clocksource.read_text().strip() if clocksource.is_file() else None}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"clocksource: {result['clocksource']}")
    for key, value in median.items():
        print(f"{key:30s} {value:8.1f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
