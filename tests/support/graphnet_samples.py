"""Small samples in GraphNet's format (model.py, weight_meta.py, input_meta.py, graph_net.json),
written by the tests that use them: a linear layer whose graph builds a tensor on `cuda:0`, an
embedding of int token ids, a float32 table the graph builds and multiplies with a weight, a softmax
over a graph's edges (torch_geometric's GAT: a scatter_reduce_ amax without self), a BatchNorm whose
eps the graph reads with `.item()` (Dynamo makes two graphs of it), a convolution and
a BatchNorm named as timm names them, a graph convolution over the edges a boolean mask keeps
(torch_geometric's GCN: a size that depends on values), a float16 sample's attention with its own
float16 mask, and malformed ones."""
from __future__ import annotations

import json
import math
from functools import partial
from pathlib import Path

LINEAR_CUDA = '''import torch

from torch import device

class GraphModule(torch.nn.Module):
    def forward(self, L_x_: torch.Tensor, L_self_parameters_weight_: torch.nn.parameter.Parameter,
                L_self_parameters_bias_: torch.nn.parameter.Parameter, L_self_buffers_scale_: torch.Tensor):
        linear = torch._C._nn.linear(L_x_, L_self_parameters_weight_, L_self_parameters_bias_)
        offset = torch.arange(4, device=device(type="cuda", index=0), dtype=torch.float32)
        tanh = torch.tanh(linear)
        return (tanh * L_self_buffers_scale_ + offset.to(device(type="cuda", index=0)),)
'''

EMBEDDING_INT = '''import torch

class GraphModule(torch.nn.Module):
    def forward(self, L_input_ids_: torch.Tensor, L_self_modules_emb_parameters_weight_: torch.nn.parameter.Parameter):
        emb = torch.nn.functional.embedding(L_input_ids_, L_self_modules_emb_parameters_weight_)
        return (torch.sin(emb).sum(-1),)
'''

# a rotary-like table built in float32 whatever the weights' dtype, then a matmul with a weight;
# the LayerNorm weight is one GraphNet keeps in float32 in a half run
TABLE_F32 = '''import torch

from torch import device

class GraphModule(torch.nn.Module):
    def forward(self, L_x_: torch.Tensor, L_self_modules_proj_parameters_weight_: torch.nn.parameter.Parameter,
                L_self_modules_ln_parameters_weight_: torch.nn.parameter.Parameter):
        position = torch.arange(6, device=device(type="cuda", index=0), dtype=torch.float32)
        table = torch.sin(position[:, None] * 0.5 + position[None, :4])
        mixed = torch.matmul(table, L_self_modules_proj_parameters_weight_)
        normed = torch.nn.functional.layer_norm(L_x_ + mixed, (5,), L_self_modules_ln_parameters_weight_)
        return (normed,)
'''

# torch_geometric's softmax over the edges into each node, as GraphNet's GAT captures it: the
# per-node maximum by an in-place scatter_reduce_ (amax, include_self=False) into zeros; nodes 4
# and 5 receive no edge and keep their zero
EDGE_SOFTMAX = '''import torch

class GraphModule(torch.nn.Module):
    def forward(self, L_x_: torch.Tensor, L_edge_index_: torch.Tensor,
                L_self_parameters_att_: torch.nn.parameter.Parameter):
        src = L_edge_index_[0]
        dst = L_edge_index_[1]
        score = torch.nn.functional.leaky_relu(L_x_.index_select(0, src) * L_self_parameters_att_, 0.2)
        detach = score.detach()
        index = dst.view(-1, 1).expand_as(detach)
        new_zeros = detach.new_zeros((6, 4))
        src_max = new_zeros.scatter_reduce_(0, index, detach, reduce="amax", include_self=False)
        out = (score - src_max.index_select(0, dst)).exp()
        denom = torch.zeros((6, 4), dtype=out.dtype).scatter_add_(0, index, out)
        return (out / (denom.index_select(0, dst) + 1e-16), src_max)
'''

# an eval-mode BatchNorm whose eps the graph reads with `.item()`: Dynamo breaks the graph there and
# makes two; the running variance is clamped at 0 by its min_val (GraphNet records one), exp after it
BREAK_ITEM = '''import torch

class GraphModule(torch.nn.Module):
    def forward(self, L_x_: torch.Tensor, L_self_modules_proj_parameters_weight_: torch.nn.parameter.Parameter,
                L_self_modules_bn_buffers_running_mean_: torch.Tensor,
                L_self_modules_bn_buffers_running_var_: torch.Tensor, L_self_modules_bn_eps: torch.Tensor):
        linear = torch._C._nn.linear(L_x_, L_self_modules_proj_parameters_weight_)
        item = L_self_modules_bn_eps.item()
        normed = torch.nn.functional.batch_norm(linear, L_self_modules_bn_buffers_running_mean_,
                                                L_self_modules_bn_buffers_running_var_, None, None, False, 0.1, item)
        return (torch.exp(torch.tanh(normed)) * normed,)
'''

# a BatchNorm as timm's and torchvision's captures name it (`stem_modules_1`): no `bn` in its weights' names
CONV_BN = '''import torch

class GraphModule(torch.nn.Module):
    def forward(self, L_x_: torch.Tensor, L_self_modules_stem_modules_0_parameters_weight_: torch.nn.parameter.Parameter,
                L_self_modules_stem_modules_1_buffers_running_mean_: torch.Tensor,
                L_self_modules_stem_modules_1_buffers_running_var_: torch.Tensor,
                L_self_modules_stem_modules_1_parameters_weight_: torch.nn.parameter.Parameter,
                L_self_modules_stem_modules_1_parameters_bias_: torch.nn.parameter.Parameter):
        conv = torch.conv2d(L_x_, L_self_modules_stem_modules_0_parameters_weight_, None, (1, 1), (1, 1), (1, 1), 1)
        bn = torch.nn.functional.batch_norm(conv, L_self_modules_stem_modules_1_buffers_running_mean_,
                                            L_self_modules_stem_modules_1_buffers_running_var_,
                                            L_self_modules_stem_modules_1_parameters_weight_,
                                            L_self_modules_stem_modules_1_parameters_bias_, False, 0.1, 1e-05)
        return (torch.nn.functional.relu(bn),)
'''

# torch_geometric's GCN as GraphNet captures it: self-loops dropped by a boolean mask, Dynamo's checks of
# the size that leaves, edge weights built in float32 whatever the features' dtype, then a linear layer
MASKED_EDGES = '''import torch

from torch import device

class GraphModule(torch.nn.Module):
    def forward(self, L_x_: torch.Tensor, L_edge_index_: torch.Tensor,
                L_self_modules_lin_parameters_weight_: torch.nn.parameter.Parameter,
                L_self_modules_out_parameters_weight_: torch.nn.parameter.Parameter):
        mask = L_edge_index_[0] != L_edge_index_[1]
        edge_index = L_edge_index_[(slice(None, None, None), mask)]
        sym_size_int = torch.ops.aten.sym_size.int(edge_index, 1)
        _check_is_size = torch._check_is_size(sym_size_int)
        ge = sym_size_int >= 0
        _assert_scalar_default = torch.ops.aten._assert_scalar.default(ge, "Runtime assertion failed for expression u0 >= 0 on node 'ge'")
        edge_weight = torch.ones((sym_size_int,), dtype=torch.float32, device=device(type="cuda", index=0))
        h = torch._C._nn.linear(L_x_, L_self_modules_lin_parameters_weight_, None)
        message = edge_weight.view(-1, 1) * h.index_select(0, edge_index[0])
        aggregated = message.new_zeros((5, 4)).index_add_(0, edge_index[1], message)
        return (torch._C._nn.linear(aggregated, L_self_modules_out_parameters_weight_, None),)
'''

# a float16 sample whose graph builds its causal mask in float16, as a float16 capture of OPT does
HALF_MASK = '''import torch

class GraphModule(torch.nn.Module):
    def forward(self, L_q_: torch.Tensor, L_self_modules_k_proj_parameters_weight_: torch.nn.parameter.Parameter):
        k = torch._C._nn.linear(L_q_, L_self_modules_k_proj_parameters_weight_, None)
        causal = torch.full((4, 4), -65504.0, dtype=torch.float16).triu(1)
        return (torch._C._nn.scaled_dot_product_attention(L_q_, k, k, attn_mask=causal),)
'''

# name -> (shape, dtype, extra fields)
LINEAR_META = {"L_x_": ([3, 5], "torch.float32", {"mean": 0.1, "std": 1.0}),
               "L_self_parameters_weight_": ([4, 5], "torch.float32", {"mean": 0.0, "std": 0.3}),
               "L_self_parameters_bias_": ([4], "torch.float32", {"data": [0.5, -0.25, 0.0, 1.0]}),
               "L_self_buffers_scale_": ([4], "torch.float32", {"mean": 1.0, "std": 0.5, "min_val": 0.75})}
TABLE_META = {"L_x_": ([6, 5], "torch.float32", {"mean": 0.0, "std": 1.0}),
              "L_self_modules_proj_parameters_weight_": ([4, 5], "torch.float32", {"mean": 0.0, "std": 0.5}),
              "L_self_modules_ln_parameters_weight_": ([5], "torch.float32", {"mean": 1.0, "std": 0.1})}
EDGE_SOFTMAX_META = {"L_x_": ([6, 4], "torch.float32", {"mean": 0.0, "std": 5.0}),
                     "L_edge_index_": ([2, 9], "torch.int64", {"min_val": 0, "max_val": 3}),
                     "L_self_parameters_att_": ([4], "torch.float32", {"mean": 1.0, "std": 2.0})}
BREAK_ITEM_META = {"L_x_": ([4, 8], "torch.float32", {"mean": 0.0, "std": 1.0}),
                   "L_self_modules_proj_parameters_weight_": ([16, 8], "torch.float32", {"mean": 0.0, "std": 0.5}),
                   "L_self_modules_bn_buffers_running_mean_": ([16], "torch.float32", {"mean": 0.0, "std": 0.5}),
                   "L_self_modules_bn_buffers_running_var_": ([16], "torch.float32",
                                                               {"mean": 0.2, "std": 1.0, "min_val": 0.0}),
                   "L_self_modules_bn_eps": ([], "torch.float32", {"data": [1e-3]})}
CONV_BN_META = {"L_x_": ([2, 3, 6, 6], "torch.float32", {"mean": 0.0, "std": 5.0}),
                "L_self_modules_stem_modules_0_parameters_weight_": ([4, 3, 3, 3], "torch.float32", {"mean": 0.0, "std": 1.0}),
                "L_self_modules_stem_modules_1_buffers_running_mean_": ([4], "torch.float32", {"mean": 0.1, "std": 0.5}),
                "L_self_modules_stem_modules_1_buffers_running_var_": ([4], "torch.float32",
                                                                       {"mean": 1.5, "std": 1.0, "min_val": 0.5}),
                "L_self_modules_stem_modules_1_parameters_weight_": ([4], "torch.float32", {"mean": 1.0, "std": 0.5}),
                "L_self_modules_stem_modules_1_parameters_bias_": ([4], "torch.float32", {"mean": 0.0, "std": 0.5})}
MASKED_EDGES_META = {"L_x_": ([5, 3], "torch.float32", {"mean": 0.0, "std": 5.0}),
                     "L_edge_index_": ([2, 12], "torch.int64", {"min_val": 0, "max_val": 4}),
                     "L_self_modules_lin_parameters_weight_": ([4, 3], "torch.float32", {"mean": 0.0, "std": 2.0}),
                     "L_self_modules_out_parameters_weight_": ([2, 4], "torch.float32", {"mean": 0.0, "std": 2.0})}
HALF_MASK_META = {"L_q_": ([1, 2, 4, 8], "torch.float16", {"mean": 0.0, "std": 5.0}),
                  "L_self_modules_k_proj_parameters_weight_": ([8, 8], "torch.float16", {"mean": 0.0, "std": 2.0})}
EMBEDDING_META = {"L_input_ids_": ([2, 6], "torch.int64", {"min_val": 3, "max_val": 9}),
                  "L_self_modules_emb_parameters_weight_": ([10, 8], "torch.float32", {"mean": 0.0, "std": 1.0})}


def _literal(value) -> str:
    """A meta field as GraphNet writes it: non-finite floats as float("nan"), float("inf")."""
    return f'float("{value}")' if isinstance(value, float) and not math.isfinite(value) else repr(value)


def meta_text(tensors: dict) -> str:
    blocks = []
    for name, (shape, dtype, extra) in tensors.items():
        fields = {"name": name, "shape": shape, "dtype": dtype, "device": "cuda:0", "mean": None, "std": None,
                  "data": None, **extra}
        body = "\n".join(f"    {k} = {_literal(v)}" for k, v in fields.items())
        blocks.append(f"class Program_weight_tensor_meta_{name}:\n{body}\n")
    return "\n\n".join(blocks)


def write_sample(folder: Path, model: str, tensors: dict, source: str = "timm") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.py").write_text(model)
    (folder / "weight_meta.py").write_text(meta_text(tensors))
    (folder / "input_meta.py").write_text("")
    (folder / "graph_net.json").write_text(json.dumps({"framework": "torch", "source": source}))
    return folder


# each sample's builder: write_sample(folder) with its model, its meta and its source
linear_cuda = partial(write_sample, model=LINEAR_CUDA, tensors=LINEAR_META)
embedding_int = partial(write_sample, model=EMBEDDING_INT, tensors=EMBEDDING_META, source="transformers-auto-model")
table_f32 = partial(write_sample, model=TABLE_F32, tensors=TABLE_META, source="transformers-auto-model")
edge_softmax = partial(write_sample, model=EDGE_SOFTMAX, tensors=EDGE_SOFTMAX_META, source="torchgeometric")
break_item = partial(write_sample, model=BREAK_ITEM, tensors=BREAK_ITEM_META)
conv_bn = partial(write_sample, model=CONV_BN, tensors=CONV_BN_META)
masked_edges = partial(write_sample, model=MASKED_EDGES, tensors=MASKED_EDGES_META, source="torchgeometric")
half_mask = partial(write_sample, model=HALF_MASK, tensors=HALF_MASK_META, source="transformers-auto-model")
