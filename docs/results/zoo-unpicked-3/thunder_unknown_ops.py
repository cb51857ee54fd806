"""Unknown ops in every Thunder stage of zoo models (tiny, fwd and fwd+bwd), e.g. after a change to the
Thunder adapter. From the repository root:
    python docs/results/zoo-unpicked-3/thunder_unknown_ops.py timm_resnet18 timm_mobilenetv3 ..."""
import sys
from irlens.frontends import get_frontend
from irlens.workloads.builtin import get_workload
fe = get_frontend("thunder")
for name in sys.argv[1:]:
    for mode in ("fwd", "fwdbwd"):
        inst = get_workload(name).instantiate()
        try:
            acq = fe.acquire(inst, mode)
        except Exception as e:
            print(name, mode, "acquire failed", type(e).__name__, str(e)[:100]); continue
        unk = {}
        for st in acq.stages.values():
            try:
                g = st.common()
            except Exception:
                continue
            if g is None: continue
            for k, v in g.unknown_ops().items(): unk[(st.name, k)] = v
        print(name, mode, "stages", len(acq.stages), "unknown", unk, flush=True)
