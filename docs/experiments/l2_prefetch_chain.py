"""Does prefetching the next GEMMs' weights into L2 speed up a chain of library GEMMs at M = 128?

bert_base / llama_small layer shapes, fp16, torch.addmm (cuBLAS/cuBLASLt) in one CUDA graph, as
../shared/bench/gemm_floor.py. Variants (us per pass):
  cold      48 distinct weights (170 MB, > L2): every GEMM streams its weights from HBM
  hot       one layer's weights reused by every layer (fits in L2): the upper bound of prefetching
  pf-bulk-N a forked branch issues cp.async.bulk.prefetch.L2 for the weights of the GEMMs N ahead
  pf-line-N the same with one prefetch.global.L2::evict_last per 128-byte line
Run on the GPU machine: python3 docs/experiments/l2_prefetch_chain.py
"""
import torch, cupy

SRC = r"""
extern "C" __global__ void pf_bulk(const char* p, unsigned long long n) {
  const unsigned long long chunk = 4096;
  for (unsigned long long off = (blockIdx.x * blockDim.x + threadIdx.x) * chunk; off < n;
       off += (unsigned long long)gridDim.x * blockDim.x * chunk) {
    unsigned sz = (unsigned)(n - off < chunk ? n - off : chunk);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p + off), "r"(sz) : "memory");
  }
}
extern "C" __global__ void pf_line(const char* p, unsigned long long n) {
  for (unsigned long long off = (blockIdx.x * blockDim.x + threadIdx.x) * 128ull; off < n;
       off += (unsigned long long)gridDim.x * blockDim.x * 128ull)
    asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(p + off));
}
"""
mod = cupy.RawModule(code=SRC, options=("-std=c++17",))
K = {"bulk": (mod.get_function("pf_bulk"), 1, 32), "line": (mod.get_function("pf_line"), 4, 512)}
for g, b in ((16, 128), (32, 128), (66, 128), (132, 64)):
    K[f"line{g}x{b}"] = (mod.get_function("pf_line"), g, b)
for g, b in ((16, 32), (64, 32), (132, 32)):
    K[f"bulk{g}x{b}"] = (mod.get_function("pf_bulk"), g, b)
dev, dt = "cuda", torch.float16


def prefetch(kind, t):
    fn, grid, block = K[kind]
    ts = torch.cuda.current_stream()
    try:
        s = cupy.cuda.Stream.from_external(ts)
    except Exception:
        s = cupy.cuda.ExternalStream(ts.cuda_stream)
    with s:
        fn((grid,), (block,), (cupy.uint64(t.data_ptr()), cupy.uint64(t.numel() * t.element_size())))


def run(name, M, shapes, layers):
    torch.manual_seed(0)
    xs = {k: torch.randn(M, k, device=dev, dtype=dt) for k, _ in shapes}
    ws = [[torch.randn(n, k, device=dev, dtype=dt).t() for k, n in shapes] for _ in range(layers)]
    bs = [[torch.randn(n, device=dev, dtype=dt) for k, n in shapes] for _ in range(layers)]
    ys = {n: torch.empty(M, n, device=dev, dtype=dt) for _, n in shapes}

    def time_body(body):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for _ in range(3): body()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g): body()
        for _ in range(20): g.replay()
        torch.cuda.synchronize()
        res = []
        for _ in range(5):
            a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(100): g.replay()
            e.record(); torch.cuda.synchronize()
            res.append(a.elapsed_time(e) * 10)
        return sorted(res)[2]

    def chain(weights, pf=None, ahead=1):
        order = [(l, j) for l in range(layers) for j in range(len(shapes))]
        side = torch.cuda.Stream() if pf else None
        def body():
            main = torch.cuda.current_stream()
            if pf:
                side.wait_stream(main)
                with torch.cuda.stream(side):
                    for l, j in order[:ahead]: prefetch(pf, weights[l][j])
            for i, (l, j) in enumerate(order):
                if pf and i + ahead < len(order):
                    side.wait_stream(main)
                    with torch.cuda.stream(side):
                        l2, j2 = order[i + ahead]
                        prefetch(pf, weights[l2][j2])
                k, n = shapes[j]
                torch.addmm(bs[l][j], xs[k], weights[l][j], out=ys[n])
            if pf: main.wait_stream(side)
        return body

    hot = [ws[0]] * layers
    rows = [("cold", chain(ws)), ("hot", chain(hot))]
    for kind in [k for k in K if k not in ("bulk", "line")]:
        for ahead in (1, 2):
            rows.append((f"pf-{kind}-{ahead}", chain(ws, kind, ahead)))
    n_g = len(shapes) * layers
    for label, body in rows:
        us = time_body(body)
        print(f"{name:12s} {label:10s} {us:7.1f} us per pass  {us / n_g:5.2f} us per GEMM", flush=True)


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), flush=True)
    run("bert_base", 128, [(768, 2304), (768, 768), (768, 3072), (3072, 768)], 12)
    run("llama_small", 128, [(1024, 3072), (1024, 1024), (1024, 5632), (2816, 1024)], 8)
