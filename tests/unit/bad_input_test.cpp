// bad_input_test.cpp — the bad-input suite: one test per class of malformed model, package or
// runtime input (docs/hardening.md lists them), each checking for a clean error that names what
// and where. A few go through the `tgc` binary to check the exit code (1..127) and stderr.
//
// Models are built in C++ with the generated onnx.pb.h; packages are compiled from small `tg` IR
// and then corrupted on disk. Every check here fails if the validation it covers is removed.
#include "codegen/cpu/CpuBackend.h"
#include "runtime/schema/PlanUtil.h"
#include "compiler/dialect/TgDialect.h"
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/ModelLoader.h"
#include "frontends/onnx/TensorIO.h"
#include "frontends/onnx/onnx.pb.h"
#include "tests/unit/OnnxModelBuilder.h"
#include "tests/unit/TestFiles.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "runtime/Session.h"
#include "runtime/tgc_runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace tgc;

namespace {

std::string tmpRoot() {
  const char *t = std::getenv("TEST_TMPDIR");
  return t && *t ? t : "/tmp";
}

/// A fresh folder under the test's temp dir.
std::string freshDir(const std::string &name) {
  std::string d = tmpRoot() + "/bad_input_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

using test::readFile;
using test::writeFile;

bool contains(const std::string &s, const std::string &sub) {
  return s.find(sub) != std::string::npos;
}

// --- ModelProto construction ---

using Model = test::OnnxModel;
using test::attrInt;
using test::attrInts;

/// A model `y = x + w` around an initializer `w` that the caller fills.
Model addOfInit(onnx::TensorProto **w, int64_t n = 3) {
  Model m;
  m.input("x", onnx::TensorProto::FLOAT, {n});
  *w = m.g->add_initializer();
  (*w)->set_name("w");
  (*w)->set_data_type(onnx::TensorProto::FLOAT);
  (*w)->add_dims(n);
  m.node("Add", {"x", "w"}, {"y"}, "add");
  m.output("y");
  return m;
}

/// The import error of `bytes` ("" when it imports).
std::string importError(const std::string &bytes, const std::string &dir = "") {
  mlir::MLIRContext ctx;
  auto m = importOnnxBytes(ctx, bytes, dir, {});
  if (m)
    return "";
  return llvm::toString(m.takeError());
}
std::string importError(const Model &m, const std::string &dir = "") {
  return importError(m.bytes(), dir);
}

#define EXPECT_ERROR_HAS(err, ...)                                                                 \
  do {                                                                                             \
    const std::string e_ = (err);                                                                  \
    EXPECT_FALSE(e_.empty()) << "accepted but should have been refused";                          \
    for (const std::string &want_ : std::initializer_list<std::string>{__VA_ARGS__})                                                        \
      EXPECT_TRUE(contains(e_, want_)) << "missing '" << want_ << "' in: " << e_;                 \
  } while (0)

// --- The CLI, through its data dependency ---

struct CliResult {
  int code = -1; ///< exit code, or 128 + signal
  std::string err;
};

CliResult runCli(const std::string &args) {
  std::string errPath = tmpRoot() + "/bad_input_cli_stderr.txt";
  int rc = std::system(("tools/tgc " + args + " >/dev/null 2>'" + errPath + "'").c_str());
  CliResult r;
  r.code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
  r.err = readFile(errPath);
  return r;
}

#define EXPECT_CLI_FAILS(res, ...)                                                                 \
  do {                                                                                             \
    const CliResult r_ = (res);                                                                    \
    EXPECT_GE(r_.code, 1) << r_.err;                                                               \
    EXPECT_LE(r_.code, 127) << "crashed? " << r_.err;                                              \
    EXPECT_TRUE(contains(r_.err, "tgc: error: ")) << r_.err;                                      \
    for (const std::string &want_ : std::initializer_list<std::string>{__VA_ARGS__})                                                        \
      EXPECT_TRUE(contains(r_.err, want_)) << "missing '" << want_ << "' in: " << r_.err;         \
  } while (0)

/// Writes `m` as dir/model.onnx and runs `tgc compile` on it.
CliResult compileCli(const Model &m, const std::string &name) {
  std::string dir = freshDir("cli_" + name);
  writeFile(dir + "/model.onnx", m.bytes());
  return runCli("compile '" + dir + "/model.onnx' -o '" + dir + "/out.tgpkg' --target=cpu --no-cache");
}

// --- A small package to corrupt ---

const char *kPackageIR = R"(
func.func @main(%x: tensor<2x50xf32> {tg.name = "input_0"}, %k: tensor<1x32xi64> {tg.name = "ids"}) -> (tensor<2x50xf32> {tg.name = "y"}, tensor<1x32xi64> {tg.name = "ids_out"}) {
  %w = tg.constant dense<0.5> : tensor<50xf32>
  %lw = tg.constant dense<0.25> : tensor<50x50xf32>
  %0 = tg.linear %x, %lw : tensor<2x50xf32>, tensor<50x50xf32> -> tensor<2x50xf32>
  %1 = tg.add %0, %w : tensor<2x50xf32>, tensor<50xf32> -> tensor<2x50xf32>
  return %1, %k : tensor<2x50xf32>, tensor<1x32xi64>
}
)";

/// The package compiled once per test binary.
const std::string &goodPackage() {
  static const std::string dir = [] {
    mlir::MLIRContext ctx;
    ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>();
    auto module = mlir::parseSourceString<mlir::ModuleOp>(kPackageIR, &ctx);
    if (!module)
      return std::string();
    std::string d = tmpRoot() + "/bad_input_good.tgpkg";
    PackageInfo info;
    info.tgcVersion = "test";
    info.modelName = "bad_input";
    auto stats = writeCpuPackage(*module, d, info, tmpRoot() + "/bad_input_kcache");
    if (!stats) {
      llvm::consumeError(stats.takeError());
      return std::string();
    }
    return d;
  }();
  return dir;
}

std::string copyPackage(const std::string &name) {
  std::string d = tmpRoot() + "/bad_input_pkg_" + name;
  fs::remove_all(d);
  fs::copy(goodPackage(), d);
  return d;
}

plan::Plan readPlan(const std::string &d) {
  plan::Plan p;
  std::ifstream in(d + "/plan.pb", std::ios::binary);
  EXPECT_TRUE(p.ParseFromIstream(&in));
  return p;
}

void writePlan(const std::string &d, const plan::Plan &p) {
  // A consistent plan (self-checksum filled in), so deeper checks are what refuses it.
  std::string bytes;
  ASSERT_TRUE(tgc::plan::serializePlan(p, bytes));
  std::ofstream out(d + "/plan.pb", std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), bytes.size());
}

std::string loadError(const std::string &d) {
  Status st;
  auto s = Session::load(d, st);
  if (s)
    return "";
  EXPECT_FALSE(st.ok);
  return st.message;
}

std::vector<HostTensor> goodInputs() {
  HostTensor x = HostTensor::zeros(DType::F32, {2, 50}, "input_0");
  HostTensor k = HostTensor::zeros(DType::I64, {1, 32}, "ids");
  for (int i = 0; i < 100; ++i)
    x.as<float>()[i] = (float)i * 0.01f;
  return {x, k};
}

} // namespace

// 1. Truncated or garbage protobuf; a file over 2 GiB; a length that would wrap an int.
TEST(BadInput, G01_MalformedProtobuf) {
  EXPECT_ERROR_HAS(importError(std::string("\xff\xff\xff\xff garbage", 12)), "malformed");
  EXPECT_ERROR_HAS(importError(std::string()), "no graph");
  // Every strict prefix of a valid model is refused (fields are graph, then opset_import).
  Model m;
  m.input("x", onnx::TensorProto::FLOAT, {2});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y");
  const std::string good = m.bytes();
  ASSERT_EQ(importError(good), "");
  for (size_t cut = 0; cut < good.size(); ++cut)
    EXPECT_NE(importError(good.substr(0, cut)), "") << "prefix of " << cut << " bytes imported";
  // Field 7 (graph), length-delimited, with a length of 2^32 + 5 (wraps a 32-bit int to 5).
  EXPECT_ERROR_HAS(importError(std::string("\x3a\x85\x80\x80\x80\x10", 6) + good), "malformed");
  // A file over 2 GiB (sparse: no disk used) is refused before it is read.
  std::string dir = freshDir("huge");
  std::string huge = dir + "/huge.onnx";
  {
    std::ofstream(huge, std::ios::binary) << good;
  }
  ASSERT_EQ(::truncate(huge.c_str(), (off_t)onnx_import::kMaxProtoBytes + 1), 0);
  mlir::MLIRContext ctx;
  auto r = importOnnxFile(ctx, huge, {});
  ASSERT_FALSE(bool(r));
  EXPECT_ERROR_HAS(llvm::toString(r.takeError()), "huge.onnx", "2 GiB");
  auto t = readTensorProtoFile(huge);
  ASSERT_FALSE(bool(t));
  EXPECT_ERROR_HAS(llvm::toString(t.takeError()), "2 GiB");
  EXPECT_CLI_FAILS(runCli("compile '" + huge + "' -o '" + dir + "/o.tgpkg' --target=cpu"), "2 GiB");
  // Garbage through the CLI.
  writeFile(dir + "/garbage.onnx", "\x08\x01\x3a\xff\xff\xff\x7f");
  EXPECT_CLI_FAILS(runCli("compile '" + dir + "/garbage.onnx' -o '" + dir + "/o.tgpkg'"),
                   "garbage.onnx", "malformed");
}

namespace {
/// A model `y = x + w` with `w` ([2] f32) stored as external data at `location`.
Model externalModel(const std::string &location,
                    const std::vector<std::pair<std::string, std::string>> &extra = {}) {
  Model m;
  auto *t = m.g->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto *kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  for (auto &e : extra) {
    kv = t->add_external_data();
    kv->set_key(e.first);
    kv->set_value(e.second);
  }
  m.input("x", onnx::TensorProto::FLOAT, {2});
  m.node("Add", {"x", "w"}, {"y"}, "add");
  m.output("y");
  return m;
}
} // namespace

// 2. External data locations that leave the model's folder.
TEST(BadInput, G02_ExternalDataPathEscapes) {
  std::string dir = freshDir("paths");
  fs::create_directories(dir + "/a");
  writeFile(dir + "/w.bin", std::string(8, '\0'));
  writeFile(dir + "/a/w.bin", std::string(8, '\0'));
  ASSERT_EQ(importError(externalModel("w.bin"), dir), "");
  ASSERT_EQ(importError(externalModel("a/w.bin"), dir), "");
  ASSERT_EQ(importError(externalModel("./a/./w.bin"), dir), "");
  struct {
    const char *location, *expect;
  } cases[] = {
      {"..", "leaves the model's folder"},
      {"../w.bin", "leaves the model's folder"},
      {"a/../../x", "leaves the model's folder"},
      {"a/../w.bin", "leaves the model's folder"}, // even when it would land inside
      {"..\\w.bin", "leaves the model's folder"},
      {"a\\..\\..\\x", "leaves the model's folder"},
      {"/etc/passwd", "absolute path"},
      {"\\\\server\\share\\w.bin", "absolute path"},
      {"C:\\weights\\w.bin", "drive path"},
      {"c:w.bin", "drive path"},
      {"D:/w.bin", "drive path"},
      {"", "without a location"},
      {"./", "names no file"},
      {"a", "not a regular file"},
  };
  for (const auto &c : cases)
    EXPECT_ERROR_HAS(importError(externalModel(c.location), dir), "tensor 'w'", c.expect);
  std::string nul("w.bin\0x", 7);
  EXPECT_ERROR_HAS(importError(externalModel(nul), dir), "NUL");
  // No folder (in-memory model): no external data at all.
  EXPECT_ERROR_HAS(importError(externalModel("w.bin"), ""), "not loaded from a folder");
  // Through the CLI: the model file's folder is the base.
  Model m = externalModel("../../etc/passwd");
  EXPECT_CLI_FAILS(compileCli(m, "escape"), "tensor 'w'", "leaves the model's folder");
}

// 3. External data through symlinks (file or directory) or with several hard links.
TEST(BadInput, G03_ExternalDataSymlinksAndHardLinks) {
  std::string dir = freshDir("links");
  std::string outside = freshDir("links_outside");
  writeFile(outside + "/secret.bin", std::string(8, '\0'));
  fs::create_directories(dir + "/real");
  writeFile(dir + "/real/w.bin", std::string(8, '\0'));
  writeFile(dir + "/w.bin", std::string(8, '\0'));
  ASSERT_EQ(::symlink((outside + "/secret.bin").c_str(), (dir + "/out.bin").c_str()), 0);
  ASSERT_EQ(::symlink("w.bin", (dir + "/in.bin").c_str()), 0); // even a link inside the folder
  ASSERT_EQ(::symlink(outside.c_str(), (dir + "/outdir").c_str()), 0);
  ASSERT_EQ(::symlink("real", (dir + "/realdir").c_str()), 0);
  writeFile(outside + "/linked.bin", std::string(8, '\0'));
  ASSERT_EQ(::link((outside + "/linked.bin").c_str(), (dir + "/hard.bin").c_str()), 0);
  ASSERT_EQ(importError(externalModel("real/w.bin"), dir), "");
  EXPECT_ERROR_HAS(importError(externalModel("out.bin"), dir), "tensor 'w'", "symlink");
  EXPECT_ERROR_HAS(importError(externalModel("in.bin"), dir), "symlink");
  EXPECT_ERROR_HAS(importError(externalModel("outdir/secret.bin"), dir), "symlink", "outdir");
  EXPECT_ERROR_HAS(importError(externalModel("realdir/w.bin"), dir), "symlink", "realdir");
  EXPECT_ERROR_HAS(importError(externalModel("hard.bin"), dir), "tensor 'w'", "hard links");
  // The model folder itself may be reached through a symlink (only the location is confined).
  std::string linkedDir = tmpRoot() + "/bad_input_links_alias";
  fs::remove(linkedDir);
  ASSERT_EQ(::symlink(dir.c_str(), linkedDir.c_str()), 0);
  EXPECT_EQ(importError(externalModel("w.bin"), linkedDir), "");
}

// 4. external_data keys: negative, non-numeric or duplicate offset/length/location; unknown keys.
TEST(BadInput, G04_ExternalDataKeys) {
  std::string dir = freshDir("keys");
  writeFile(dir + "/w.bin", std::string(16, '\0'));
  ASSERT_EQ(importError(externalModel("w.bin", {{"offset", "8"}, {"length", "8"}}), dir), "");
  ASSERT_EQ(importError(externalModel("w.bin", {{"checksum", "abc"}}), dir), "");
  struct {
    std::vector<std::pair<std::string, std::string>> extra;
    const char *expect;
  } cases[] = {
      {{{"offset", "-8"}}, "offset '-8' is not a non-negative integer"},
      {{{"offset", "abc"}}, "offset 'abc'"},
      {{{"offset", "+8"}}, "offset '+8'"},
      {{{"offset", " 8"}}, "offset ' 8'"},
      {{{"offset", "8 "}}, "offset '8 '"},
      {{{"offset", "0x8"}}, "offset '0x8'"},
      {{{"offset", ""}}, "offset ''"},
      {{{"offset", "99999999999999999999999"}}, "offset '99999999999999999999999'"},
      {{{"length", "-1"}}, "length '-1'"},
      {{{"length", "8.0"}}, "length '8.0'"},
      {{{"offset", "0"}, {"offset", "0"}}, "key 'offset' appears twice"},
      {{{"length", "8"}, {"length", "8"}}, "key 'length' appears twice"},
      {{{"location", "w.bin"}}, "key 'location' appears twice"},
      {{{"color", "red"}}, "unknown external_data key 'color'"},
      {{{"Offset", "0"}}, "unknown external_data key 'Offset'"},
  };
  for (const auto &c : cases)
    EXPECT_ERROR_HAS(importError(externalModel("w.bin", c.extra), dir), "tensor 'w'", c.expect);
  // External keys on a tensor that is not marked EXTERNAL, and both raw_data and external data.
  Model m = externalModel("w.bin");
  m.g->mutable_initializer(0)->set_data_location(onnx::TensorProto::DEFAULT);
  m.g->mutable_initializer(0)->set_raw_data(std::string(8, '\0'));
  EXPECT_ERROR_HAS(importError(m, dir), "data_location is not EXTERNAL");
  m.g->mutable_initializer(0)->set_data_location(onnx::TensorProto::EXTERNAL);
  EXPECT_ERROR_HAS(importError(m, dir), "both raw_data and external data");
}

// 5. Ranges beyond the file; a length that differs from the declared tensor bytes.
TEST(BadInput, G05_ExternalDataRanges) {
  std::string dir = freshDir("ranges");
  writeFile(dir + "/w.bin", std::string(12, '\0')); // 12 bytes; the tensor needs 8
  ASSERT_EQ(importError(externalModel("w.bin", {{"offset", "4"}}), dir), "");
  struct {
    std::vector<std::pair<std::string, std::string>> extra;
    std::vector<const char *> expect;
  } cases[] = {
      {{{"offset", "8"}}, {"range [8, 8 + 8)", "beyond the end", "(12 bytes)"}},
      {{{"offset", "13"}}, {"offset 13 is beyond the end"}},
      {{{"offset", "18446744073709551615"}}, {"is not a non-negative integer"}}, // > 19 digits
      {{{"offset", "9999999999999999999"}}, {"beyond the end"}}, // would wrap offset + length
      {{{"offset", "9223372036854775807"}, {"length", "8"}}, {"beyond the end"}},
      {{{"length", "4"}}, {"length 4 differs from the 8 bytes"}},
      {{{"length", "12"}}, {"length 12 differs from the 8 bytes"}},
      {{{"offset", "4"}, {"length", "16"}}, {"length 16 differs"}},
  };
  for (const auto &c : cases) {
    std::string e = importError(externalModel("w.bin", c.extra), dir);
    EXPECT_TRUE(contains(e, "tensor 'w'")) << e;
    for (const char *want : c.expect)
      EXPECT_TRUE(contains(e, want)) << "missing '" << want << "' in: " << e;
  }
  writeFile(dir + "/short.bin", std::string(4, '\0'));
  EXPECT_ERROR_HAS(importError(externalModel("short.bin"), dir), "beyond the end", "(4 bytes)");
}

// 6. raw_data whose size is not product(dims) x element size.
TEST(BadInput, G06_RawDataSize) {
  struct {
    int dtype;
    std::vector<int64_t> dims;
    size_t bytes;
    const char *expect;
  } cases[] = {
      {onnx::TensorProto::FLOAT, {3}, 8, "raw_data is 8 bytes but f32 3 needs 12 (too short)"},
      {onnx::TensorProto::FLOAT, {3}, 16, "(too long)"},
      {onnx::TensorProto::FLOAT, {3}, 11, "raw_data is 11 bytes"}, // not a multiple of 4
      {onnx::TensorProto::INT64, {2, 2}, 31, "needs 32"},
      {onnx::TensorProto::FLOAT16, {3}, 5, "needs 6"},
      {onnx::TensorProto::FLOAT, {0}, 4, "needs 0"},
      {onnx::TensorProto::FLOAT, {}, 0, "needs 4"}, // a scalar is one element
  };
  for (const auto &c : cases) {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {3});
    auto *t = m.g->add_initializer();
    t->set_name("w");
    t->set_data_type(c.dtype);
    for (int64_t d : c.dims)
      t->add_dims(d);
    t->set_raw_data(std::string(c.bytes, '\0'));
    m.node("Identity", {"w"}, {"y"}, "id");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "tensor 'w'", c.expect);
  }
  // The same check applies to TensorProto files read by `tgc run --inputs`.
  onnx::TensorProto t;
  t.set_name("in0");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(4);
  t.set_raw_data(std::string(15, '\0'));
  std::string dir = freshDir("raw");
  writeFile(dir + "/input_0.pb", t.SerializeAsString());
  auto r = readTensorProtoFile(dir + "/input_0.pb");
  ASSERT_FALSE(bool(r));
  EXPECT_ERROR_HAS(llvm::toString(r.takeError()), "input_0.pb", "tensor 'in0'", "15 bytes");
}

// 7. Typed data fields shorter (or longer) than the shape declares.
TEST(BadInput, G07_TypedFieldsCount) {
  auto tensor = [](Model &m, int dtype, int64_t n) {
    auto *t = m.g->add_initializer();
    t->set_name("w");
    t->set_data_type(dtype);
    t->add_dims(n);
    m.node("Identity", {"w"}, {"y"}, "id");
    m.output("y");
    return t;
  };
  {
    Model m;
    auto *t = tensor(m, onnx::TensorProto::FLOAT, 4);
    t->add_float_data(1);
    t->add_float_data(2);
    EXPECT_ERROR_HAS(importError(m), "tensor 'w'", "float_data has 2 values but the dims 4 declare 4");
  }
  {
    Model m;
    auto *t = tensor(m, onnx::TensorProto::INT64, 3);
    t->add_int64_data(1);
    EXPECT_ERROR_HAS(importError(m), "int64_data has 1 values");
  }
  {
    Model m;
    auto *t = tensor(m, onnx::TensorProto::DOUBLE, 2);
    for (int i = 0; i < 3; ++i)
      t->add_double_data(i);
    EXPECT_ERROR_HAS(importError(m), "double_data has 3 values but the dims 2 declare 2");
  }
  for (int dt : {onnx::TensorProto::INT32, onnx::TensorProto::INT8, onnx::TensorProto::UINT8,
                 onnx::TensorProto::BOOL, onnx::TensorProto::FLOAT16}) {
    Model m;
    auto *t = tensor(m, dt, 5);
    t->add_int32_data(1);
    EXPECT_ERROR_HAS(importError(m), "int32_data has 1 values but the dims 5 declare 5");
  }
  {
    // Huge dims with one value fail before allocating.
    Model m;
    auto *t = tensor(m, onnx::TensorProto::FLOAT, int64_t(1) << 40);
    t->add_float_data(1);
    EXPECT_ERROR_HAS(importError(m), "float_data has 1 values");
  }
}

// 8. Negative dims, dims whose product overflows int64, absurd rank.
TEST(BadInput, G08_DimsAndRank) {
  {
    onnx::TensorProto *w;
    Model m = addOfInit(&w);
    w->set_dims(0, -3);
    EXPECT_ERROR_HAS(importError(m), "tensor 'w'", "negative dim -3");
  }
  {
    onnx::TensorProto *w;
    Model m = addOfInit(&w);
    w->set_dims(0, int64_t(1) << 32);
    w->add_dims(int64_t(1) << 32); // 2^64 elements
    EXPECT_ERROR_HAS(importError(m), "tensor 'w'", "overflow");
  }
  {
    onnx::TensorProto *w;
    Model m = addOfInit(&w);
    w->set_dims(0, INT64_MAX / 2);
    w->add_dims(3);
    EXPECT_ERROR_HAS(importError(m), "overflow");
  }
  {
    onnx::TensorProto *w;
    Model m = addOfInit(&w);
    w->set_dims(0, 1);
    for (int i = 0; i < 64; ++i) // rank 65, one element
      w->add_dims(1);
    w->set_raw_data(std::string(4, '\0'));
    EXPECT_ERROR_HAS(importError(m), "tensor 'w'", "rank 65 exceeds the limit of 64");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2, -5});
    m.node("Relu", {"x"}, {"y"});
    m.output("y");
    // A negative dim_value in a graph input is not a static dim: it must be given.
    EXPECT_ERROR_HAS(importError(m), "graph input 'x'");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {int64_t(1) << 40, int64_t(1) << 40});
    m.node("Relu", {"x"}, {"y"});
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "graph input 'x'", "overflows");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, std::vector<int64_t>(100, 1));
    m.node("Relu", {"x"}, {"y"});
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "graph input 'x'", "rank 100 exceeds the limit of 64");
  }
  {
    // An op result of absurd rank (Reshape to 65 dims of 1).
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {1});
    m.initI64("shape", std::vector<int64_t>(65, 1));
    m.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Reshape 'reshape'", "rank 65 exceeds the limit of 64");
  }
}

// 9. Undefined names, names defined twice, cycles.
TEST(BadInput, G09_GraphStructure) {
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2});
    m.node("Relu", {"x"}, {"y"}, "relu");
    m.output("nowhere");
    EXPECT_ERROR_HAS(importError(m), "graph output 'nowhere' is not defined");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2});
    m.node("Add", {"x", "ghost"}, {"y"}, "adder");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Add 'adder'", "input 'ghost' is not defined");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2});
    m.node("Relu", {"x"}, {"y"}, "r1");
    m.node("Neg", {"x"}, {"y"}, "r2");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Neg 'r2'", "output 'y' is already defined by Relu 'r1'");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2});
    m.node("Relu", {"x"}, {"x"}, "shadow");
    m.output("x");
    EXPECT_ERROR_HAS(importError(m), "Relu 'shadow'", "already defined by a graph input");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2});
    m.input("x", onnx::TensorProto::FLOAT, {2});
    m.output("x");
    EXPECT_ERROR_HAS(importError(m), "graph input 'x' is listed twice");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2});
    m.initF32("w", {2});
    m.initF32("w", {2});
    m.node("Add", {"x", "w"}, {"y"});
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "initializer 'w' is defined twice");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2});
    m.node("Add", {"x", "c"}, {"a"}, "n1");
    m.node("Relu", {"a"}, {"b"}, "n2");
    m.node("Neg", {"b"}, {"c"}, "n3");
    m.output("c");
    EXPECT_ERROR_HAS(importError(m), "cycle", "Add 'n1'", "Relu 'n2'", "Neg 'n3'");
  }
  {
    Model m; // a node that feeds itself
    m.input("x", onnx::TensorProto::FLOAT, {2});
    m.node("Add", {"x", "s"}, {"s"}, "self");
    m.output("s");
    EXPECT_ERROR_HAS(importError(m), "cycle", "Add 'self'");
  }
  Model m;
  m.input("x", onnx::TensorProto::FLOAT, {2});
  m.node("Add", {"x", "ghost"}, {"y"}, "adder");
  m.output("y");
  EXPECT_CLI_FAILS(compileCli(m, "undefined"), "model.onnx", "Add 'adder'", "'ghost'");
}

namespace {
/// A graph whose node "wrap" is an If with `depth` levels of then_branch subgraphs below it.
void nestIf(onnx::GraphProto *g, int depth) {
  auto *n = g->add_node();
  n->set_op_type("If");
  n->set_name("if" + std::to_string(depth));
  n->add_input("cond");
  n->add_output("out" + std::to_string(depth));
  auto *a = n->add_attribute();
  a->set_name("then_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  auto *sub = a->mutable_g();
  sub->set_name("level" + std::to_string(depth));
  if (depth > 1)
    nestIf(sub, depth - 1);
}

onnx::FunctionProto *addFunction(onnx::ModelProto &m, const std::string &name,
                                 const std::vector<std::string> &calls) {
  auto *f = m.add_functions();
  f->set_name(name);
  f->set_domain("local");
  f->add_input("a");
  f->add_output("b");
  std::string cur = "a";
  for (size_t i = 0; i < calls.size(); ++i) {
    auto *n = f->add_node();
    n->set_op_type(calls[i]);
    n->set_domain("local");
    n->add_input(cur);
    cur = i + 1 == calls.size() ? "b" : "t" + std::to_string(i);
    n->add_output(cur);
  }
  return f;
}
} // namespace

// 10. Subgraphs nested beyond the cap; recursive model-local functions.
TEST(BadInput, G10_NestingAndRecursion) {
  auto nested = [](int depth) {
    Model m;
    m.input("cond", onnx::TensorProto::BOOL, {});
    nestIf(m.g, depth);
    m.output("out" + std::to_string(depth));
    return m;
  };
  // Within the cap the model gets as far as importing the Ifs (their condition is a graph input,
  // so both branches are imported): nested run-time Ifs are capped at 8 levels.
  std::string within = importError(nested(onnx_import::kMaxSubgraphDepth));
  EXPECT_ERROR_HAS(within, "If 'if8': Ifs whose conditions are known only at run time nest more "
                           "than 8 deep");
  EXPECT_FALSE(contains(within, "nested")) << within;
  std::string beyond = importError(nested(onnx_import::kMaxSubgraphDepth + 1));
  EXPECT_ERROR_HAS(beyond, "nested more than 16 levels deep", "If 'if17' attribute 'then_branch'");
  // Deeper than protobuf's own recursion limit: refused by the parser.
  EXPECT_ERROR_HAS(importError(nested(60)), "malformed");
  // Subgraph lists (Scan/Loop bodies in `graphs`) count too.
  {
    Model m = nested(onnx_import::kMaxSubgraphDepth);
    auto *g = m.g; // walk down to the deepest subgraph (depth 16) and nest one more level there
    for (int i = 0; i < onnx_import::kMaxSubgraphDepth; ++i)
      g = g->mutable_node(0)->mutable_attribute(0)->mutable_g();
    auto *loop = g->add_node();
    loop->set_op_type("Loop");
    loop->set_name("deep_loop");
    auto *a = loop->add_attribute();
    a->set_name("bodies");
    a->set_type(onnx::AttributeProto::GRAPHS);
    a->add_graphs()->set_name("one_too_deep");
    EXPECT_ERROR_HAS(importError(m), "nested more than 16 levels deep",
                     "Loop 'deep_loop' attribute 'bodies'");
  }
  // Model-local functions.
  auto withFunctions = [](const std::vector<std::pair<std::string, std::vector<std::string>>> &fs) {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2});
    auto *n = m.node("F", {"x"}, {"y"}, "call");
    n->set_domain("local");
    m.output("y");
    auto *o = m.model.add_opset_import();
    o->set_domain("local");
    o->set_version(1);
    for (auto &f : fs)
      addFunction(m.model, f.first, f.second);
    return m;
  };
  EXPECT_ERROR_HAS(importError(withFunctions({{"F", {"F"}}})),
                   "model-local function 'local.F' is recursive (local.F -> local.F)");
  EXPECT_ERROR_HAS(importError(withFunctions({{"F", {"G"}}, {"G", {"H"}}, {"H", {"F"}}})),
                   "is recursive (local.F -> local.G -> local.H -> local.F)");
  EXPECT_ERROR_HAS(importError(withFunctions({{"F", {"Relu"}}, {"F", {"Neg"}}})),
                   "model-local function 'local.F' is defined twice");
  // Not recursive (a diamond): no recursion error; the call is reported as unsupported.
  std::string diamond = importError(withFunctions({{"F", {"G", "H"}}, {"G", {"K"}}, {"H", {"K"}}, {"K", {}}}));
  EXPECT_ERROR_HAS(diamond, "local.F (node 'call')");
  EXPECT_FALSE(contains(diamond, "recursive")) << diamond;
  EXPECT_CLI_FAILS(compileCli(nested(20), "nested"), "nested more than 16 levels deep");
}

// 11. Unknown dtype enum values; string tensors where numbers are needed.
TEST(BadInput, G11_DTypes) {
  {
    onnx::TensorProto *w;
    Model m = addOfInit(&w);
    w->set_data_type(999);
    w->set_raw_data(std::string(12, '\0'));
    EXPECT_ERROR_HAS(importError(m), "tensor 'w'", "unsupported element type unknown (999)");
  }
  {
    onnx::TensorProto *w;
    Model m = addOfInit(&w);
    w->set_data_type(-2);
    EXPECT_ERROR_HAS(importError(m), "tensor 'w'", "unknown (-2)");
  }
  {
    onnx::TensorProto *w;
    Model m = addOfInit(&w);
    w->set_data_type(onnx::TensorProto::UNDEFINED);
    EXPECT_ERROR_HAS(importError(m), "tensor 'w'", "no element type");
  }
  {
    onnx::TensorProto *w;
    Model m = addOfInit(&w);
    w->set_data_type(onnx::TensorProto::STRING);
    for (int i = 0; i < 3; ++i)
      w->add_string_data("1.0");
    EXPECT_ERROR_HAS(importError(m), "tensor 'w'", "unsupported element type STRING");
  }
  // 23: FLOAT4E2M1 in newer onnx.proto files (unknown to this one; 17..22, float8 and int4, are
  // supported).
  for (int dt : {(int)onnx::TensorProto::COMPLEX64, 23, (int)onnx::TensorProto::COMPLEX128}) {
    onnx::TensorProto *w;
    Model m = addOfInit(&w);
    w->set_data_type(dt);
    EXPECT_ERROR_HAS(importError(m), "tensor 'w'", "unsupported element type");
  }
  {
    Model m;
    m.input("x", 12345, {2});
    m.node("Relu", {"x"}, {"y"});
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "graph input 'x'", "unknown (12345)");
  }
  {
    Model m;
    m.input("s", onnx::TensorProto::STRING, {2});
    m.node("Relu", {"s"}, {"y"});
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "graph input 's'", "STRING");
  }
  {
    // A Cast to STRING, and a Constant holding strings.
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2});
    attrInt(m.node("Cast", {"x"}, {"y"}, "to_string"), "to", onnx::TensorProto::STRING);
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Cast 'to_string'");
  }
  {
    Model m;
    auto *n = m.node("Constant", {}, {"y"}, "strings");
    auto *a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::STRING);
    a->mutable_t()->add_string_data("x");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "STRING");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2});
    m.input("s", onnx::TensorProto::STRING, {2});
    m.node("Add", {"x", "s"}, {"y"});
    m.output("y");
    EXPECT_CLI_FAILS(compileCli(m, "string"), "graph input 's'", "STRING");
  }
}

// 12. Initializers whose shapes contradict the op (Gemm/Conv/MatMul weights, biases).
TEST(BadInput, G12_WeightShapeDisagreement) {
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2, 3});
    m.initF32("W", {5, 4});
    attrInt(m.node("Gemm", {"x", "W"}, {"y"}, "fc"), "transB", 1);
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Gemm 'fc'", "A 2x3 and B 5x4 do not contract");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2, 3});
    m.initF32("W", {3, 4});
    m.initF32("b", {5});
    m.node("Gemm", {"x", "W", "b"}, {"y"}, "fc_bias");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Gemm 'fc_bias'", "C 5 does not broadcast to 2x4");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2, 3});
    m.initF32("W", {3, 4, 1});
    m.node("Gemm", {"x", "W"}, {"y"}, "fc3d");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Gemm 'fc3d'", "must be 2-D");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {1, 3, 8, 8});
    m.initF32("W", {4, 2, 3, 3}); // 2 input channels, the input has 3
    m.node("Conv", {"x", "W"}, {"y"}, "conv");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Conv 'conv'", "input channels 3 do not match weight 4x2x3x3 with group 1");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {1, 3, 8, 8});
    m.initF32("W", {4, 3, 3, 3});
    m.initF32("B", {3});
    m.node("Conv", {"x", "W", "B"}, {"y"}, "conv_bias");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Conv 'conv_bias'", "bias must be [4]");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {1, 3, 8, 8});
    m.initF32("W", {4, 3, 3, 3});
    attrInts(m.node("Conv", {"x", "W"}, {"y"}, "conv_ks"), "kernel_shape", {5, 5});
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Conv 'conv_ks'", "kernel_shape differs");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2, 3});
    m.initF32("W", {4, 5});
    m.node("MatMul", {"x", "W"}, {"y"}, "mm");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "MatMul 'mm'", "do not contract");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {2, 3});
    m.initF32("W", {5, 4});
    attrInt(m.node("Gemm", {"x", "W"}, {"y"}, "fc"), "transB", 1);
    m.output("y");
    EXPECT_CLI_FAILS(compileCli(m, "gemm"), "Gemm 'fc'", "do not contract");
  }
}

// 13. Out-of-range constant gather indices; zero or negative strides; Conv weight rank.
TEST(BadInput, G13_IndicesStridesRanks) {
  for (int64_t idx : std::initializer_list<int64_t>{4, -5, INT64_MAX, INT64_MIN}) {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {4, 2});
    m.initI64("idx", {0, idx});
    m.node("Gather", {"x", "idx"}, {"y"}, "gather");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Gather 'gather'",
                     ("index " + std::to_string(idx) + " out of range for dim 4").c_str());
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {4, 2});
    m.initI64("idx", {0, 2});
    attrInt(m.node("GatherElements", {"x", "idx"}, {"y"}, "ge"), "axis", 1);
    m.g->mutable_initializer(0)->clear_dims();
    m.g->mutable_initializer(0)->add_dims(1);
    m.g->mutable_initializer(0)->add_dims(2);
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "GatherElements 'ge'", "index 2 out of range for dim 2");
  }
  {
    Model m; // axis out of range
    m.input("x", onnx::TensorProto::FLOAT, {4, 2});
    m.initI64("idx", {0});
    attrInt(m.node("Gather", {"x", "idx"}, {"y"}, "gather_axis"), "axis", 2);
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Gather 'gather_axis'", "axis");
  }
  for (std::vector<int64_t> strides : {std::vector<int64_t>{0, 1}, std::vector<int64_t>{1, -2},
                                       std::vector<int64_t>{1}}) {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {1, 3, 8, 8});
    m.initF32("W", {4, 3, 3, 3});
    attrInts(m.node("Conv", {"x", "W"}, {"y"}, "conv"), "strides", strides);
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Conv 'conv'", "strides");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {1, 3, 8, 8});
    m.initF32("W", {4, 3, 3, 3});
    attrInts(m.node("Conv", {"x", "W"}, {"y"}, "conv_dil"), "dilations", {0, 1});
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Conv 'conv_dil'", "dilations must be positive");
  }
  {
    Model m;
    m.input("x", onnx::TensorProto::FLOAT, {1, 3, 8, 8});
    m.initF32("W", {4, 3, 3});
    m.node("Conv", {"x", "W"}, {"y"}, "conv_rank");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Conv 'conv_rank'", "must have the same rank");
  }
  {
    Model m; // Slice with a zero step
    m.input("x", onnx::TensorProto::FLOAT, {8});
    m.initI64("starts", {0});
    m.initI64("ends", {8});
    m.initI64("axes", {0});
    m.initI64("steps", {0});
    m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "slice");
    m.output("y");
    EXPECT_ERROR_HAS(importError(m), "Slice 'slice'", "step must be non-zero");
  }
}

// 14. Unsupported ops (all listed in one message) and opsets.
TEST(BadInput, G14_UnsupportedOpsAndOpsets) {
  Model m;
  m.input("x", onnx::TensorProto::FLOAT, {2});
  m.node("FancyOp", {"x"}, {"a"}, "first");
  m.node("Relu", {"a"}, {"b"}, "fine");
  m.node("OtherOp", {"b"}, {"c"});
  auto *custom = m.node("Custom", {"c"}, {"d"}, "vendor");
  custom->set_domain("com.vendor");
  m.output("d");
  std::string e = importError(m);
  EXPECT_ERROR_HAS(e, "unsupported ONNX ops (opset 17):", "FancyOp (node 'first')",
                   "OtherOp (node #2)", "com.vendor.Custom (node 'vendor')");
  EXPECT_FALSE(contains(e, "Relu")) << e;
  EXPECT_CLI_FAILS(compileCli(m, "unsupported"), "FancyOp (node 'first')", "OtherOp (node #2)",
                   "com.vendor.Custom (node 'vendor')");
  for (int opset : {1, 6, 23, 1000}) {
    // Below 7, a model imports only when each op's opset-7 definition already held (Relu's did
    // from opset 6; Add changed its broadcasting at 7).
    Model o(opset);
    o.input("x", onnx::TensorProto::FLOAT, {2});
    o.node(opset == 6 ? "Add" : "Relu", {"x", "x"}, {"y"});
    o.output("y");
    EXPECT_ERROR_HAS(importError(o), ("opset " + std::to_string(opset)).c_str(),
                     "tgc supports opsets 7 to 22");
  }
  Model six(6);
  six.input("x", onnx::TensorProto::FLOAT, {2});
  six.node("Relu", {"x"}, {"y"});
  six.output("y");
  EXPECT_EQ(importError(six), "") << "Relu at opset 6 means what it means at opset 7";
  Model none;
  none.model.mutable_opset_import(0)->set_domain("com.other");
  none.input("x", onnx::TensorProto::FLOAT, {2});
  none.node("Relu", {"x"}, {"y"});
  none.output("y");
  EXPECT_ERROR_HAS(importError(none), "imports no version of the default ONNX opset");
}

// 15. Packages: truncated, wrong magic/version, short weights, offsets beyond the arena,
// missing kernels.
TEST(BadInput, G15_CorruptPackages) {
  ASSERT_FALSE(goodPackage().empty());
  ASSERT_EQ(loadError(goodPackage()), "");
  const std::string planBytes = readFile(goodPackage() + "/plan.pb");
  {
    std::string d = copyPackage("trunc");
    for (size_t cut : {size_t(0), size_t(3), planBytes.size() / 2, planBytes.size() - 1,
                       planBytes.size() - 5}) {
      writeFile(d + "/plan.pb", planBytes.substr(0, cut));
      std::string e = loadError(d);
      EXPECT_TRUE(contains(e, "plan") && (contains(e, "truncated") || contains(e, "magic")))
          << "cut " << cut << ": " << e;
    }
    writeFile(d + "/plan.pb", "\xff\xff\xff\xff\xff garbage");
    EXPECT_ERROR_HAS(loadError(d), "plan.pb is corrupt or truncated");
    fs::remove(d + "/plan.pb");
    EXPECT_ERROR_HAS(loadError(d), "plan.pb", "cannot be read");
    EXPECT_CLI_FAILS(runCli("run '" + d + "'"), "plan.pb", "cannot be read");
  }
  {
    std::string d = copyPackage("magic");
    auto p = readPlan(d);
    p.set_magic(0x12345678);
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "bad magic 0x12345678");
    EXPECT_CLI_FAILS(runCli("inspect '" + d + "'"), "bad magic 0x12345678");
    p = readPlan(goodPackage());
    p.set_format_version(99);
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "package format 99, this runtime reads", "recompile");
  }
  {
    std::string d = copyPackage("weights");
    auto size = fs::file_size(d + "/weights.bin");
    fs::resize_file(d + "/weights.bin", size - 64);
    EXPECT_ERROR_HAS(loadError(d), ("weights.bin has " + std::to_string(size - 64) +
                                    " bytes, the plan expects " + std::to_string(size))
                                       .c_str());
    fs::remove(d + "/weights.bin");
    EXPECT_ERROR_HAS(loadError(d), "weights", "cannot be read");
    auto p = readPlan(goodPackage());
    p.set_weights_file("../weights.bin");
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "weights file name '../weights.bin' is invalid");
    p = readPlan(goodPackage());
    p.set_weights_bytes(-1);
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "weights size -1 is invalid");
  }
  {
    std::string d = copyPackage("arena");
    const auto good = readPlan(goodPackage());
    auto mutateArg = [&](const std::function<void(plan::BufferArg &)> &f) {
      plan::Plan p = good;
      for (auto &s : *p.mutable_steps())
        for (auto &a : *s.mutable_args())
          if (a.kind() == plan::ARENA) {
            f(a);
            return p;
          }
      ADD_FAILURE() << "no arena argument";
      return p;
    };
    writePlan(d, mutateArg([&](plan::BufferArg &a) { a.set_offset(good.arena_bytes() + 64); }));
    EXPECT_ERROR_HAS(loadError(d), "step", "lies outside the arena");
    writePlan(d, mutateArg([&](plan::BufferArg &a) { a.set_offset(INT64_MAX - 8); }));
    EXPECT_ERROR_HAS(loadError(d), "lies outside the arena");
    writePlan(d, mutateArg([&](plan::BufferArg &a) { a.set_offset(-64); }));
    EXPECT_ERROR_HAS(loadError(d), "lies outside the arena");
    writePlan(d, mutateArg([&](plan::BufferArg &a) { a.set_bytes(INT64_MAX); }));
    EXPECT_ERROR_HAS(loadError(d), "lies outside the arena");
    writePlan(d, mutateArg([&](plan::BufferArg &a) { a.set_kind((plan::BufferKind)9); }));
    EXPECT_ERROR_HAS(loadError(d), "unknown buffer kind 9");
    plan::Plan p = good;
    p.set_arena_bytes(int64_t(1) << 50);
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "arena size 1125899906842624 is invalid");
    p = good;
    p.mutable_outputs(0)->mutable_source()->set_bytes(4);
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "output 'y'", "source has 4 bytes");
    p = good;
    p.mutable_inputs(0)->set_dtype(1234);
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "input 'input_0' has unknown dtype 1234");
    p = good;
    p.mutable_inputs(0)->set_shape(0, -2);
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "input 'input_0' has an invalid shape");
    p = good;
    p.mutable_inputs(0)->mutable_index_bound()->set_hi(3);
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "input 'input_0' has an index range but is f32");
    p = good;
    p.mutable_inputs(1)->mutable_index_bound()->set_lo(5);
    p.mutable_inputs(1)->mutable_index_bound()->set_hi(4);
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "input 'ids' has an empty index range [5, 4]");
  }
  {
    std::string d = copyPackage("kernels");
    auto p = readPlan(d);
    p.mutable_steps(0)->set_symbol("tgk_missing");
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "kernel symbol 'tgk_missing' of step 0 not found");
    // A symbol of a dependency (libc) resolves through the handle: refused by name.
    p.mutable_steps(0)->set_symbol("free");
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "step 0 (free): 'free' is not a generated kernel symbol");
    p = readPlan(goodPackage());
    p.mutable_steps(0)->set_symbol("");
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "step 0", "kernel symbol is empty");
    p = readPlan(goodPackage());
    p.set_kernels_file("/lib/x86_64-linux-gnu/libc.so.6");
    writePlan(d, p);
    EXPECT_ERROR_HAS(loadError(d), "kernels file name", "is invalid");
    writePlan(d, readPlan(goodPackage()));
    fs::remove(d + "/kernels.so");
    EXPECT_ERROR_HAS(loadError(d), "kernels.so cannot be read");
    EXPECT_CLI_FAILS(runCli("run '" + d + "'"), "kernels.so cannot be read");
    writeFile(d + "/kernels.so", "not an ELF file");
    EXPECT_ERROR_HAS(loadError(d), "kernels.so checksum mismatch");
  }
}

// 16. Runtime inputs: wrong dtype, rank or shape; missing inputs; null buffers.
TEST(BadInput, G16_RuntimeInputs) {
  ASSERT_FALSE(goodPackage().empty());
  Status st;
  auto s = Session::load(goodPackage(), st);
  ASSERT_TRUE(s) << st.message;
  std::vector<HostTensor> outs;
  ASSERT_TRUE(s->run(goodInputs(), outs).ok);
  auto expectRunError = [&](std::vector<HostTensor> in, const std::string &want) {
    Status r = s->run(in, outs);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.message, want);
  };
  auto in = goodInputs();
  in[1] = HostTensor::zeros(DType::I32, {1, 32});
  expectRunError(in, "input 'ids': expected i64 [1, 32], got i32 [1, 32]");
  in = goodInputs();
  in[0] = HostTensor::zeros(DType::F32, {100});
  expectRunError(in, "input 'input_0': expected f32 [2, 50], got f32 [100]");
  in = goodInputs();
  in[0] = HostTensor::zeros(DType::F32, {2, 51});
  expectRunError(in, "input 'input_0': expected f32 [2, 50], got f32 [2, 51]");
  in = goodInputs();
  in.pop_back();
  expectRunError(in, "expected 2 inputs, got 1");
  expectRunError({}, "expected 2 inputs, got 0");
  in = goodInputs();
  in[0].data.resize(7);
  expectRunError(in, "input 'input_0': data has 7 bytes, expected 400");
  in = goodInputs();
  in[0].dtype = (DType)77;
  expectRunError(in, "input 'input_0': expected f32 [2, 50], got dtype(77) [2, 50]");

  // Caller-owned buffers: null arrays, null dims, null data, short buffers.
  std::vector<float> x(100), y(100);
  std::vector<int64_t> k(32), ko(32);
  int64_t xd[] = {2, 50}, kd[] = {1, 32};
  TensorRef ins[] = {{DType::F32, xd, 2, x.data(), 400}, {DType::I64, kd, 2, k.data(), 256}};
  TensorRef outsRef[] = {{DType::F32, xd, 2, y.data(), 400}, {DType::I64, kd, 2, ko.data(), 256}};
  ASSERT_TRUE(s->runRefs(ins, 2, outsRef, 2).ok);
  EXPECT_EQ(s->runRefs(nullptr, 2, outsRef, 2).message, "input array is null");
  EXPECT_EQ(s->runRefs(ins, 2, nullptr, 2).message, "output array is null");
  ins[0].data = nullptr;
  EXPECT_EQ(s->runRefs(ins, 2, outsRef, 2).message, "input 'input_0': data pointer is null");
  ins[0].data = x.data();
  ins[0].dims = nullptr;
  EXPECT_EQ(s->runRefs(ins, 2, outsRef, 2).message,
            "input 'input_0': expected f32 [2, 50], got an invalid shape");
  ins[0].dims = xd;
  ins[0].rank = -1;
  EXPECT_EQ(s->runRefs(ins, 2, outsRef, 2).message,
            "input 'input_0': expected f32 [2, 50], got an invalid shape");
  ins[0].rank = 1000000;
  EXPECT_EQ(s->runRefs(ins, 2, outsRef, 2).message,
            "input 'input_0': expected f32 [2, 50], got rank 1000000");
  ins[0].rank = 2;
  ins[0].bytes = 399;
  EXPECT_EQ(s->runRefs(ins, 2, outsRef, 2).message, "input 'input_0': buffer has 399 bytes, needs 400");
  ins[0].bytes = 400;
  outsRef[1].data = nullptr;
  EXPECT_EQ(s->runRefs(ins, 2, outsRef, 2).message, "output 'ids_out': data pointer is null");
  outsRef[1].data = ko.data();
  ASSERT_TRUE(s->runRefs(ins, 2, outsRef, 2).ok);

  // The C API: null session, null arrays, unknown dtype.
  char *err = nullptr;
  tgc_tensor cin[] = {{1, 2, xd, x.data(), 400}, {7, 2, kd, k.data(), 256}};
  tgc_tensor cout[] = {{1, 2, xd, y.data(), 400}, {7, 2, kd, ko.data(), 256}};
  EXPECT_EQ(tgc_session_run(nullptr, cin, 2, cout, 2, &err), -1);
  EXPECT_STREQ(err, "tgc_session_run: NULL session or tensor array");
  tgc_free_error(err);
  EXPECT_EQ(tgc_session_load(nullptr, 1, &err), nullptr);
  EXPECT_STREQ(err, "tgc_session_load: path is NULL");
  tgc_free_error(err);
  tgc_session *cs = tgc_session_load(goodPackage().c_str(), 1, &err);
  ASSERT_NE(cs, nullptr) << err;
  EXPECT_EQ(tgc_session_run(cs, nullptr, 2, cout, 2, &err), -1);
  tgc_free_error(err);
  cin[1].dtype = 4242;
  EXPECT_EQ(tgc_session_run(cs, cin, 2, cout, 2, &err), -1);
  EXPECT_STREQ(err, "input 1: unknown dtype 4242");
  tgc_free_error(err);
  cin[1].dtype = 7;
  EXPECT_EQ(tgc_session_run(cs, cin, 2, cout, 2, &err), 0) << err;
  tgc_session_free(cs);

  // Through the CLI: an input file of the wrong shape.
  std::string dir = freshDir("cli_inputs");
  HostTensor bad = HostTensor::zeros(DType::F32, {2, 49}, "input_0");
  ASSERT_FALSE(bool(writeTensorProtoFile(bad, dir + "/input_0.pb")));
  ASSERT_FALSE(bool(writeTensorProtoFile(goodInputs()[1], dir + "/input_1.pb")));
  EXPECT_CLI_FAILS(runCli("run '" + goodPackage() + "' --inputs '" + dir + "/input_0.pb' '" + dir +
                          "/input_1.pb'"),
                   "input 'input_0': expected f32 [2, 50], got f32 [2, 49]");
  EXPECT_CLI_FAILS(runCli("run '" + goodPackage() + "' --inputs '" + dir + "/input_1.pb'"),
                   "expected 2 inputs, got 1");
}
