// CpuBackend.cpp — writes a CPU package: plan.pb, weights.bin, kernels.cpp/.so and plan.txt.
//
// The planner (codegen/planning) decides where every value lives; the emitter (CpuKernels.cpp)
// writes one C++ kernel per top-level op; this file ties them into a plan, lays out the weights
// blob, and compiles kernels.cpp with the host compiler (`c++`, or $TGC_CXX) into kernels.so.
// Compiled objects are cached by the XXH3 64 hash of compiler + flags + source, so recompiling
// an unchanged model only copies a file. The compiler runs through llvm::sys::ExecuteAndWait
// (posix_spawn, no shell); its output goes to kernels.log in the package and is quoted in the
// error when it fails.
#include "codegen/cpu/CpuBackend.h"
#include "runtime/CpuLevel.h"
#include "runtime/Env.h"
#include "runtime/Text.h"

#include "codegen/common/LoopSteps.h"
#include "codegen/common/PackageUtil.h"

#include "codegen/cpu/CpuEmit.h"
#include "runtime/schema/PlanUtil.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace mlir;

namespace tgc {

namespace {

using namespace codegen;

constexpr const char *kBackend = "CPU backend";


/// Flags the kernels are compiled with (part of the cache key), for a target "cpu:<level>"
/// (runtime/CpuLevel.h): -march=<level>, or -march=native for cpu:native.
std::vector<std::string> cxxFlags(const std::string &target) {
  const std::string level = target.rfind("cpu:", 0) == 0 ? target.substr(4) : "x86-64-v2";
  return {"-std=c++17", "-O2",      "-march=" + level, "-fPIC",
          "-shared",    "-fopenmp", "-fwrapv",         "-fno-math-errno"};
}

/// The compiler command: $TGC_CXX (split on spaces, e.g. "ccache g++"), else clang++ when
/// installed (it vectorizes the kernels' float selects and polynomials, g++ 12 at -O2 does not:
/// 4x fewer instructions in tanh), else `c++`.
std::vector<std::string> compilerCommand() {
  std::vector<std::string> cmd;
  const char *env = tgc::envValue(tgc::Env::Cxx);
  const bool clang = !(env && *env) && llvm::sys::findProgramByName("clang++");
  std::istringstream ss(env && *env ? env : clang ? "clang++" : "c++");
  std::string w;
  while (ss >> w)
    cmd.push_back(w);
  return cmd;
}

/// Runs `argv` (argv[0] looked up on $PATH unless it holds a '/') with stdout+stderr into
/// `logPath`, through LLVM's process launcher (posix_spawn, no shell); on failure the error
/// quotes the compiler's first error from the log.
llvm::Error runCompiler(const std::vector<std::string> &argv, const std::string &logPath) {
  std::string program = argv[0];
  if (!llvm::StringRef(program).contains('/')) {
    llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(program);
    if (!found)
      return backendError(kBackend, "cannot run the host compiler '" + program +
                                        "': " + found.getError().message());
    program = *found;
  }
  std::vector<llvm::StringRef> args(argv.begin(), argv.end());
  llvm::sys::fs::remove(logPath); // LLVM opens redirect targets without O_TRUNC
  const llvm::Optional<llvm::StringRef> log(logPath);
  std::string why;
  bool notRun = false;
  int rc = llvm::sys::ExecuteAndWait(program, args, /*Env=*/llvm::None, {llvm::None, log, log},
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0, &why, &notRun);
  if (notRun)
    return backendError(kBackend, "cannot run the host compiler '" + argv[0] + "': " + why);
  if (rc == 0)
    return llvm::Error::success();
  std::string text;
  readFile(logPath, text);
  std::string cmd;
  for (const auto &a : argv)
    cmd += (cmd.empty() ? "" : " ") + a;
  return backendError(kBackend, "kernel compilation failed (" + cmd + "):\n" +
                                    (rc < 0 && !why.empty() ? why + "\n" : std::string()) +
                                    codegen::firstCompilerError(text));
}

} // namespace

namespace {

/// What writeCpuPackage writes, before anything is written: the plan, the kernels' source and
/// the buffer plan the weights are laid out by.
struct CpuLowering {
  plan::Plan p;
  std::string code;
  BufferPlan buffers;
  PackageStats stats;
};

llvm::Expected<CpuLowering> lower(ModuleOp module, const PackageInfo &info) {
  // Kernels and steps, in program order.
  auto start = codegen::startPackage(module, info, info.target.empty() ? "cpu" : info.target,
                                     "kernels.so", kBackend);
  if (!start)
    return start.takeError();
  func::FuncOp fn = start->fn;
  plan::Plan &p = start->plan;
  std::unique_ptr<BufferPlan> &plan = start->buffers;
  Block &body = fn.getBody().front();
  if (p.target() == "cpu:native")
    p.set_cpu_signature(cpuSignature()); // the only CPU such kernels are sure to run on

  std::string code = cpu::prelude();
  cpu::KernelEmitter emitter(*plan);
  PackageStats stats;
  for (Operation &op : body) {
    if (isa<tg::ConstantOp, tg::ReshapeOp>(op) || op.hasTrait<OpTrait::IsTerminator>() ||
        plan->views.count(&op)) // views: no kernel
      continue;
    if (codegen::isLoop(&op)) { // runs the body's own package (LoopSteps.h)
      if (auto e = codegen::addLoopStep(&op, *plan, p, kBackend))
        return std::move(e);
      continue;
    }
    auto k = emitter.emit(&op, p.steps_size(), code);
    if (!k)
      return k.takeError();
    plan::Step *s = p.add_steps();
    s->set_kind(plan::Step::KERNEL);
    s->set_symbol(k->symbol);
    s->set_label(k->label);
    for (Value v : k->args) {
      auto it = plan->locs.find(v);
      if (it == plan->locs.end() || it->second.kind == BufferLoc::Inline)
        return backendError(kBackend,
                            "kernel argument without a buffer in " + k->symbol);
      *s->add_args() = toArg(it->second);
    }
    ++stats.kernels;
  }

  // Outputs: arena values are copied out by the runtime; outputs that are an input or a weight
  // (or views of them) are written by a COPY step straight into the caller's output buffer.
  auto source = [&](unsigned i, plan::TensorDesc &d, const BufferLoc &loc) {
    if (loc.kind == BufferLoc::Arena) {
      *d.mutable_source() = toArg(loc);
      return;
    }
    plan::BufferArg dst;
    dst.set_kind(plan::OUTPUT);
    dst.set_index((int32_t)i);
    dst.set_offset(0);
    dst.set_bytes(loc.bytes);
    plan::Step *s = p.add_steps();
    s->set_kind(plan::Step::COPY);
    s->set_label("copy output '" + escapeText(d.name()) + "' from " +
                 (loc.kind == BufferLoc::Input ? "an input" : "a weight"));
    *s->add_args() = dst;
    *s->add_args() = toArg(loc);
    *d.mutable_source() = dst;
  };
  if (auto e = codegen::addOutputs(p, fn, *plan, kBackend, source))
    return std::move(e);
  return CpuLowering{std::move(p), std::move(code), std::move(*plan), stats};
}

} // namespace

llvm::Expected<std::string> emitCpuSource(ModuleOp module, const PackageInfo &info) {
  auto l = lower(module, info);
  if (!l)
    return l.takeError();
  return std::move(l->code);
}

llvm::Expected<PackageStats> writeCpuPackage(ModuleOp module, const std::string &dir,
                                             const PackageInfo &info,
                                             const std::string &cacheDir) {
  auto l = lower(module, info);
  if (!l)
    return l.takeError();
  plan::Plan &p = l->p;
  const std::string &code = l->code;
  BufferPlan *plan = &l->buffers;
  PackageStats &stats = l->stats;

  // Package directory: created, or replaced when it already holds a package.
  if (auto e = codegen::preparePackageDir(dir, kBackend))
    return std::move(e);

  if (auto e = codegen::writeWeights(p, *plan, dir, kBackend))
    return std::move(e);
  p.set_arena_bytes(plan->arenaBytes);

  // Kernels: write the source, then compile it (or take it from the cache).
  std::string src = dir + "/kernels.cpp", so = dir + "/kernels.so";
  if (!writeFile(src, code.data(), code.size()))
    return backendError(kBackend, "cannot write " + src);
  std::vector<std::string> cmd = compilerCommand();
  std::string key;
  for (const auto &a : cmd)
    key += a + "\n";
  const std::vector<std::string> flags = cxxFlags(p.target());
  for (const auto &f : flags)
    key += f + "\n";
  key += code;
  std::string hash = hex64(plan::xxh3(key.data(), key.size()));
  std::string cached = cacheDir.empty() ? "" : cacheDir + "/" + hash + ".so";
  if (!cached.empty() && llvm::sys::fs::exists(cached) &&
      !llvm::sys::fs::copy_file(cached, so)) {
    stats.kernelCacheHit = true;
  } else {
    std::vector<std::string> argv = cmd;
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-o", so, src, "-lopenblas"});
    if (auto e = runCompiler(argv, dir + "/kernels.log"))
      return std::move(e);
    llvm::sys::fs::remove(dir + "/kernels.log");
    if (!cached.empty() && !llvm::sys::fs::create_directories(cacheDir)) {
      // Publish atomically: copy to a unique temporary (unique across processes and threads),
      // then rename over the final name.
      llvm::SmallString<256> tmp;
      if (!llvm::sys::fs::createUniqueFile(cached + ".tmp-%%%%%%%%", tmp)) {
        if (llvm::sys::fs::copy_file(so, tmp) || llvm::sys::fs::rename(tmp, cached))
          llvm::sys::fs::remove(tmp);
      }
    }
  }
  uint64_t soHash;
  if (!plan::xxh3File(so, soHash))
    return backendError(kBackend, "cannot read " + so);
  p.set_kernels_xxh3(soHash);

  if (auto e = codegen::writeLoopBodies(module, dir, info, cacheDir, writeCpuPackage, stats, kBackend))
    return std::move(e);
  if (auto e = codegen::writePlanFiles(p, dir, kBackend))
    return std::move(e);

  stats.arenaBytes = plan->arenaBytes;
  stats.weightBytes = plan->weightBytes;
  return stats;
}

} // namespace tgc
