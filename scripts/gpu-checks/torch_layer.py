# Cross-checks on one GPU with PyTorch (eager, BF16): (1) torch.matmul on the harness's GEMM
# shapes; (2) a GPT layer forward+backward (LayerNorm, QKV, causal SDPA, projection, dropout,
# residual, LayerNorm, MLP with tanh-GeLU), whole and sharded as tensor parallel t would shard
# it (no communication); (3) a whole small GPT's micro-batch forward+backward with logits and
# cross-entropy; (4) a fused AdamW step over fp32 parameters.
import sys, time, torch, torch.nn as nn, torch.nn.functional as F
torch.backends.cuda.matmul.allow_tf32 = False
dev, dt = "cuda", torch.bfloat16
def timeit(fn, reps, warm=2):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps): fn()
    b.record(); torch.cuda.synchronize()
    return a.elapsed_time(b) / 1e3 / reps
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
class Layer(nn.Module):
    def __init__(s, h, nh, ffn, tp):
        super().__init__()
        s.ln1, s.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        s.qkv, s.proj = nn.Linear(h, 3 * h // tp), nn.Linear(h // tp, h)
        s.fc1, s.fc2 = nn.Linear(h, ffn // tp), nn.Linear(ffn // tp, h)
        s.nh, s.d = nh // tp, h // nh
    def forward(s, x):
        S, B, H = x.shape
        q, k, v = s.qkv(s.ln1(x)).view(S, B, 3, s.nh, s.d).permute(2, 1, 3, 0, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.1)
        a = a.permute(2, 0, 1, 3).reshape(S, B, s.nh * s.d)
        x = x + F.dropout(s.proj(a), 0.1)
        return x + F.dropout(s.fc2(F.gelu(s.fc1(s.ln2(x)), approximate="tanh")), 0.1)
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
    h, nh, ffn, seq, layers, V = 2048, 16, 8192, 4096, 24, 131072
    emb = nn.Embedding(V, h).to(dev, dt); pos = nn.Embedding(seq, h).to(dev, dt)
    body = nn.ModuleList(Layer(h, nh, ffn, 1) for _ in range(layers)).to(dev, dt); lnf = nn.LayerNorm(h).to(dev, dt)
    tok = torch.randint(0, V, (seq, 1), device=dev); lab = torch.randint(0, V, (seq,), device=dev)
    def micro():
        x = F.dropout(emb(tok) + pos.weight[:, None, :], 0.1)
        for l in body: x = l(x)
        logits = lnf(x)[:, 0, :] @ emb.weight.t()
        F.cross_entropy(logits.float(), lab).backward()
    t = timeit(micro, 4)
    print(f"model gpt-1.7b seq{seq} mb1 fwd+bwd per micro-batch {t*1e3:.2f} ms", flush=True)
    params = [p for p in list(emb.parameters()) + list(pos.parameters()) + list(body.parameters()) + list(lnf.parameters())]
    n = sum(p.numel() for p in params); del body, emb, pos; torch.cuda.empty_cache()
    P = torch.zeros(n, device=dev, dtype=torch.float32, requires_grad=True); P.grad = torch.randn(n, device=dev)
    opt = torch.optim.AdamW([P], lr=1e-4, fused=True)
    t = timeit(opt.step, 5)
    print(f"fused AdamW fp32 over {n/1e9:.3f} G parameters: {t*1e3:.2f} ms ({n*16/t/1e12:.2f} TB/s at 16 B/param)", flush=True)
