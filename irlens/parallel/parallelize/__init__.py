"""How a model is sharded over the mesh: the process groups and meshes (distributed.py), SimpleFSDP
(simple_fsdp.py), tensor and sequence parallelism (tensor_parallel.py), expert parallelism
(expert_parallel.py), async TP's micro-pipelining and its symmetric-memory probe (async_tp.py)."""
