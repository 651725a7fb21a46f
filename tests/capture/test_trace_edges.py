"""What a trace block records and what it leaves alone: forked workers, other threads, a block
inside a block, an interrupted start, record_function's annotations, compiled code."""
import threading
import warnings

import pytest
import torch
from torch.nn.modules import module as nn_module
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
from torch.utils.data import DataLoader, Dataset

import visprof
from visprof.base.errors import BadInputError
from visprof.capture.op_capture import OpCapture

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path; the GPU path is tests/gpu")


class _ReportsItsProcess(Dataset):
    """Each item: what the worker process has installed while it makes the item."""

    def __len__(self):
        return 2

    def __getitem__(self, i):
        x = torch.ones(4)
        for _ in range(20):
            x = x * 1.01
        return {"modes": len(_get_current_dispatch_mode_stack()),
                "hooks": len(nn_module._global_forward_pre_hooks) + len(nn_module._global_forward_hooks)}


def test_forked_dataloader_workers_do_not_record():
    """Workers forked inside the block had inherited the dispatch mode and the module hooks and
    recorded every op they ran, for nobody: data loading 15x slower, memory growing per op."""
    model = torch.nn.Linear(4, 4)
    loader = DataLoader(_ReportsItsProcess(), batch_size=None, num_workers=1, multiprocessing_context="fork")
    with visprof.trace(model) as session:
        items = list(loader)
        model(torch.randn(2, 4))
    assert items == [{"modes": 0, "hooks": 0}] * 2
    assert [op.name for op in session.trace.ops if op.name == "aten.addmm.default"] == ["aten.addmm.default"]


def test_a_module_run_by_another_thread_lends_nothing_to_the_traced_threads_ops():
    """The hooks are global: a module that another thread ran meanwhile had sat on the traced
    thread's stack, and the convolution ran "inside" it (attention/core, by its class name)."""
    class WindowAttention(torch.nn.Module):
        def forward(self, x):
            entered.set()
            leave.wait(5)
            return x

    entered, leave = threading.Event(), threading.Event()
    other = threading.Thread(target=lambda: WindowAttention()(torch.ones(1)))
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    with visprof.trace(model) as session:
        other.start()
        entered.wait(5)  # the other thread is inside WindowAttention's forward now
        model(torch.randn(1, 3, 8, 8))
        leave.set()
        other.join()
    categories = {row.category for row in session.category_rows()}
    assert "attention" not in categories and "convolution" in categories
    conv = next(op for op in session.trace.ops if op.name == "aten.convolution.default")
    assert session.trace.modules[conv.module].path == "0"


def test_a_dataparallel_over_several_gpus_is_warned_of_its_replicas_threads():
    """DataParallel's forward over several GPUs runs each replica on a thread of its own (torch's
    parallel_apply); a trace records the ops of its own thread only, as a thread running the model
    shows here, so the replicas' work would go unattributed without a word."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    with visprof.trace(model) as session:
        worker = threading.Thread(target=lambda: model(torch.randn(1, 3, 8, 8)))
        worker.start()
        worker.join()
    assert not any(op.name == "aten.convolution.default" for op in session.trace.ops)  # the thread's ops: none
    wrapped = torch.nn.DataParallel(model)  # on the CPU no device ids: set two as on a two-GPU machine
    wrapped.device_ids = [0, 1]
    with pytest.warns(visprof.VisprofWarning, match=r"^trace\(\): this DataParallel runs its forward on 2 GPUs, each "
                                                    r"replica on a thread of its own.*Trace model.module on one GPU") as seen:
        visprof.trace(wrapped)
    assert seen[0].filename == __file__  # pointed at the caller's line
    wrapped.device_ids = [0]  # one GPU: DataParallel calls the module on the caller's thread
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        visprof.trace(wrapped)


def test_a_trace_inside_a_trace_is_refused():
    """An inner block timed each op with the outer block's per-op work inside it: 10x."""
    model = torch.nn.Linear(4, 4)
    with visprof.trace(model) as outer:
        with pytest.raises(BadInputError, match="inside another visprof.trace"):
            with visprof.trace(model):
                pass
        model(torch.randn(2, 4))
    assert any(op.name == "aten.addmm.default" for op in outer.trace.ops)


def test_a_profile_inside_a_trace_is_refused():
    """Its timing pass ran with the trace's per-op work in it: 2x the latency, no warning."""
    model = torch.nn.Linear(4, 4)
    with visprof.trace(model):
        with pytest.raises(BadInputError, match="profile outside the block"):
            visprof.profile(model, batch_size=1, progress=False)


def test_an_interrupted_start_leaves_no_hook_behind(monkeypatch):
    """A Ctrl-C after the tracker's hooks were installed and before the capture's mode was pushed
    left the global hooks for the rest of the process."""
    hooks_before = len(nn_module._global_forward_pre_hooks) + len(nn_module._global_forward_hooks)

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(OpCapture, "__enter__", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with visprof.trace(torch.nn.Linear(4, 4)):
            pass
    assert len(nn_module._global_forward_pre_hooks) + len(nn_module._global_forward_hooks) == hooks_before
    assert not _get_current_dispatch_mode_stack()


def test_record_functions_annotations_are_not_ops():
    """optimizer.step() runs inside a record_function: its enter/exit ops had filled an "other"
    row in every training step."""
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with visprof.trace(model) as session:
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
    assert not any(op.name.startswith("profiler.") for op in session.trace.ops)
    assert "other" not in {row.category for row in session.category_rows()}


@pytest.mark.parametrize("make, first_step_state", [
    (lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=False), {"aten.clone.default": "memory/layout"}),
    (lambda params: torch.optim.Adam(params, foreach=False), {"aten.zeros_like.default": "memory/fill"}),
], ids=["sgd-momentum", "adam"])
def test_an_optimizers_state_is_made_in_its_first_step_and_every_later_step_is_elementwise(make, first_step_state):
    """What docs/taxonomy.md says of the optimizer step: the first one also makes its state (a
    copy of each gradient, zeroed moments), which is memory; the steps after it are elementwise."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    optimizer = make(model.parameters())
    steps = []
    for _ in range(2):
        model(torch.randn(4, 8)).sum().backward()
        with visprof.trace() as session:
            optimizer.step()
        attribution = session.attribution
        steps.append({})
        for i, op in enumerate(session.trace.ops):
            c = attribution.op_classification(i)
            if c.category != "elementwise":
                steps[-1][op.name] = c.category + (f"/{c.subcategory}" if c.subcategory else "")
    (state_op, state_category), = first_step_state.items()
    assert steps[0][state_op] == state_category, steps
    # the rest of the first step's non-elementwise ops are views, or make or read the step count
    assert all(category.startswith("memory/") for category in steps[0].values()), steps
    # later steps: elementwise, but for Adam reading its step count, a tensor on the CPU (no GPU work)
    assert steps[1] == ({} if state_op == "aten.clone.default" else {"aten._local_scalar_dense.default": "memory/layout"})


def test_gpu_takes_a_bool():
    with pytest.raises(BadInputError, match="True, False or None"):
        visprof.trace(torch.nn.Linear(4, 4), gpu="no")


@pytest.mark.skipif(not hasattr(torch.utils._python_dispatch.TorchDispatchMode, "ignore_compile_internals"),
                    reason="this torch runs compiled code eagerly under any dispatch mode")
def test_compiled_code_in_a_trace_runs_compiled():
    """It had run eagerly under the capture, without a word: the trace showed another program.
    Compiled, the GELU is fused into Inductor's C++ kernel (no op); the GEMMs are extern calls."""
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU(), torch.nn.Linear(16, 16))
    compiled = torch.compile(model)
    x = torch.randn(4, 16)
    with torch.no_grad():
        compiled(x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with visprof.trace(model) as session:
                compiled(x)
    # torch's warning about global hooks is about visprof's own: not shown to the user
    assert not [w for w in caught if "global hooks" in str(w.message)]
    names = [op.name for op in session.trace.ops]
    assert "aten.gelu.default" not in names
    assert names.count("aten.addmm.out") == 2


def test_modules_outside_the_root_are_named_apart():
    """A second model (a teacher) was named by class chain: qkv and proj, block 0 and block 1,
    and two teachers all shared paths."""
    student = torch.nn.Linear(8, 8)
    teachers = [torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8)) for _ in range(2)]
    with visprof.trace(student) as session:
        student(torch.randn(2, 8))
        for teacher in (*teachers, teachers[0]):
            teacher(torch.randn(2, 8))
    modules = session.trace.modules
    gemms = [modules[op.module].path for op in session.trace.ops if op.name == "aten.addmm.default"]
    assert gemms == ["", "Sequential.0", "Sequential.2", "Sequential#2.0", "Sequential#2.2",
                     "Sequential.0", "Sequential.2"]
    assert len({m.path for m in modules}) == len(modules)


def test_the_users_warning_filters_set_inside_a_block_stay():
    """The block drops one torch warning; it had put back the whole filter list at its end, and
    with it undone a filter the user's code set inside the block."""
    with warnings.catch_warnings():
        with visprof.trace(torch.nn.Linear(4, 4)):
            warnings.filterwarnings("ignore", message="the user's own filter")
        assert any(f[1] is not None and f[1].pattern == "the user's own filter" for f in warnings.filters)
        assert not any(f[1] is not None and "global hooks" in f[1].pattern for f in warnings.filters)


def test_ops_on_fake_tensors_are_tracing_and_not_recorded():
    """torch traces functions on FakeTensors inside real work (flex_attention's backward traces its
    score_mod on a GPU): those ops launch nothing, and reading their storage warned ("Accessing the data
    pointer of FakeTensor is deprecated and will error"); recorded, one was filed under "other"."""
    import warnings

    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake = torch.randn(4, 4)
    real = torch.randn(4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the data-pointer warning fails the test
        with visprof.trace() as session:
            traced = fake + 1
            computed = real * 2
    assert type(traced).__name__ == "FakeTensor" and torch.equal(computed, real * 2)
    assert [op.name for op in session.trace.ops] == ["aten.mul.Tensor"]
