# Thunder 0.2.6 conv2d backward vs eager (bf16). Usage: python thunder_conv_bwd_repro.py [N C HW K groups stride]
import sys, time, warnings, torch, torch.nn.functional as F
def _standin(nm):  # torch>=2.13 removed these named-tensor methods; thunder 0.2.6 registers them at import
    def m(self, *a, **k): raise NotImplementedError(nm)
    m.__name__ = m.__qualname__ = nm; return m
for n in ("align_as", "align_to", "has_names", "refine_names", "rename"):
    if not hasattr(torch.Tensor, n): setattr(torch.Tensor, n, _standin(n))
warnings.simplefilter("ignore"); import thunder
dev = "cuda" if torch.cuda.is_available() else "cpu"; dt = torch.bfloat16 if dev == "cuda" else torch.float32
if dev == "cpu": torch.set_num_threads(1)  # CPU check only; the timings that matter are on GPU
N, C, HW, K, G, S = map(int, sys.argv[1:7]) if len(sys.argv) > 6 else (64, 128, 56, 7, 128, 1)  # convnext_base stage-1 dwconv
x = torch.randn(N, C, HW, HW, device=dev, dtype=dt, requires_grad=True)
w = torch.randn(C, C // G, K, K, device=dev, dtype=dt, requires_grad=True)
f = lambda x, w: F.conv2d(x, w, None, S, K // 2, 1, G)
gy = torch.randn_like(f(x, w))
def bench(fn, it=10):
    for _ in range(3): fn()
    if dev == "cuda": torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(it): fn()
    if dev == "cuda": torch.cuda.synchronize()
    return (time.perf_counter() - t) / it * 1e3
others = [e for e in thunder.get_default_executors() if e.name not in ("torchcompile", "nvfuser")]
fns = {"eager": f, "thunder(torch ex)": thunder.jit(f, executors=others),
       "thunder(torchcompile first)": thunder.jit(f, executors=[thunder.get_executor("torchcompile"), *others])}
for name, fn in fns.items():
    print(f"{name:28s} fwd {bench(lambda: fn(x, w)):8.2f} ms  fwd+bwd {bench(lambda: fn(x, w).backward(gy)):8.2f} ms")
bt = str(thunder.last_backward_traces(fns["thunder(torch ex)"])[-1])
print("\n".join(l for l in bt.splitlines() if "torch.convolution(" in l and not l.strip().startswith("#")))
# Isolate the weight gradient: aten's wgrad vs Thunder's formulation (transforms.py convolution_backward, 'weight grad')
p = K // 2; Ho = gy.shape[2]; hi = (Ho - 1) * S + K - (HW + p); gin = C // G
xt = F.pad(x.detach(), (p, hi, p, hi)); xt = xt.transpose(0, 1).reshape(G, gin, N, *xt.shape[2:]).transpose(0, 1).reshape(gin, G * N, *xt.shape[2:])
gyt = gy.transpose(0, 1)
wg_th = lambda: torch.convolution(xt, gyt, None, (1, 1), (0, 0), (S, S), False, (0, 0), G)
wg_at = lambda: torch.ops.aten.convolution_backward(gy, x, w, None, (S, S), (p, p), (1, 1), False, (0, 0), G, (False, True, False))
print(f"wgrad: aten.convolution_backward {bench(wg_at):8.2f} ms | Thunder-style conv(input {tuple(xt.shape)}, weight=grad {tuple(gyt.shape)}) {bench(wg_th):8.2f} ms")
print("max |diff| wgrad:", (wg_at()[1] - wg_th().transpose(0, 1)).abs().max().item())
