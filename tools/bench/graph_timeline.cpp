// graph_timeline.cpp — a CUPTI injection library that records every kernel's start and end on the
// GPU, including the kernels inside replayed CUDA graphs, so the time of each graph node can be
// read where it runs (programmatic launch overlap, gaps between nodes), not alone as ncu times it.
//
// Build (here; CUDA toolkit headers and libcupti):
//   g++ -O2 -shared -fPIC -o graph_timeline.so tools/bench/graph_timeline.cpp \
//       -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,'$ORIGIN'
// Use (GPU machine): CUDA_INJECTION64_PATH=$PWD/graph_timeline.so TGC_TIMELINE_OUT=t.tsv \
//       tgc bench pkg --iters 50
// then `python3 tools/bench/graph_timeline.py t.tsv` for per-node figures of the last replays.
// Output: one line per kernel: correlation id, graph id, graph node id, start ns, end ns, name.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

FILE *out = nullptr;

void CUPTIAPI bufferRequested(uint8_t **buffer, size_t *size, size_t *maxNumRecords) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t *>(aligned_alloc(8, *size));
  *maxNumRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t validSize) {
  CUpti_Activity *rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, validSize, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const auto *k = reinterpret_cast<const CUpti_ActivityKernel10 *>(rec);
    if (out)
      std::fprintf(out, "%u\t%u\t%llu\t%llu\t%llu\t%s\n", k->correlationId, k->graphId,
                   (unsigned long long)k->graphNodeId, (unsigned long long)k->start,
                   (unsigned long long)k->end, k->name ? k->name : "?");
  }
  free(buffer);
}

void flushAtExit() {
  cuptiActivityFlushAll(1);
  if (out)
    std::fclose(out);
  out = nullptr;
}

} // namespace

extern "C" int InitializeInjection() {
  const char *path = std::getenv("TGC_TIMELINE_OUT");
  out = std::fopen(path ? path : "timeline.tsv", "w");
  if (!out)
    return 0;
  if (cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "graph_timeline: CUPTI activity tracing could not be enabled\n");
    return 0;
  }
  std::atexit(flushAtExit);
  return 1;
}
