"""Small samples in GraphNet's format (model.py, weight_meta.py, input_meta.py, graph_net.json),
written by the tests that use them: a linear layer whose graph builds a tensor on `cuda:0`, an
embedding of int token ids, a float32 table the graph builds and multiplies with a weight, and
malformed ones."""
from __future__ import annotations

import json
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

# name -> (shape, dtype, extra fields)
LINEAR_META = {"L_x_": ([3, 5], "torch.float32", {"mean": 0.1, "std": 1.0}),
               "L_self_parameters_weight_": ([4, 5], "torch.float32", {"mean": 0.0, "std": 0.3}),
               "L_self_parameters_bias_": ([4], "torch.float32", {"data": [0.5, -0.25, 0.0, 1.0]}),
               "L_self_buffers_scale_": ([4], "torch.float32", {"mean": 1.0, "std": 0.5, "min_val": 0.75})}
TABLE_META = {"L_x_": ([6, 5], "torch.float32", {"mean": 0.0, "std": 1.0}),
              "L_self_modules_proj_parameters_weight_": ([4, 5], "torch.float32", {"mean": 0.0, "std": 0.5}),
              "L_self_modules_ln_parameters_weight_": ([5], "torch.float32", {"mean": 1.0, "std": 0.1})}
EMBEDDING_META = {"L_input_ids_": ([2, 6], "torch.int64", {"min_val": 3, "max_val": 9}),
                  "L_self_modules_emb_parameters_weight_": ([10, 8], "torch.float32", {"mean": 0.0, "std": 1.0})}


def meta_text(tensors: dict) -> str:
    blocks = []
    for name, (shape, dtype, extra) in tensors.items():
        fields = {"name": name, "shape": shape, "dtype": dtype, "device": "cuda:0", "mean": None, "std": None,
                  "data": None, **extra}
        body = "\n".join(f"    {k} = {v!r}" for k, v in fields.items())
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
