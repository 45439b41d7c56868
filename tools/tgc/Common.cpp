// Common.cpp — the helpers the tgc subcommands share (Cli.h).
#include "tools/tgc/Cli.h"

#include "driver/Compile.h"
#include "frontends/onnx/TensorIO.h"
#include "runtime/Text.h"
#include "tools/BuildInfo.h"

#include <cuda.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace tgc::cli {

int fail(const std::string &msg) {
  std::cerr << "tgc: error: " << msg << "\n";
  return 1;
}

bool parseInputShape(const std::string &spec, std::string &name, std::vector<int64_t> &dims,
                     std::string &err) {
  size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    err = "--input-shape '" + spec + "': expected NAME=DIMxDIM...";
    return false;
  }
  name = spec.substr(0, eq);
  std::stringstream ss(spec.substr(eq + 1));
  std::string d;
  while (std::getline(ss, d, 'x')) {
    char *end = nullptr;
    long long v = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end != '\0' || v <= 0) {
      err = "--input-shape '" + spec + "': dim '" + d + "' is not a positive integer";
      return false;
    }
    dims.push_back(v);
  }
  return true;
}

std::vector<std::string> numberedFiles(const std::string &dir, const std::string &prefix) {
  std::vector<std::pair<int, std::string>> found;
  std::regex re(prefix + "_([0-9]+)\\.pb");
  std::error_code ec;
  for (auto &e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    std::string f = e.path().filename().string();
    // Bounded length: std::stoi would throw (and abort the CLI) on input_99999999999.pb.
    if (std::regex_match(f, m, re) && m[1].length() <= 9)
      found.push_back({std::stoi(m[1]), e.path().string()});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto &p : found)
    out.push_back(p.second);
  return out;
}

bool readTensors(const std::vector<std::string> &files, std::vector<tgc::HostTensor> &out,
                 std::string &err) {
  for (const std::string &f : files) {
    auto t = tgc::readTensorProtoFile(f);
    if (!t) {
      err = llvm::toString(t.takeError());
      return false;
    }
    out.push_back(std::move(*t));
  }
  return true;
}

std::vector<tgc::HostTensor> randomInputs(const tgc::Session &s) {
  std::mt19937 rng(42);
  std::vector<tgc::HostTensor> in;
  for (const tgc::TensorSpec &spec : s.inputs()) {
    tgc::HostTensor t = tgc::HostTensor::zeros(spec.dtype, spec.shape, spec.name);
    bool isFloat = spec.dtype == tgc::DType::F32 || spec.dtype == tgc::DType::F64 ||
                   spec.dtype == tgc::DType::F16 || spec.dtype == tgc::DType::BF16;
    // Integers in [0, 10), or as much of it as lies in the range of an input that indexes a
    // Gather (from the range's start when it lies wholly on one side of 0).
    int64_t base = 0;
    uint64_t ints = spec.dtype == tgc::DType::Bool ? 2 : 10;
    if (spec.indexBounded) {
      base = std::clamp<int64_t>(0, spec.indexLo, spec.indexHi);
      ints = std::min<uint64_t>(ints, (uint64_t)(spec.indexHi - base) + 1);
    }
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, isFloat ? std::uniform_real_distribution<double>(-1, 1)(rng)
                       : double(base + (int64_t)(rng() % ints)));
    in.push_back(std::move(t));
  }
  return in;
}

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::unique_ptr<tgc::Session> loadSession(const std::string &pkg, int threads, std::string &err) {
  tgc::Status st;
  auto s = tgc::Session::load(pkg, st, threads);
  if (!s)
    err = st.message;
  return s;
}

double medianMicros(tgc::Session &s, const std::vector<tgc::HostTensor> &in, int warmup, int iters,
                    std::string &err) {
  std::vector<tgc::HostTensor> out;
  for (int i = 0; i < warmup; ++i) {
    tgc::Status st = s.run(in, out);
    if (!st.ok) {
      err = st.message;
      return -1;
    }
  }
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    s.run(in, out);
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                        .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

bool writeJson(const std::string &path, llvm::json::Value v) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return false;
  os << llvm::formatv("{0:2}", v) << "\n";
  os.close();
  return !os.has_error();
}

bool takeInputShapes(const std::vector<std::string> &specs, CompileOptions &o, std::string &err) {
  for (const std::string &spec : specs) {
    std::string name;
    std::vector<int64_t> dims;
    if (!parseInputShape(spec, name, dims, err))
      return false;
    if (!o.inputShapes.emplace(name, dims).second) {
      err = "--input-shape names input '" + tgc::escapeText(name) + "' twice";
      return false;
    }
  }
  return true;
}

/// A test set holds every graph input; a package compiled with --bind-input lacks the bound ones.
/// When the set has more inputs than the package, keeps those named like the package's inputs,
/// in the package's order.
bool dropBoundInputs(const Session &s, std::vector<HostTensor> &inputs, std::string &err) {
  if (inputs.size() <= s.inputs().size())
    return true;
  std::vector<HostTensor> kept;
  for (const TensorSpec &spec : s.inputs()) {
    auto it = std::find_if(inputs.begin(), inputs.end(),
                           [&](const HostTensor &t) { return t.name == spec.name; });
    if (it == inputs.end()) {
      err = "the test data has " + std::to_string(inputs.size()) + " inputs, the package " +
            std::to_string(s.inputs().size()) + ", and none is named '" + escapeText(spec.name) +
            "'";
      return false;
    }
    kept.push_back(std::move(*it));
  }
  inputs = std::move(kept);
  return true;
}

bool takeInputs(const std::string &testData, const std::vector<std::string> &inputFiles,
                const Session &s, std::vector<HostTensor> &inputs,
                std::vector<HostTensor> &expected, std::string &err) {
  if (!testData.empty()) {
    if (!fs::is_directory(testData)) {
      err = "--test-data '" + testData + "' is not a directory";
      return false;
    }
    if (!readTensors(numberedFiles(testData, "input"), inputs, err) ||
        !readTensors(numberedFiles(testData, "output"), expected, err))
      return false;
    return dropBoundInputs(s, inputs, err);
  }
  if (!inputFiles.empty())
    return readTensors(inputFiles, inputs, err);
  inputs = randomInputs(s);
  return true;
}

/// tgc's version, the commit it was built from, and the LLVM/MLIR and CUDA
/// headers it was built with (libcuda, NVRTC and cuBLASLt are found at run time).
std::string versionText() {
  return std::string("tgc ") + tgc::tgcVersion() + " (commit " + TGC_GIT_COMMIT + ")\n" +
         "built with LLVM/MLIR " + LLVM_VERSION_STRING + ", CUDA " +
         std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10) +
         " headers (driver, NVRTC and cuBLASLt are loaded at run time)";
}

} // namespace tgc::cli
