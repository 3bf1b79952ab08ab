# cuDNN's fused attention (PyTorch's SDPA picks it on Hopper) forward + backward, BF16, 16
# heads, 16k tokens, with attention dropout 0.1 (Megatron-LM's GPT default) against none.
import torch, torch.nn.functional as F
print("# torch", torch.__version__, torch.cuda.get_device_name(0))
print("heads,sequence,head_dim,causal,seconds_no_dropout,seconds_dropout_0.1,ratio")
for d in (64, 128):
    for s in (1024, 2048, 4096, 8192):
        b, h = 16384 // s, 16
        for causal in (False, True):
            q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
            g = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
            t = []
            for p in (0.0, 0.1):
                def step():
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=p).backward(g)
                for _ in range(3): step()
                torch.cuda.synchronize()
                a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(10): step()
                e.record(); torch.cuda.synchronize()
                t.append(a.elapsed_time(e) / 1e4)
            print(f"{h},{s},{d},{int(causal)},{t[0]:.6e},{t[1]:.6e},{t[1]/t[0]:.4f}", flush=True)
