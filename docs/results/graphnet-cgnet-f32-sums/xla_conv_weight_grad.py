"""The weight gradient of CGNet's f_sur (a depthwise 3x3 convolution, dilation 2, 128 channels over
64x64: 4,096 terms per weight) in float32, eager torch and XLA (jax on the CPU, precision "highest"),
each against float64; inputs and output gradient of one sign, as the sample's are there (condition 1).
Upstream code only.

    python docs/results/graphnet-cgnet-f32-sums/xla_conv_weight_grad.py
(output: xla_conv_weight_grad-cpu.txt)
"""
import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.nn.functional as F

jax.config.update("jax_enable_x64", True)
C, H = 128, 64


def main():
    rng = np.random.default_rng(0)
    x, w = np.abs(rng.standard_normal((1, C, H, H))), rng.standard_normal((C, 1, 3, 3))
    cot = np.abs(rng.standard_normal((1, C, H, H)))

    def torch_grad(dtype):
        xt, wt = torch.tensor(x, dtype=dtype), torch.tensor(w, dtype=dtype, requires_grad=True)
        F.conv2d(xt, wt, None, 1, 2, 2, C).backward(torch.tensor(cot, dtype=dtype))
        return wt.grad.double().numpy()

    def xla_grad(dtype):
        def f(w_):
            y = jax.lax.conv_general_dilated(jnp.asarray(x, dtype), w_, (1, 1), ((2, 2), (2, 2)), rhs_dilation=(2, 2),
                                             feature_group_count=C, precision="highest")
            return jnp.sum(y * jnp.asarray(cot, dtype))
        return np.asarray(jax.jit(jax.grad(f))(jnp.asarray(w, dtype)), np.float64)

    ref = torch_grad(torch.float64)
    rel = lambda a: np.linalg.norm(a - ref) / np.linalg.norm(ref)  # noqa: E731
    print(f"torch {torch.__version__}, jax {jax.__version__}; weight gradient rel err: eager float32 "
          f"{rel(torch_grad(torch.float32)):.1e}, XLA float32 {rel(xla_grad(jnp.float32)):.1e}, "
          f"XLA float64 {rel(xla_grad(jnp.float64)):.1e}")


if __name__ == "__main__":
    main()
