"""The measurement passes (DESIGN.md section 3), each small and separate:

timing      clean latency: caching allocator and CUDA events only, adaptive iterations
trace_only  the CUPTI tracer alone: kernel-time sum and GPU busy time, the reference the
            attributed pass and the idle ("host/launch-bound") time are checked against
attributed  tracer + op capture: every kernel linked to its op, module and category
memory      allocation hooks in a fresh process: peak bytes and their split by category
"""
