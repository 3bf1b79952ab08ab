# Cross-checks on one GPU with PyTorch (eager, BF16): (1) torch.matmul on the harness's GEMM
# shapes; (2) a GPT layer forward+backward (LayerNorm, QKV, causal SDPA, projection, dropout,
# residual, LayerNorm, MLP with tanh-GeLU), whole and sharded as tensor parallel t would shard
# it (no communication); (3) a whole small GPT's micro-batch forward+backward with logits and
# cross-entropy; (4) a fused AdamW step over fp32 parameters.
import sys, torch
from gpt_eager import dev, dt, timeit, Layer, gpt_micro_batch
torch.backends.cuda.matmul.allow_tf32 = False
print("# torch", torch.__version__, torch.cuda.get_device_name(0), flush=True)
mode = sys.argv[1]
if mode == "gemm":
    print("b,m,n,k,torch_flops_per_s,harness_flops_per_s")
    for line in open("shapes.csv"):
        if not line[0].isdigit(): continue
        b, m, n, k, f = line.strip().split(","); m, n, k = int(m), int(n), int(k)
        A = torch.randn(m, k, device=dev, dtype=dt); B = torch.randn(k, n, device=dev, dtype=dt)
        t0 = timeit(lambda: A @ B, 1, 1)
        reps = max(3, min(200, int(0.02 / max(t0, 1e-6))))
        t = timeit(lambda: A @ B, reps)
        print(f"{b},{m},{n},{k},{2*m*n*k/t:.6e},{f}", flush=True)
        del A, B
    sys.exit()
def layer_case(name, h, nh, ffn, seq, tp, mb=1):
    L = Layer(h, nh, ffn, tp).to(dev, dt)
    x = torch.randn(seq, mb, h, device=dev, dtype=dt, requires_grad=True)
    g = torch.randn(seq, mb, h, device=dev, dtype=dt)
    fwd = timeit(lambda: L(x), 20)
    both = timeit(lambda: L(x).backward(g), 20)
    print(f"layer {name} h{h} heads{nh} ffn{ffn} seq{seq} tp{tp} mb{mb}: fwd {fwd*1e3:.3f} ms, fwd+bwd {both*1e3:.3f} ms", flush=True)
mode == "layers" and [layer_case(*c) for c in [
    ("gpt-1.7b", 2048, 16, 8192, 4096, 1), ("gpt-7.1b", 4096, 32, 16384, 4096, 2),
    ("gpt-16b", 6144, 48, 24576, 4096, 4), ("gpt-32b", 7168, 56, 28672, 4096, 8),
    ("gpt-70b", 8192, 64, 32768, 4096, 8), ("gpt3-175b", 12288, 96, 49152, 2048, 8)]]
if mode == "model":
    micro, modules = gpt_micro_batch(2048, 16, 8192, 4096, 24, 131072)
    t = timeit(micro, 4)
    print(f"model gpt-1.7b seq4096 mb1 fwd+bwd per micro-batch {t*1e3:.2f} ms", flush=True)
    n = sum(p.numel() for m in modules for p in m.parameters()); del micro, modules; torch.cuda.empty_cache()
    P = torch.zeros(n, device=dev, dtype=torch.float32, requires_grad=True); P.grad = torch.randn(n, device=dev)
    opt = torch.optim.AdamW([P], lr=1e-4, fused=True)
    t = timeit(opt.step, 5)
    print(f"fused AdamW fp32 over {n/1e9:.3f} G parameters: {t*1e3:.2f} ms ({n*16/t/1e12:.2f} TB/s at 16 B/param)", flush=True)
