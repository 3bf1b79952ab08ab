# PyTorch's scaled_dot_product_attention (the backend PyTorch picks: flash or cuDNN on Hopper),
# forward + backward, BF16, [b, h, s, d]; FLOPs as the flash-attention benchmark counts them
# (3.5 x 4 s^2 d per sequence and head, halved when causal). Prints the attention-csv rows.
import sys, torch, torch.nn.functional as F
print("# torch", torch.__version__, torch.cuda.get_device_name(0), file=sys.stderr)
print("batch,heads,sequence,head_dim,causal,flops_per_s")
for d in (64, 128):
    for s in (512, 1024, 2048, 4096, 8192, 16384):
        b = max(1, 16384 // s)
        h = 2048 // d
        for causal in (False, True):
            q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
            def step():
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                o.backward(torch.ones_like(o))
            for _ in range(3): step()
            torch.cuda.synchronize()
            st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            n = 10
            st.record()
            for _ in range(n): step()
            en.record(); torch.cuda.synchronize()
            t = st.elapsed_time(en) / 1e3 / n
            flops = 3.5 * 4 * s * s * d * b * h * (0.5 if causal else 1.0)
            print(f"{b},{h},{s},{d},{int(causal)},{flops / t:.6e}", flush=True)
