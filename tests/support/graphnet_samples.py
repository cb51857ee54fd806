"""Small samples in GraphNet's format (model.py, weight_meta.py, input_meta.py, graph_net.json),
written by the tests that use them: a linear layer whose graph builds a tensor on `cuda:0`, an
embedding of int token ids, a float32 table the graph builds and multiplies with a weight, a softmax
over a graph's edges (torch_geometric's GAT: a scatter_reduce_ amax without self), a BatchNorm whose
eps the graph reads with `.item()` (Dynamo makes two graphs of it), and malformed ones."""
from __future__ import annotations

import json
import math
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


def linear_cuda(folder: Path) -> Path:
    return write_sample(folder, LINEAR_CUDA, LINEAR_META)


def embedding_int(folder: Path) -> Path:
    return write_sample(folder, EMBEDDING_INT, EMBEDDING_META, source="transformers-auto-model")


def table_f32(folder: Path) -> Path:
    return write_sample(folder, TABLE_F32, TABLE_META, source="transformers-auto-model")


def edge_softmax(folder: Path) -> Path:
    return write_sample(folder, EDGE_SOFTMAX, EDGE_SOFTMAX_META, source="torchgeometric")


def break_item(folder: Path) -> Path:
    return write_sample(folder, BREAK_ITEM, BREAK_ITEM_META)
