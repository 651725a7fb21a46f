"""NVTX ranges are exception-safe and switchable; the extension imports and reports itself
on a machine without a GPU; the timer falls back to the host clock."""
import json
import os
import subprocess
import sys
import time

import pytest

from visprof.base.errors import NoGPUError
from visprof.native import native, native_info, nvtx
from visprof.native.timer import EventTimer, stream_handle

c = native()


def test_context_manager_pops_when_the_body_raises():
    with pytest.raises(ValueError):
        with nvtx.range("outer"):
            with nvtx.range("inner", color=0xFFFF0000, payload=7):
                assert nvtx.depth() == 2
                raise ValueError("boom")
    assert nvtx.depth() == 0


def test_decorator_pops_when_the_function_raises():
    @nvtx.range("decorated")
    def fails():
        assert nvtx.depth() == 1
        raise KeyError("x")

    with pytest.raises(KeyError):
        fails()
    assert nvtx.depth() == 0


def test_cpp_scoped_range_pops_on_exceptions():
    with pytest.raises(c.NativeError, match="scoped range"):
        c.nvtx._scoped_range_then_raise("scoped")
    assert nvtx.depth() == 0


def test_unmatched_pop_is_harmless():
    nvtx.pop()
    nvtx.pop()
    assert nvtx.depth() == 0


def test_op_scope_balances_even_if_exit_is_called_too_often():
    handle = nvtx.registered("attention")
    c.op_enter(5, handle, 0xFF00FF00, 3)
    assert c.op_depth() == 1 and nvtx.depth() == 1 and c.alloc.current_tag() == 3
    c.op_exit()
    c.op_exit()
    assert c.op_depth() == 0 and nvtx.depth() == 0 and c.alloc.current_tag() == 0


def test_visprof_disable_turns_ranges_and_tracing_into_no_ops(tmp_path):
    code = (
        "import json; from visprof.native import native; c = native();"
        "c.nvtx.push('x'); c.nvtx.pop(); c.tracer.start();"
        "print(json.dumps({'enabled': c.nvtx.enabled(), 'active': c.tracer.active(),"
        " 'disabled': c.native_info()['instrumentation_disabled']}))"
    )
    env = {**os.environ, "VISPROF_DISABLE": "1"}
    # Absolute paths only: the child runs in another directory.
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    # cwd elsewhere: `python -c` puts the cwd first on sys.path, which must not shadow the
    # installed visprof with the source tree.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         cwd=tmp_path)
    state = json.loads(out.stdout.strip().splitlines()[-1])
    assert state == {"enabled": False, "active": False, "disabled": True}


def test_native_info_reports_the_build_and_no_gpu():
    info = native_info()
    assert info["backend"] in ("cuda", "cpu")
    assert isinstance(info["gpu_names"], list) and info["gpu_count"] == len(info["gpu_names"])
    if info["backend"] == "cuda":
        assert info["cuda_runtime_built"] >= 12000 and info["cupti_api_built"] > 0
        assert info["cupti_api_loaded"] > 0 and "libcupti" in info["cupti_library"]
    if info["gpu_count"] == 0:
        assert info["gpu_error"]  # says why


@pytest.mark.skipif(native_info()["gpu_count"] > 0, reason="checks the no-GPU path")
def test_tracer_without_gpu_raises_a_clear_error():
    from visprof.native.tracer import KernelTracer

    with pytest.raises(NoGPUError, match="GPU"):
        KernelTracer().start()


def test_host_clock_timer_has_the_same_api():
    timer = EventTimer("cpu")
    assert not timer.uses_gpu
    first = timer.start()
    time.sleep(0.01)
    timer.stop(first)
    second = timer.start()
    timer.stop(second)
    ns = timer.elapsed_ns()
    assert len(ns) == 2 and 9e6 < ns[0] < 5e8 and 0 <= ns[1] < ns[0]
    assert list(timer.elapsed_ns(1)) == [ns[1]]
    with pytest.raises(c.NativeError, match="already stopped"):
        timer.stop(first)


def test_timer_rejects_unknown_devices_and_streams():
    from visprof.base.errors import BadInputError

    with pytest.raises(BadInputError):
        EventTimer("tpu:0")
    with pytest.raises(TypeError):
        stream_handle("not a stream")
    assert stream_handle(None) == 0 and stream_handle(1234) == 1234


def test_native_clock_is_pythons_perf_counter_clock():
    before = time.perf_counter_ns()
    native_now = c.monotonic_ns()
    after = time.perf_counter_ns()
    assert before <= native_now <= after
