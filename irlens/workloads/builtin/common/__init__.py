"""Llama's layers, written once for their two users: the comparison workloads
(irlens/workloads/builtin/llama.py: each layer a workload of the corpus, with a JAX twin beside it) and the
parallel path's decoders (irlens/parallel/models/llama3/model.py, and deepseek_v3.py built on it), as
torchtitan's models/common serves its models. RMSNorm (norm.py), rotary embeddings in the two
layouts llama code writes (rope.py), the SwiGLU feed-forward (feed_forward.py), grouped-query
causal attention (attention.py) and the pre-norm block that chains them (decoder.py). A layer
takes plain sizes, not a model's config. What one user needs and the other must not get (the
parallel path's float32 norm statistics, FlexAttention, annotated regions) is an argument or an
override, so each user's graphs and numerics stay its own.
"""
