// CompileCApi.cpp — the C compile API (tgc_compiler.h) over tgc::compile: C options into
// CompileOptions, model bytes into a temporary file, every error into a malloc'ed message.
#include "driver/tgc_compiler.h"

#include "driver/Compile.h"
#include "runtime/Text.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

namespace {

/// Removes a temporary directory and what it holds when it goes out of scope.
struct TempDir {
  std::string path;
  explicit TempDir(std::string p) : path(std::move(p)) {}
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
};

/// Hands `message` to the caller through `err` (when given); returns -1.
int fail(char **err, const std::string &message) {
  if (err) {
    *err = static_cast<char *>(std::malloc(message.size() + 1));
    if (*err)
      std::memcpy(*err, message.c_str(), message.size() + 1);
  }
  return -1;
}

/// The first published layout of tgc_compile_options ended at `verbose` (0.1); callers built
/// against it pass that size and get the defaults for the fields appended since.
constexpr size_t kFirstLayoutSize = offsetof(tgc_compile_options, input_ranges);

/// The fields of `o` the caller knows about (struct_size), over the defaults; false when
/// struct_size is smaller than the first published layout (a zero-filled struct, or one never
/// passed through tgc_compile_options_init), whose fields would be silently ignored.
bool known(const tgc_compile_options *o, tgc_compile_options &all, std::string &error) {
  tgc_compile_options_init(&all);
  if (!o)
    return true;
  if (o->struct_size < kFirstLayoutSize) {
    error = "options->struct_size is " + std::to_string(o->struct_size) + ", expected at least " +
            std::to_string(kFirstLayoutSize) + ": fill the options with tgc_compile_options_init";
    return false;
  }
  // A newer caller's extra fields are not ours to read; an older caller's missing ones keep
  // their defaults.
  std::memcpy(&all, o, std::min(o->struct_size, sizeof all));
  all.struct_size = sizeof all;
  return true;
}

/// options.input_ranges and options.buckets into `copt`; false with `error` set.
bool takeRanges(const tgc_compile_options &o, tgc::CompileOptions &copt, std::string &error) {
  if ((o.num_input_ranges && !o.input_ranges) || (o.num_buckets && !o.buckets)) {
    error = "input_ranges or buckets is NULL but its count is not 0";
    return false;
  }
  for (size_t i = 0; i < o.num_input_ranges; ++i) {
    const tgc_input_range &r = o.input_ranges[i];
    const std::string where = "input_ranges[" + std::to_string(i) + "]";
    if (!r.name || !*r.name || r.rank < 0 || (r.rank > 0 && (!r.min_dims || !r.max_dims))) {
      error = where + ": needs a name, a rank >= 0 and rank min and max dims";
      return false;
    }
    std::vector<tgc::DimRange> dims;
    for (int32_t a = 0; a < r.rank; ++a) {
      if (r.min_dims[a] < 1 || r.max_dims[a] < r.min_dims[a]) {
        error = where + " ('" + tgc::escapeText(r.name) + "'): dim " + std::to_string(a) +
                " range " + std::to_string(r.min_dims[a]) + ".." + std::to_string(r.max_dims[a]) +
                " is empty or not positive";
        return false;
      }
      dims.push_back({r.min_dims[a], r.max_dims[a]});
    }
    if (copt.inputShapes.count(r.name) || !copt.inputRanges.emplace(r.name, dims).second) {
      error = where + ": input '" + tgc::escapeText(r.name) + "' is named twice";
      return false;
    }
  }
  for (size_t i = 0; i < o.num_buckets; ++i) {
    const tgc_bucket_values &b = o.buckets[i];
    const std::string where = "buckets[" + std::to_string(i) + "]";
    if (!b.symbol || !*b.symbol || b.count == 0 || !b.values || b.count > 4096) {
      error = where + ": needs a symbol and 1 to 4096 values";
      return false;
    }
    if (!copt.bucketValues.emplace(b.symbol, std::vector<int64_t>(b.values, b.values + b.count))
             .second) {
      error = where + ": symbol '" + tgc::escapeText(b.symbol) + "' is named twice";
      return false;
    }
  }
  if (!copt.bucketValues.empty() && copt.inputRanges.empty()) {
    error = "buckets need an input with a range (input_ranges)";
    return false;
  }
  return true;
}

/// The C options as CompileOptions; false with `error` set when one is malformed.
bool toCompileOptions(const tgc_compile_options &o, tgc::CompileOptions &copt, std::string &error) {
  auto target = tgc::parseTarget(o.target ? o.target : "cpu");
  if (!target) {
    error = llvm::toString(target.takeError());
    return false;
  }
  auto precision = tgc::parsePrecision(o.precision ? o.precision : "fp32");
  if (!precision) {
    error = llvm::toString(precision.takeError());
    return false;
  }
  copt.target = *target;
  copt.precision = *precision;
  if (o.num_input_shapes && !o.input_shapes) {
    error = "input_shapes is NULL but num_input_shapes is " + std::to_string(o.num_input_shapes);
    return false;
  }
  for (size_t i = 0; i < o.num_input_shapes; ++i) {
    const tgc_input_shape &s = o.input_shapes[i];
    const std::string where = "input_shapes[" + std::to_string(i) + "]";
    if (!s.name || !*s.name || s.rank < 0 || (s.rank > 0 && !s.dims)) {
      error = where + ": needs a name, a rank >= 0 and rank dims";
      return false;
    }
    std::vector<int64_t> dims(s.dims, s.dims + s.rank);
    for (int64_t d : dims)
      if (d < 1) {
        error = where + " ('" + tgc::escapeText(s.name) + "'): dim " + std::to_string(d) +
                " is not >= 1";
        return false;
      }
    if (!copt.inputShapes.emplace(s.name, dims).second) {
      error = where + ": input '" + tgc::escapeText(s.name) + "' is named twice";
      return false;
    }
  }
  if (o.num_bound_inputs && !o.bound_inputs) {
    error = "bound_inputs is NULL but num_bound_inputs is " + std::to_string(o.num_bound_inputs);
    return false;
  }
  for (size_t i = 0; i < o.num_bound_inputs; ++i) {
    const tgc_bound_input &b = o.bound_inputs[i];
    const std::string where = "bound_inputs[" + std::to_string(i) + "]";
    if (!b.name || !*b.name || !b.tensor_path || !*b.tensor_path) {
      error = where + ": needs a name and a tensor_path";
      return false;
    }
    if (!copt.boundInputs.emplace(b.name, b.tensor_path).second) {
      error = where + ": input '" + tgc::escapeText(b.name) + "' is bound twice";
      return false;
    }
  }
  copt.cacheDir = o.cache_dir ? o.cache_dir : tgc::defaultCacheDir();
  copt.dumpDir = o.dump_dir ? o.dump_dir : "";
  return takeRanges(o, copt, error);
}

int compileChecked(const char *model, size_t modelSize, const tgc_compile_options *options,
                   const char *outDir, char **err) {
  if (!model || !outDir || !*outDir)
    return fail(err, "tgc_compile: the model and out_dir must be given");
  tgc_compile_options o;
  tgc::CompileOptions copt;
  std::string error;
  if (!known(options, o, error) || !toCompileOptions(o, copt, error))
    return fail(err, "tgc_compile: " + error);
  copt.outputPath = outDir;

  // Bytes go through model.onnx in a private temporary directory (the importer reads paths):
  // nothing beside it, so external data references find no file rather than someone else's.
  llvm::SmallString<128> dir;
  llvm::Optional<TempDir> removeDir;
  if (modelSize == 0) {
    copt.modelPath = model;
  } else {
    if (auto ec = llvm::sys::fs::createUniqueDirectory("tgc-model", dir))
      return fail(err, "tgc_compile: cannot create a temporary directory for the model bytes: " +
                           ec.message());
    removeDir.emplace(std::string(dir));
    copt.modelPath = std::string(dir) + "/model.onnx";
    copt.modelName = "model";
    std::error_code ec;
    llvm::raw_fd_ostream os(copt.modelPath, ec);
    if (!ec) {
      os.write(model, modelSize);
      os.close();
      if (os.has_error()) {
        ec = os.error();
        os.clear_error(); // raw_fd_ostream's destructor aborts on an error left set
      }
    }
    if (ec)
      return fail(err, "tgc_compile: cannot write the model bytes to a temporary file: " +
                           ec.message());
  }
  llvm::raw_ostream &log = o.verbose ? llvm::errs() : llvm::nulls();
  auto result = tgc::compile(copt, log);
  if (!result)
    return fail(err, llvm::toString(result.takeError()));
  return 0;
}

} // namespace

extern "C" {

void tgc_compile_options_init(tgc_compile_options *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

int tgc_compile(const char *model, size_t model_size, const tgc_compile_options *options,
                const char *out_dir, char **err) {
  try {
    return compileChecked(model, model_size, options, out_dir, err);
  } catch (const std::exception &e) { // nothing may escape a C function
    return fail(err, std::string("tgc_compile: internal error: ") + e.what());
  } catch (...) {
    return fail(err, "tgc_compile: internal error");
  }
}

const char *tgc_compiler_version(void) { return tgc::tgcVersion(); }

} // extern "C"
