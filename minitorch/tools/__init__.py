"""Tools built on the engine, outside its core: each reads the graph or times the ops, none is needed to train.

    graph_draw     mt.draw_graph: the graph that produced a tensor, as DOT text or a picture
    graph_memory   saved_bytes: the bytes a graph keeps for its backward (what its ops declared with save_for_backward)
    profiler       OpProfiler: each op's forward and backward time, per op class, through the engine's op hook
    bench_ops      python -m minitorch.tools.bench_ops: each fused op against the same op composed from primitives
    exercises      python -m minitorch.tools.exercises: graded exercises, a Function's forward and backward to write
"""
