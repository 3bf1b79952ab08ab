# Achieved HBM bandwidth of PyTorch's own kernels for the memory-bound ops of a transformer
# layer (BF16, 4096 x 8192 elements = 67 MB per tensor, traffic >= 134 MB: beyond L2).
# Bytes = what each kernel must read and write once.
import torch, torch.nn.functional as F
from gpt_eager import dev, dt, timeit
R, C = 4096, 8192
n = R * C
x = torch.randn(R, C, device=dev, dtype=dt); y = torch.randn(R, C, device=dev, dtype=dt); g = torch.randn(R, C, device=dev, dtype=dt)
w = torch.ones(C, device=dev, dtype=dt); bias = torch.zeros(C, device=dev, dtype=dt)
out, mean, rstd = torch.ops.aten.native_layer_norm(x, [C], w, bias, 1e-5)
sm = torch.softmax(x, dim=-1)
cases = [
    ("add", lambda: x + y, 6 * n),
    ("gelu_tanh_fwd", lambda: F.gelu(x, approximate="tanh"), 4 * n),
    ("gelu_tanh_bwd", lambda: torch.ops.aten.gelu_backward(g, x, approximate="tanh"), 6 * n),
    ("dropout_fwd", lambda: torch.ops.aten.native_dropout(x, 0.1, True), 5 * n),
    ("layer_norm_fwd", lambda: torch.ops.aten.native_layer_norm(x, [C], w, bias, 1e-5), 4 * n),
    ("layer_norm_bwd", lambda: torch.ops.aten.native_layer_norm_backward(g, x, [C], mean, rstd, w, bias, [True, True, True]), 6 * n),
    ("rms_norm_fwd", lambda: F.rms_norm(x, [C], w, 1e-5), 4 * n),
    ("softmax_fwd", lambda: torch.softmax(x, dim=-1), 4 * n),
    ("softmax_bwd", lambda: torch.ops.aten._softmax_backward_data(g, sm, -1, dt), 6 * n),
]
print("# torch", torch.__version__, torch.cuda.get_device_name(0))
print("kernel,bytes,seconds,bytes_per_s")
for name, fn, nbytes in cases:
    t = timeit(fn, 50, warm=5)
    print(f"{name},{nbytes},{t:.6e},{nbytes / t:.6e}", flush=True)
