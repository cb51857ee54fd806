"""Graph passes of the joint-graph path: a named list, validated before anything runs.

Joint passes rewrite the joint forward+backward graph before the partition:
  inductor_decomposition            Inductor's decomposition table, applied by retracing
  selective_activation_checkpoint   save matmuls/attention/collectives, recompute the rest per layer
  fsdp_reshard_after_forward        free the gathered parameters after the forward, re-gather in backward

Forward/backward passes run on each partitioned graph, in the order given, in phases:
  1. collective-matmul fusion:       async_tensor_parallel (TP with sequence parallelism, CUDA)
  2. graph transforms (at most one): autobucketing_reordering, transformer_block_bucketing
  3. compilation (at most one):      regional_inductor, full_inductor_compilation
  4. cudagraph                       (must be last)
A pass that may change numerics (decompositions, bucketed reductions, Inductor) warns when it
is asked for and is listed in the run's summary, never silent. Each pass is summarized before
and after (nodes, collectives, bucket sizes): `PassRecord`.

summary.py: the records; registry.py: GraphPass and the two Registries; catalog.py: the named lists
and their validation; run.py: running them (and the partitioner's choice). The passes by concern:
activation_checkpoint.py, bucketing.py, collective_matmul.py, inductor.py, cudagraph.py.
"""
from irlens.parallel.passes import catalog  # noqa: F401  (fills the Registries, whichever module is imported first)
