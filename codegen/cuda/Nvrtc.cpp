// Nvrtc.cpp — dlopen'ed NVRTC: load once, compile a program to cubin + PTX, return the log.
#include "codegen/cuda/Nvrtc.h"
#include "runtime/Env.h"

#include "codegen/common/EmitUtil.h"

#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>
#include <climits>
#include <mutex>

namespace tgc::cuda {

namespace {

using Program = void *;
struct Api {
  void *dl = nullptr;
  std::string error;
  const char *(*getErrorString)(int);
  int (*version)(int *, int *);
  int (*create)(Program *, const char *, const char *, int, const char *const *,
                const char *const *);
  int (*destroy)(Program *);
  int (*compile)(Program, int, const char *const *);
  int (*logSize)(Program, size_t *);
  int (*log)(Program, char *);
  int (*cubinSize)(Program, size_t *);
  int (*cubin)(Program, char *);
  int (*ptxSize)(Program, size_t *);
  int (*ptx)(Program, char *);
};

const Api &api() {
  static Api a;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> names;
    if (const char *env = tgc::envValue(tgc::Env::Nvrtc); env && *env)
      names.push_back(env);
    names.insert(names.end(), {"/usr/local/cuda/lib64/libnvrtc.so.13", "libnvrtc.so.13",
                               "libnvrtc.so.12", "libnvrtc.so"});
    for (const auto &n : names)
      if ((a.dl = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!a.dl) {
      a.error = "cannot load NVRTC (tried $TGC_NVRTC, /usr/local/cuda/lib64/libnvrtc.so.13, "
                "libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so)";
      return;
    }
    bool ok = true;
    auto sym = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(a.dl, name));
      if (!fn) {
        ok = false;
        a.error += std::string(a.error.empty() ? "" : ", ") + name;
      }
    };
    sym(a.getErrorString, "nvrtcGetErrorString");
    sym(a.version, "nvrtcVersion");
    sym(a.create, "nvrtcCreateProgram");
    sym(a.destroy, "nvrtcDestroyProgram");
    sym(a.compile, "nvrtcCompileProgram");
    sym(a.logSize, "nvrtcGetProgramLogSize");
    sym(a.log, "nvrtcGetProgramLog");
    sym(a.cubinSize, "nvrtcGetCUBINSize");
    sym(a.cubin, "nvrtcGetCUBIN");
    sym(a.ptxSize, "nvrtcGetPTXSize");
    sym(a.ptx, "nvrtcGetPTX");
    if (!ok) {
      a.error = "NVRTC lacks symbols: " + a.error;
      a.dl = nullptr;
    }
  });
  return a;
}

llvm::Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "CUDA backend: " + msg);
}

} // namespace

llvm::Expected<std::string> nvrtcVersion() {
  const Api &a = api();
  if (!a.dl)
    return fail(a.error);
  int major = 0, minor = 0;
  if (a.version(&major, &minor) != 0)
    return fail("nvrtcVersion failed");
  return std::to_string(major) + "." + std::to_string(minor);
}

llvm::Expected<std::string> cudaIncludeDir() {
  std::vector<std::string> dirs;
  if (const char *env = tgc::envValue(tgc::Env::CudaInclude); env && *env)
    dirs.push_back(env);
  const Api &a = api();
  Dl_info info;
  if (a.dl && dladdr(reinterpret_cast<void *>(a.version), &info) && info.dli_fname) {
    std::string lib = info.dli_fname;
    size_t slash = lib.rfind('/');
    if (slash != std::string::npos) {
      std::string dir = lib.substr(0, slash);
      dirs.push_back(dir + "/../include");
      dirs.push_back(dir + "/../../include");
    }
  }
  dirs.push_back("/usr/local/cuda/include");
  for (const std::string &d : dirs) {
    struct stat st;
    if (::stat((d + "/cuda_fp16.h").c_str(), &st) == 0 && ::stat((d + "/cuda_bf16.h").c_str(), &st) == 0) {
      char buf[PATH_MAX];
      return std::string(realpath(d.c_str(), buf) ? buf : d.c_str());
    }
  }
  std::string tried;
  for (const std::string &d : dirs)
    tried += (tried.empty() ? "" : ", ") + d;
  return fail("fp16/bf16 kernels need cuda_fp16.h and cuda_bf16.h; not found in " + tried +
              " (set $TGC_CUDA_INCLUDE)");
}

llvm::Expected<NvrtcOutput> nvrtcCompile(const std::string &source, const std::string &name,
                                         const std::string &arch,
                                         const std::vector<std::string> &options) {
  const Api &a = api();
  if (!a.dl)
    return fail(a.error);
  Program prog = nullptr;
  int rc = a.create(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (rc != 0)
    return fail(std::string("nvrtcCreateProgram: ") + a.getErrorString(rc));
  std::vector<std::string> opts = {"--gpu-architecture=" + arch};
  opts.insert(opts.end(), options.begin(), options.end());
  std::vector<const char *> copts;
  for (const auto &o : opts)
    copts.push_back(o.c_str());
  rc = a.compile(prog, (int)copts.size(), copts.data());
  NvrtcOutput out;
  size_t n = 0;
  if (a.logSize(prog, &n) == 0 && n > 1) {
    out.log.resize(n);
    a.log(prog, &out.log[0]);
    out.log.resize(n - 1);
  }
  auto take = [&](int (*size)(Program, size_t *), int (*get)(Program, char *),
                  std::string &dst) {
    size_t bytes = 0;
    if (size(prog, &bytes) != 0)
      return false;
    dst.resize(bytes);
    return bytes == 0 || get(prog, &dst[0]) == 0;
  };
  bool ok = rc == 0 && take(a.cubinSize, a.cubin, out.cubin) && take(a.ptxSize, a.ptx, out.ptx);
  a.destroy(&prog);
  if (rc != 0) {
    return fail("NVRTC failed to compile " + name + " for " + arch + " (" +
                a.getErrorString(rc) + "):\n" + codegen::firstCompilerError(out.log));
  }
  if (!ok)
    return fail("NVRTC compiled " + name + " but returned no cubin/PTX");
  return out;
}

} // namespace tgc::cuda
