# What the PyTorch checks share: CUDA-event timing, an eager GPT layer (LayerNorm, QKV, causal
# SDPA with dropout, projection, dropout, residual, LayerNorm, MLP with tanh-GeLU), sharded as
# tensor parallel t would shard it, and a whole GPT micro-batch with logits and cross-entropy.
import torch, torch.nn as nn, torch.nn.functional as F
dev, dt = "cuda", torch.bfloat16
def timeit(fn, reps, warm=2):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps): fn()
    b.record(); torch.cuda.synchronize()
    return a.elapsed_time(b) / 1e3 / reps
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

def gpt_micro_batch(h, nh, ffn, seq, layers, V):
    """One micro-batch (batch 1) forward + backward, and the model's parameters."""
    emb = nn.Embedding(V, h).to(dev, dt); pos = nn.Embedding(seq, h).to(dev, dt)
    body = nn.ModuleList(Layer(h, nh, ffn, 1) for _ in range(layers)).to(dev, dt); lnf = nn.LayerNorm(h).to(dev, dt)
    tok = torch.randint(0, V, (seq, 1), device=dev); lab = torch.randint(0, V, (seq,), device=dev)
    def micro():
        x = F.dropout(emb(tok) + pos.weight[:, None, :], 0.1)
        for l in body: x = l(x)
        logits = lnf(x)[:, 0, :] @ emb.weight.t()
        F.cross_entropy(logits.float(), lab).backward()
    return micro, [emb, pos, body, lnf]
