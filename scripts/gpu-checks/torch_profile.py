# Where an eager PyTorch micro-batch of gpt-1.7b-h100x48's shape (sequence 4096, vocabulary
# 131072, 24 layers, hidden 2048) spends its time on the GPU: kernel time (union of kernel
# intervals) against wall time, kernel count, and the kernels by total time.
import torch
from torch.profiler import profile, ProfilerActivity
from gpt_eager import timeit, gpt_micro_batch
print("# torch", torch.__version__, torch.cuda.get_device_name(0))
micro, _ = gpt_micro_batch(2048, 16, 8192, 4096, 24, 131072)
t = timeit(micro, 4)
print(f"wall per micro-batch {t*1e3:.2f} ms", flush=True)
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(2): micro()
    torch.cuda.synchronize()
ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
iv = sorted((e.time_range.start, e.time_range.end) for e in ev)
busy, cur_s, cur_e = 0.0, None, None
for s, e in iv:
    if cur_e is None or s > cur_e:
        if cur_e is not None: busy += cur_e - cur_s
        cur_s, cur_e = s, e
    else: cur_e = max(cur_e, e)
if cur_e is not None: busy += cur_e - cur_s
span = iv[-1][1] - iv[0][0]
print(f"profiled 2 micro-batches: {len(ev)} GPU events, span {span/1e3:.2f} ms, GPU busy {busy/1e3:.2f} ms ({100*busy/span:.1f} %)")
tot = {}
for e in ev:
    k = e.name[:90]; c, d = tot.get(k, (0, 0.0)); tot[k] = (c + 1, d + (e.time_range.end - e.time_range.start))
for k, (c, d) in sorted(tot.items(), key=lambda kv: -kv[1][1])[:25]:
    print(f"{d/2e3:9.3f} ms/micro-batch {c//2:6d} calls  {k}")
