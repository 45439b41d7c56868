// Common.cpp — the helpers the tgc subcommands share (Cli.h).
#include "tools/tgc/Cli.h"

#include "driver/Compile.h"
#include "frontends/onnx/TensorIO.h"
#include "tools/tgc/Npy.h"
#include "runtime/Text.h"
#include "tools/BuildInfo.h"

#include <cerrno>
#include <cuda.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <cmath>
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

bool parseInputShape(const std::string &spec, std::string &name, std::vector<DimRange> &dims,
                     std::string &err) {
  size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    err = "--input-shape '" + spec + "': expected NAME=DIMxDIM... (a dim may be a range A..B)";
    return false;
  }
  name = spec.substr(0, eq);
  std::stringstream ss(spec.substr(eq + 1));
  std::string d;
  auto number = [](const std::string &t, int64_t &v) {
    char *end = nullptr;
    errno = 0;
    long long x = std::strtoll(t.c_str(), &end, 10);
    v = x;
    return !t.empty() && *end == '\0' && errno == 0 && x > 0;
  };
  while (std::getline(ss, d, 'x')) {
    const size_t dots = d.find("..");
    DimRange r;
    // A fixed dim may be 0 (an empty past cache); a range's ends are positive.
    bool ok = dots == std::string::npos
                  ? (d == "0" ? (r.min = r.max = 0, true) : number(d, r.min) && (r.max = r.min, true))
                  : number(d.substr(0, dots), r.min) && number(d.substr(dots + 2), r.max);
    if (!ok) {
      err = "--input-shape '" + spec + "': dim '" + d +
            "' is not a dim (0, a positive integer) or a range A..B of positive integers";
      return false;
    }
    if (r.min > r.max) {
      err = "--input-shape '" + spec + "': range '" + d + "' is empty (its start exceeds its end)";
      return false;
    }
    dims.push_back(r);
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

std::vector<tgc::HostTensor> randomInputs(const tgc::Session &s,
                                          const std::vector<std::vector<int64_t>> &shapes) {
  std::mt19937 rng(42);
  std::vector<tgc::HostTensor> in;
  for (const tgc::TensorSpec &spec : s.inputs()) {
    const size_t i = in.size();
    tgc::HostTensor t = tgc::HostTensor::zeros(
        spec.dtype, i < shapes.size() && !shapes[i].empty() ? shapes[i] : spec.shape, spec.name);
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

std::vector<double> runMicros(tgc::Session &s, const std::vector<tgc::HostTensor> &in, int warmup,
                              int iters, std::string &err) {
  std::vector<tgc::HostTensor> out;
  std::vector<double> times;
  for (int i = 0; i < warmup + iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    tgc::Status st = s.run(in, out);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (!st.ok) {
      err = st.message;
      return {};
    }
    if (i >= warmup)
      times.push_back(us);
  }
  return times;
}

double medianMicros(tgc::Session &s, const std::vector<tgc::HostTensor> &in, int warmup, int iters,
                    std::string &err) {
  std::vector<double> times = runMicros(s, in, warmup, iters, err);
  if (times.empty())
    return -1;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double percentile(const std::vector<double> &sorted, double p) {
  size_t rank = (size_t)std::ceil(p / 100.0 * (double)sorted.size());
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

bool writeFileAtomic(const std::string &path, llvm::StringRef bytes, std::string &err) {
  llvm::SmallString<256> tmp;
  int fd = -1;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, tmp)) {
    err = "cannot write '" + path + "': " + ec.message();
    return false;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << bytes;
    os.close();
    if (os.has_error()) {
      err = "cannot write '" + path + "': " + os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(tmp);
      return false;
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path)) {
    err = "cannot write '" + path + "': " + ec.message();
    llvm::sys::fs::remove(tmp);
    return false;
  }
  return true;
}

bool writeJson(const std::string &path, llvm::json::Value v) {
  std::string text = llvm::formatv("{0:2}", v).str() + "\n", err;
  return writeFileAtomic(path, text, err);
}

std::string fileSafeName(const std::string &name, const std::string &fallback) {
  std::string out;
  for (char c : tgc::escapeText(name, 64)) // at most 3 bytes out per byte in: well under 255
    out += c == '/' ? std::string("%2F") : std::string(1, c);
  if (out.empty())
    return fallback;
  if (out[0] == '.')
    out = "%2E" + out.substr(1);
  return out;
}

bool takeInputShapes(const std::vector<std::string> &specs, CompileOptions &o, std::string &err) {
  for (const std::string &spec : specs) {
    std::string name;
    std::vector<DimRange> dims;
    if (!parseInputShape(spec, name, dims, err))
      return false;
    const bool ranged =
        std::any_of(dims.begin(), dims.end(), [](const DimRange &r) { return r.min != r.max; });
    std::vector<int64_t> fixed;
    for (const DimRange &r : dims)
      fixed.push_back(r.min);
    if (o.inputShapes.count(name) || o.inputRanges.count(name)) {
      err = "--input-shape names input '" + tgc::escapeText(name) + "' twice";
      return false;
    }
    if (ranged)
      o.inputRanges.emplace(name, dims);
    else
      o.inputShapes.emplace(name, fixed);
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

/// Reads one `--input` file: .npy by its magic, else a TensorProto (.pb).
bool readInputFile(const std::string &path, HostTensor &t, std::string &err) {
  char magic[6] = {};
  if (FILE *f = std::fopen(path.c_str(), "rb")) {
    size_t n = std::fread(magic, 1, sizeof magic, f);
    std::fclose(f);
    if (n == sizeof magic && std::memcmp(magic, "\x93NUMPY", 6) == 0)
      return readNpyFile(path, t, err);
  }
  if (llvm::StringRef(path).endswith(".npy"))
    return readNpyFile(path, t, err); // names the file and says it lacks the magic
  std::vector<HostTensor> one;
  if (!readTensors({path}, one, err))
    return false;
  t = std::move(one[0]);
  return true;
}

bool shapeInRange(const TensorSpec &spec, const std::vector<int64_t> &shape) {
  if (shape.size() != spec.shape.size())
    return false;
  for (size_t a = 0; a < shape.size(); ++a) {
    const int64_t lo = a < spec.minShape.size() ? spec.minShape[a] : spec.shape[a];
    if (shape[a] < lo || shape[a] > spec.shape[a])
      return false;
  }
  return true;
}

/// "[1..8, 128]": a spec's shape with each varying axis as its range.
static std::string rangeStr(const TensorSpec &w) {
  std::string r = "[";
  for (size_t a = 0; a < w.shape.size(); ++a) {
    const int64_t lo = a < w.minShape.size() ? w.minShape[a] : w.shape[a];
    r += (a ? ", " : "") + (lo != w.shape[a] ? std::to_string(lo) + ".." : std::string()) +
         std::to_string(w.shape[a]);
  }
  return r + "]";
}

bool shapesForRun(const std::vector<std::string> &specs, const Session &s,
                  std::vector<std::vector<int64_t>> &shapes, std::string &err) {
  const std::vector<TensorSpec> &want = s.inputs();
  shapes.assign(want.size(), {});
  for (const std::string &spec : specs) {
    std::string name;
    std::vector<DimRange> dims;
    if (!parseInputShape(spec, name, dims, err)) {
      err = "--shape" + err.substr(err.find('\''));
      return false;
    }
    auto it = std::find_if(want.begin(), want.end(),
                           [&](const TensorSpec &w) { return w.name == name; });
    if (it == want.end()) {
      err = "--shape names '" + escapeText(name) + "', which is not an input of the package";
      return false;
    }
    std::vector<int64_t> &shape = shapes[(size_t)(it - want.begin())];
    if (!shape.empty()) {
      err = "--shape names '" + escapeText(name) + "' twice";
      return false;
    }
    for (const DimRange &d : dims) {
      if (d.min != d.max) {
        err = "--shape '" + escapeText(spec) + "': give one shape (a range is for tgc compile)";
        return false;
      }
      shape.push_back(d.min);
    }
    if (!shapeInRange(*it, shape)) {
      err = "--shape '" + escapeText(spec) + "': input '" + escapeText(name) + "' takes " +
            dtypeName(it->dtype) + " " + rangeStr(*it);
      return false;
    }
  }
  return true;
}

bool takeNamedInputs(const std::vector<std::string> &specs, const Session &s,
                     std::vector<HostTensor> &inputs, std::string &err) {
  const std::vector<TensorSpec> &want = s.inputs();
  std::vector<HostTensor> byIndex(want.size());
  std::vector<bool> given(want.size(), false);
  auto expects = [](const TensorSpec &w) {
    return std::string(dtypeName(w.dtype)) + " " + rangeStr(w);
  };
  for (const std::string &spec : specs) {
    const size_t eq = spec.find("=@");
    if (eq == std::string::npos || eq == 0 || eq + 2 == spec.size()) {
      err = "--input '" + escapeText(spec) + "' is not NAME=@FILE (a .npy or TensorProto .pb file)";
      return false;
    }
    const std::string name = spec.substr(0, eq), path = spec.substr(eq + 2);
    auto it = std::find_if(want.begin(), want.end(),
                           [&](const TensorSpec &w) { return w.name == name; });
    if (it == want.end()) {
      std::string all;
      for (const TensorSpec &w : want)
        all += (all.empty() ? "'" : ", '") + escapeText(w.name) + "'";
      err = "--input names '" + escapeText(name) + "', which is not an input of the package " +
            "(inputs: " + all + ")";
      return false;
    }
    const size_t i = it - want.begin();
    if (given[i]) {
      err = "--input names '" + escapeText(name) + "' twice";
      return false;
    }
    HostTensor t;
    if (!readInputFile(path, t, err))
      return false;
    if (t.dtype == DType::F32 && it->dtype == DType::BF16) { // NumPy has no bfloat16
      HostTensor b = HostTensor::zeros(DType::BF16, t.shape);
      for (int64_t k = 0; k < t.numel(); ++k)
        b.set(k, t.get(k));
      t = std::move(b);
    }
    // NumPy has no float8 or 4-bit types: a u8 array holds float8 bits, an i8/u8 array int4/uint4
    // values (one a byte, in range).
    if (t.dtype == DType::U8 && isFloat8DType(it->dtype))
      t.dtype = it->dtype;
    if ((t.dtype == DType::I8 && it->dtype == DType::I4) ||
        (t.dtype == DType::U8 && it->dtype == DType::U4)) {
      const bool s4 = it->dtype == DType::I4;
      for (int64_t k = 0; k < t.numel(); ++k)
        if (t.getInt(k) < (s4 ? -8 : 0) || t.getInt(k) > (s4 ? 7 : 15)) {
          err = "--input " + escapeText(name) + ": '" + escapeText(path) + "' holds " +
                std::to_string(t.getInt(k)) + ", outside " + dtypeName(it->dtype) + "'s range";
          return false;
        }
      t.dtype = it->dtype;
    }
    if (t.dtype != it->dtype || !shapeInRange(*it, t.shape)) {
      err = "--input " + escapeText(name) + ": '" + escapeText(path) + "' holds " +
            dtypeName(t.dtype) + " " + shapeStr(t.shape) + ", the package expects " + expects(*it);
      return false;
    }
    t.name = name;
    byIndex[i] = std::move(t);
    given[i] = true;
  }
  std::string missing;
  for (size_t i = 0; i < want.size(); ++i)
    if (!given[i])
      missing += (missing.empty() ? "" : ", ") + ("'" + escapeText(want[i].name) + "' (") +
                 expects(want[i]) + ")";
  if (!missing.empty()) {
    err = "--input: no value for input " + missing + "; give each as NAME=@FILE.npy";
    return false;
  }
  inputs = std::move(byIndex);
  return true;
}

/// ONNX's test data hold bfloat16 tensors as UINT16 bits (NumPy has no bfloat16): a u16 tensor
/// where the package has a bf16 of that shape is read as those bf16 bits.
static void bf16FromBits(std::vector<HostTensor> &tensors, const std::vector<TensorSpec> &specs) {
  for (size_t i = 0; i < tensors.size() && i < specs.size(); ++i)
    if (tensors[i].dtype == DType::U16 && specs[i].dtype == DType::BF16 &&
        shapeInRange(specs[i], tensors[i].shape))
      tensors[i].dtype = DType::BF16;
}

bool takeInputs(const std::string &testData, const std::vector<std::string> &inputFiles,
                const std::vector<std::string> &namedInputs, const Session &s,
                std::vector<HostTensor> &inputs, std::vector<HostTensor> &expected,
                std::string &err) {
  if ((!testData.empty()) + (!inputFiles.empty()) + (!namedInputs.empty()) > 1) {
    err = "give inputs one way: --test-data, --inputs or --input";
    return false;
  }
  if (!testData.empty()) {
    if (!fs::is_directory(testData)) {
      err = "--test-data '" + testData + "' is not a directory";
      return false;
    }
    if (!readTensors(numberedFiles(testData, "input"), inputs, err) ||
        !readTensors(numberedFiles(testData, "output"), expected, err))
      return false;
    if (!dropBoundInputs(s, inputs, err))
      return false;
    bf16FromBits(inputs, s.inputs());
    bf16FromBits(expected, s.outputs());
    return true;
  }
  if (!inputFiles.empty())
    return readTensors(inputFiles, inputs, err);
  if (!namedInputs.empty())
    return takeNamedInputs(namedInputs, s, inputs, err);
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
