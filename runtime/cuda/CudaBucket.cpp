// CudaBucket.cpp — the CUDA side of a bucketed package (runtime/BucketSession.h): one context and
// stream, the weights uploaded once and one device arena of the largest bucket's size, and each
// bucket a CudaSession on them.
//
// Each bucket's module and GEMM plans are made at load; its GEMM tuning (or the tuning cache)
// and its CUDA graph capture happen at that bucket's first run, so a package's load time stays
// flat in its number of buckets and a bucket never run costs nothing but its module.
#include "runtime/BucketSession.h"
#include "runtime/BucketPlan.h"
#include "runtime/DecodePlan.h"
#include "runtime/Env.h"
#include "runtime/cuda/CudaSessionImpl.h"

namespace tgc::cuda {

namespace detail {

namespace {

/// Reads and checks the package's weights.bin against the top-level plan.
Status readSharedWeights(const std::string &dir, const plan::Plan &top, const std::string &pre,
                         std::string &bytes) {
  if (!plainFileName(top.weights_file()))
    return Status::error(pre + "weights file name '" + top.weights_file() + "' is invalid");
  Status st = readWhole(dir + "/" + top.weights_file(), kMaxBufferBytes, bytes, "weights");
  if (!st.ok)
    return Status::error(pre + st.message);
  if ((int64_t)bytes.size() != top.weights_bytes() ||
      plan::xxh3(bytes.data(), bytes.size()) != top.weights_xxh3())
    return Status::error(pre + top.weights_file() + " size or checksum mismatch (corrupt)");
  return Status::success();
}

class CudaBucketBackend final : public BucketBackend {
public:
  ~CudaBucketBackend() override {
    const Driver *d = sh_.d;
    if (!d)
      return;
    d->cuCtxSetCurrent(sh_.ctx);
    for (CUdeviceptr p : {sh_.weights, sh_.arena})
      if (p)
        d->cuMemFree(p);
    for (CUdeviceptr p : sh_.states)
      if (p)
        d->cuMemFree(p);
    if (sh_.stream)
      d->cuStreamDestroy(sh_.stream);
    if (ctxRetained_)
      d->cuDevicePrimaryCtxRelease(sh_.dev);
  }

  Status init(const std::string &dir, const plan::Plan &top, const std::string &pre) override {
    std::string weights, err;
    if (Status st = readSharedWeights(dir, top, pre, weights); !st.ok)
      return st;
    const Driver *d = loadDriver(err);
    if (!d)
      return Status::error(pre + err);
    auto fail = [&](const std::string &e) { return Status::error(pre + e); };
    std::string e;
    if (!(e = check(*d, d->cuInit(0), "cuInit")).empty())
      return fail(e);
    int ordinal = 0;
    if (const char *env = tgc::envValue(tgc::Env::CudaDevice); env && *env)
      ordinal = std::atoi(env);
    if (!(e = check(*d, d->cuDeviceGet(&sh_.dev, ordinal), "cuDeviceGet")).empty() ||
        !(e = check(*d, d->cuDevicePrimaryCtxRetain(&sh_.ctx, sh_.dev),
                    "cuDevicePrimaryCtxRetain")).empty())
      return fail(e);
    sh_.d = d; // from here the destructor releases what was made
    ctxRetained_ = true;
    char name[256] = {0};
    d->cuDeviceGetName(name, sizeof name - 1, sh_.dev);
    deviceName_ = name;
    arenaBytes_ = top.arena_bytes();
    weightBytes_ = top.weights_bytes();
    auto alloc = [&](CUdeviceptr &p, int64_t bytes, const char *what) {
      std::string e2 = check(*d, d->cuMemAlloc(&p, (size_t)std::max<int64_t>(bytes, 256)),
                             "cuMemAlloc");
      return e2.empty() ? e2 : e2 + " for the " + what + " (" + std::to_string(bytes) + " bytes)";
    };
    if (!(e = check(*d, d->cuCtxSetCurrent(sh_.ctx), "cuCtxSetCurrent")).empty() ||
        !(e = check(*d, d->cuStreamCreate(&sh_.stream, CU_STREAM_NON_BLOCKING),
                    "cuStreamCreate")).empty() ||
        !(e = alloc(sh_.weights, weightBytes_, "weights")).empty() ||
        !(e = alloc(sh_.arena, arenaBytes_, "arena")).empty())
      return fail(e);
    if (!weights.empty() &&
        !(e = check(*d, d->cuMemcpyHtoD(sh_.weights, weights.data(), weights.size()),
                    "cuMemcpyHtoD(weights)")).empty())
      return fail(e);
    if (!(e = check(*d, d->cuMemsetD8(sh_.arena, 0, (size_t)std::max<int64_t>(arenaBytes_, 256)),
                    "cuMemsetD8(arena)")).empty())
      return fail(e);
    // A decode package's states: one zeroed device allocation each, for the session's life.
    if (Status st = stateSizes(top, pre, sh_.stateBytes); !st.ok)
      return st;
    for (size_t k = 0; k < sh_.stateBytes.size(); ++k) {
      sh_.states.push_back(0);
      if (!(e = alloc(sh_.states.back(), sh_.stateBytes[k], "state")).empty() ||
          !(e = check(*d, d->cuMemsetD8(sh_.states.back(), 0, (size_t)sh_.stateBytes[k]),
                      "cuMemsetD8(state)")).empty())
        return fail("state " + std::to_string(k) + ": " + e);
    }
    return Status::success();
  }

  std::unique_ptr<Session> loadBucket(const std::string &dir, const plan::Plan &b,
                                      const std::string &pre, Status &st) override {
    auto s = std::make_unique<CudaSession>();
    st = s->initBucket(dir, b, pre, &sh_);
    if (!st.ok)
      return nullptr;
    return s;
  }

  Status switchTo(const plan::Plan &b) override {
    const Driver *d = sh_.d;
    std::string e = check(*d, d->cuCtxSetCurrent(sh_.ctx), "cuCtxSetCurrent");
    if (e.empty()) // on the stream the bucket's run follows on
      e = check(*d, d->cuMemsetD32Async(sh_.arena, 0,
                                        (size_t)std::min(b.arena_bytes(), arenaBytes_) / 4,
                                        sh_.stream),
                "cuMemsetD32Async(arena)");
    return e.empty() ? Status::success() : Status::error(e);
  }

  Status resetStates() override {
    const Driver *d = sh_.d;
    std::string e = check(*d, d->cuCtxSetCurrent(sh_.ctx), "cuCtxSetCurrent");
    for (size_t k = 0; e.empty() && k < sh_.states.size(); ++k) // before the next run's graph
      e = check(*d, d->cuMemsetD8Async(sh_.states[k], 0, (size_t)sh_.stateBytes[k], sh_.stream),
                "cuMemsetD8Async(state)");
    return e.empty() ? Status::success() : Status::error(e);
  }

  std::string describe() const override {
    int64_t states = 0;
    for (int64_t b : sh_.stateBytes)
      states += b;
    return "device: " + deviceName_ + "; weights: " + std::to_string(weightBytes_) +
           " bytes, arena: " + std::to_string(arenaBytes_) + " bytes" +
           (sh_.states.empty() ? std::string()
                               : ", states: " + std::to_string(sh_.states.size()) + " of " +
                                     std::to_string(states) + " bytes in all") +
           " on the device (one allocation each, one context and stream for every "
           "bucket; a bucket's GEMM tuning and CUDA graph capture happen at its first run)\n";
  }

private:
  CudaShared sh_;
  bool ctxRetained_ = false;
  std::string deviceName_;
  int64_t arenaBytes_ = 0, weightBytes_ = 0;
};

} // namespace

/// describeCudaPackageWithoutGpu for a bucketed package: every check but the GPU's.
std::string describeBucketsWithoutGpu(const std::string &path, const plan::Plan &top,
                                      const std::string &why, Status &st) {
  const std::string pre = "package '" + path + "': ";
  std::string weights;
  std::vector<int64_t> stateBytes;
  if (!(st = checkBucketedPlan(top, pre)).ok ||
      (isDecodePlan(top) && !(st = checkDecodePlan(top, pre)).ok) ||
      !(st = stateSizes(top, pre, stateBytes)).ok ||
      !(st = readSharedWeights(path, top, pre, weights)).ok)
    return "";
  std::string text = "package: " + path + "\ndevice: none usable here (" + why +
                     "); GEMM kernels are chosen when the package loads on a GPU\n" +
                     describeBuckets(top);
  for (int k = 0; k < top.buckets_size(); ++k) {
    CudaSession s;
    if (!(st = s.validateBucket(path, top.buckets(k), pre + "bucket " + std::to_string(k) + ": ",
                                stateBytes))
             .ok)
      return "";
    text += "\nbucket " + std::to_string(k) + ":\n" + s.planText();
  }
  if (isDecodePlan(top)) {
    CudaSession s;
    if (!(st = s.validateBucket(path, top.decode_step(), pre + "step plan: ", stateBytes)).ok)
      return "";
    text += "\nstep plan:\n" + s.planText();
  }
  return text;
}

} // namespace detail

std::unique_ptr<BucketBackend> makeCudaBucketBackend() {
  return std::make_unique<detail::CudaBucketBackend>();
}

} // namespace tgc::cuda
