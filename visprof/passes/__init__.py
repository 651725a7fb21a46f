"""The measurement passes (docs/architecture.md, section 4; docs/measuring.md), each small and separate:

timing      clean latency: caching allocator and CUDA events only, adaptive iterations
trace_only  the CUPTI tracer alone: kernel-time sum and GPU busy time, the reference the
            attributed pass and the idle ("host/launch-bound") time are checked against
attributed  tracer + op capture: every kernel linked to its op, module and category
memory      torch's caching allocator observed in place: peak bytes and their split by category

and what they run on: runner (one model in one regime), models (timm names and nn.Modules;
forward_hints: why a forward failed, in words the user can act on),
batch_search and host_memory (out of memory -> the batch that fits), setup (the run set-up
every entry point shares), torch_noise (torch's warnings kept out of the report).
"""
