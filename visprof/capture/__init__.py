"""What ran: aten ops and module paths as the model runs, and what each op costs.

op_capture   the dispatch-level op capture and module tracker (external correlation ids)
replay       replaying a captured op stream (the cheap second capture of the attributed pass)
structure    attention found by dataflow (hand-written attention, window partition/shift)
compiled     torch.compile'd models: Inductor kernels mapped back to ops and modules
op_costs     FLOPs and bytes per aten op
higher_order the higher-order ops capture records as one op (eager flex_attention)
nvtx_scheme  the names and nesting of visprof's NVTX ranges, which capture emits
"""
