// CudaBackend.cpp — writes a CUDA package: plan.pb, weights.bin, kernels.cu/.cubin/.ptx, plan.txt.
//
// The planner (codegen/planning) decides where every value lives; the emitter (CudaKernels.cpp,
// CudaRowKernels.cpp) writes CUDA C++ kernels and GEMM steps per top-level op; this file ties them
// into a plan, lays out the weights blob, and compiles kernels.cu with NVRTC (Nvrtc.cpp) into a
// cubin for the target arch, keeping the PTX for GPUs newer than the target. One translation
// unit per package: NVRTC's fixed cost is paid once, and the whole file is cached under
// `<cacheDir>/<xxh3(nvrtc version, arch, options, source)>.{cubin,ptx}`.
// Differences from the CPU package: GEMM steps (cuBLASLt at run time), launch shapes on every
// kernel step, a scratch area after the arena for GEMM results an epilogue reshapes, and no COPY
// steps — an output that is an input or a weight names that buffer as its source and the runtime
// copies it to the host from there.
#include "codegen/cuda/CudaBackend.h"

#include "codegen/common/LoopSteps.h"
#include "codegen/common/PackageUtil.h"

#include "codegen/cuda/CudaEmit.h"
#include "codegen/cuda/CudaMmaGemm.h"
#include "codegen/cuda/Nvrtc.h"
#include "runtime/schema/PlanUtil.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace mlir;

namespace tgc {

namespace {

using namespace codegen;

constexpr const char *kBackend = "CUDA backend";


/// NVRTC options (part of the cache key). No fast-math: the f32 results must match the
/// reference to ~1e-6.
const std::vector<std::string> kNvrtcOptions = {"-std=c++17", "--fmad=true"};

/// Compiles `code` for `arch` (or takes the result from the cache) into cubin + PTX.
llvm::Error compileKernels(const std::string &code, const std::string &arch,
                           const std::string &cacheDir, bool halfHeaders, std::string &cubin,
                           std::string &ptx, bool &cacheHit) {
  auto version = cuda::nvrtcVersion();
  if (!version)
    return version.takeError();
  std::vector<std::string> options = kNvrtcOptions;
  if (halfHeaders) {
    auto inc = cuda::cudaIncludeDir();
    if (!inc)
      return inc.takeError();
    options.push_back("-I" + *inc);
  }
  std::string key = "nvrtc " + *version + "\n" + arch + "\n";
  for (const auto &o : options)
    key += o + "\n";
  key += code;
  std::string base = cacheDir.empty() ? "" : cacheDir + "/" + hex64(plan::xxh3(key.data(), key.size()));
  if (!base.empty() && readFile(base + ".cubin", cubin) && readFile(base + ".ptx", ptx) &&
      !cubin.empty()) {
    cacheHit = true;
    return llvm::Error::success();
  }
  auto out = cuda::nvrtcCompile(code, "kernels.cu", arch, options);
  if (!out)
    return out.takeError();
  cubin = std::move(out->cubin);
  ptx = std::move(out->ptx);
  if (!base.empty() && !llvm::sys::fs::create_directories(cacheDir)) {
    // Publish atomically: write unique temporaries (unique across processes and threads), then
    // rename (ptx first: cubin marks done).
    for (auto [ext, data] : {std::pair<const char *, const std::string *>{".ptx", &ptx},
                             {".cubin", &cubin}}) {
      llvm::SmallString<256> tmp;
      if (llvm::sys::fs::createUniqueFile(base + ext + ".tmp-%%%%%%%%", tmp))
        break; // no .cubin without its .ptx
      if (!writeFile(tmp.str().str(), data->data(), data->size()) ||
          llvm::sys::fs::rename(tmp, base + ext))
        llvm::sys::fs::remove(tmp);
    }
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<std::string> cudaArchOf(const std::string &target) {
  const std::string prefix = "cuda:sm_";
  bool ok = target.rfind(prefix, 0) == 0 && target.size() > prefix.size() &&
            target.size() <= prefix.size() + 3;
  for (size_t i = prefix.size(); ok && i < target.size(); ++i)
    ok = target[i] >= '0' && target[i] <= '9';
  if (!ok)
    return backendError(
        kBackend, "target '" + target +
                      "' is not supported: not of the form cuda:sm_XY (e.g. "
                      "cuda:sm_90)");
  // The kernels use bf16 and the tensor-core instructions of sm_80 and later;
  // they are compiled and tested for sm_80 and sm_90 (sm_86/87/89 share sm_80's
  // instruction set).
  static const char *const kArchs[] = {"sm_80", "sm_86", "sm_87", "sm_89", "sm_90"};
  const std::string arch = target.substr(5);
  for (const char *a : kArchs)
    if (arch == a)
      return arch;
  return backendError(
      kBackend, "target '" + target +
                    "' is not supported: the CUDA backend generates code for "
                    "sm_80, sm_86, sm_87, sm_89 and sm_90, not " +
                    arch);
}

llvm::Expected<PackageStats> writeCudaPackage(ModuleOp module, const std::string &dir,
                                              const PackageInfo &info,
                                              const std::string &cacheDir) {
  auto arch = cudaArchOf(info.target);
  if (!arch)
    return arch.takeError();
  auto start = codegen::startPackage(module, info, info.target, "kernels.cubin", kBackend);
  if (!start)
    return start.takeError();
  func::FuncOp fn = start->fn;
  plan::Plan &p = start->plan;
  std::unique_ptr<BufferPlan> &plan = start->buffers;
  p.set_ptx_file("kernels.ptx");
  Block &body = fn.getBody().front();

  std::string kernels;
  cuda::KernelEmitter emitter(*plan);
  emitter.sm = std::stoi(arch->substr(3)); // "sm_90" (cudaArchOf checked the form)
  std::vector<cuda::EmittedStep> steps;
  int index = 0;
  for (Operation &op : body) {
    if (isa<tg::ConstantOp, tg::ReshapeOp>(op) || op.hasTrait<OpTrait::IsTerminator>())
      continue;
    if (codegen::isLoop(&op)) { // runs the body's own package (LoopSteps.h)
      steps.emplace_back().loop = &op;
      continue;
    }
    auto k = emitter.emit(&op, index++, kernels);
    if (!k)
      return k.takeError();
    steps.insert(steps.end(), k->begin(), k->end());
  }
  // Packages with f16/bf16 tensors (--precision, or a model's own): the CUDA half headers and
  // conversions go around the prelude. Read off the IR's types, not the emitted text.
  bool half = false;
  auto isHalf = [](Type t) {
    auto rt = t.dyn_cast<RankedTensorType>();
    return rt && (rt.getElementType().isF16() || rt.getElementType().isBF16());
  };
  fn.walk([&](Operation *o) {
    half = half || llvm::any_of(o->getOperandTypes(), isHalf) ||
           llvm::any_of(o->getResultTypes(), isHalf);
  });
  std::string code = half ? cuda::kHalfHeaders + cuda::prelude() + cuda::kHalfPrelude
                          : cuda::prelude();
  // tgc's tensor-core GEMMs for the (dtype, layout) pairs of the f16/bf16 GEMM steps.
  std::set<std::pair<int, bool>> mmaUses;
  for (const cuda::EmittedStep &es : steps)
    if (es.gemm && es.desc.dtype() != 1)
      mmaUses.insert({es.desc.dtype(), es.desc.trans_b()});
  code += cuda::mmaGemmSource(mmaUses);
  code += kernels;
  std::string().swap(kernels);
  const int64_t scratchOffset = plan->arenaBytes;
  PackageStats stats;
  std::vector<int> planIndex; // steps[i]'s index in the plan
  for (const cuda::EmittedStep &es : steps) {
    planIndex.push_back(p.steps_size());
    if (es.loop) {
      if (auto e = codegen::addLoopStep(es.loop, *plan, p, kBackend))
        return std::move(e);
      continue;
    }
    plan::Step *s = p.add_steps();
    s->set_kind(es.gemm ? plan::Step::GEMM : es.isConv ? plan::Step::CONV : plan::Step::KERNEL);
    if (es.isConv)
      *s->mutable_conv() = es.conv;
    if (es.attention.batch() > 0)
      *s->mutable_attention() = es.attention;
    s->set_symbol(es.symbol);
    s->set_label(es.label);
    s->set_skip_if_gemm_fused(es.skipIfGemmFused);
    if (es.gemm) {
      *s->mutable_gemm() = es.desc;
    } else {
      s->add_grid((uint32_t)es.grid), s->add_grid(1), s->add_grid(1);
      s->add_block((uint32_t)es.block), s->add_block(1), s->add_block(1);
      s->set_shared_bytes((uint32_t)es.sharedBytes);
      s->set_one_block_per_sm(es.oneBlockPerSm);
    }
    for (const cuda::StepArg &a : es.args) {
      plan::BufferArg b;
      if (!a.value) {
        b.set_kind(plan::ARENA);
        b.set_offset(scratchOffset + a.offset);
        b.set_bytes(a.bytes);
      } else {
        auto it = plan->locs.find(a.value);
        if (it == plan->locs.end() || it->second.kind == BufferLoc::Inline)
          return backendError(kBackend, "kernel argument without a buffer in " +
                                            es.symbol);
        b = toArg(it->second);
        b.set_offset(b.offset() + a.offset);
        if (a.bytes >= 0)
          b.set_bytes(a.bytes);
      }
      *s->add_args() = b;
    }
    ++stats.kernels;
  }

  // Norm kernels right after a GEMM that writes their input: marked for the runtime, which may
  // have the GEMM apply the norm (plan.proto Step.norm); the others keep no NormDesc.
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].norm.kind() == plan::NormDesc::NONE)
      continue;
    plan::Step *s = p.mutable_steps(planIndex[i]);
    *s->mutable_norm() = steps[i].norm;
    if (planIndex[i] > 0 && plan::gemmNormProblem(p.steps(planIndex[i] - 1), *s).empty())
      s->set_skip_if_gemm_fused(true);
    else
      s->clear_norm();
  }

  // Outputs: where each result lies after the last step (the arena, an input or a weight).
  if (auto e = codegen::addOutputs(p, fn, *plan, kBackend,
                                   [](unsigned, plan::TensorDesc &d, const BufferLoc &loc) {
                                     *d.mutable_source() = toArg(loc);
                                   }))
    return std::move(e);

  if (auto e = codegen::preparePackageDir(dir, kBackend))
    return std::move(e);

  if (auto e = codegen::writeWeights(p, *plan, dir, kBackend))
    return std::move(e);
  p.set_arena_bytes(plan->arenaBytes + emitter.scratchBytes());

  if (!writeFile(dir + "/kernels.cu", code.data(), code.size()))
    return backendError(kBackend, "cannot write " + dir + "/kernels.cu");
  std::string cubin, ptx;
  if (auto e = compileKernels(code, *arch, cacheDir, half, cubin, ptx,
                              stats.kernelCacheHit))
    return std::move(e);
  if (!writeFile(dir + "/kernels.cubin", cubin.data(), cubin.size()) ||
      !writeFile(dir + "/kernels.ptx", ptx.data(), ptx.size()))
    return backendError(kBackend, "cannot write the kernels into " + dir);
  p.set_kernels_xxh3(plan::xxh3(cubin.data(), cubin.size()));
  p.set_ptx_xxh3(plan::xxh3(ptx.data(), ptx.size()));

  if (auto e = codegen::writeLoopBodies(module, dir, info, cacheDir, writeCudaPackage, stats, kBackend))
    return std::move(e);
  if (auto e = codegen::writePlanFiles(p, dir, kBackend))
    return std::move(e);

  stats.arenaBytes = p.arena_bytes();
  stats.weightBytes = plan->weightBytes;
  return stats;
}

} // namespace tgc
