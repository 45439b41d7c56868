// CpuCompile.h — unit-test helpers: compile a model's bytes for the CPU backend (tgc::compile)
// in the test's temporary folder, load the package, run it. Header-only; the tests that use it
// depend on //driver:compile and //runtime.
#ifndef TGC_TESTS_UNIT_CPUCOMPILE_H
#define TGC_TESTS_UNIT_CPUCOMPILE_H

#include "driver/Compile.h"
#include "runtime/Session.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace tgc::test {

/// Bazel's per-test temporary folder (or /tmp).
inline std::string tmpDir() {
  const char *t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

/// Where compileForCpu(…, name) writes its package.
inline std::string cpuPackagePath(const std::string &name) {
  return tmpDir() + "/" + name + ".tgpkg";
}

/// Writes `modelBytes` as <tmp>/<name>.onnx and compiles it for the CPU into
/// cpuPackagePath(name) (kernel cache <tmp>/kcache): the compile error, "" on success.
inline std::string compileForCpu(const std::string &modelBytes, const std::string &name) {
  const std::string model = tmpDir() + "/" + name + ".onnx";
  std::ofstream(model, std::ios::binary | std::ios::trunc) << modelBytes;
  CompileOptions o;
  o.modelPath = model;
  o.outputPath = cpuPackagePath(name);
  o.target = llvm::cantFail(parseTarget("cpu"));
  o.cacheDir = tmpDir() + "/kcache";
  std::string log;
  llvm::raw_string_ostream os(log);
  auto r = compile(o, os);
  return r ? std::string() : llvm::toString(r.takeError());
}

/// compileForCpu, then the package loaded (1 thread); null, with a test failure, on error.
inline std::unique_ptr<Session> compileAndLoadCpu(const std::string &modelBytes,
                                                  const std::string &name) {
  const std::string err = compileForCpu(modelBytes, name);
  if (!err.empty()) {
    ADD_FAILURE() << err;
    return nullptr;
  }
  Status st;
  auto s = Session::load(cpuPackagePath(name), st, 1);
  if (!s)
    ADD_FAILURE() << st.message;
  return s;
}

/// Runs `s` on `inputs`; its outputs (a test failure when the run fails).
inline std::vector<HostTensor> runSession(Session &s, const std::vector<HostTensor> &inputs) {
  std::vector<HostTensor> out;
  Status st = s.run(inputs, out);
  EXPECT_TRUE(st.ok) << st.message;
  return out;
}

} // namespace tgc::test

#endif // TGC_TESTS_UNIT_CPUCOMPILE_H
