// tgc_module.cpp — `tgc._tgc`, the pybind11 extension under the `tgc` Python package
// (python/tgc/__init__.py holds the public API and argument handling; this file is the thin
// layer over tgc::compile and tgc::Session).
//
// Every failure is raised as tgc.Error (a RuntimeError) carrying the message tgc prints; the GIL
// is released while compiling and running. Arrays cross without copies: inputs are read in
// place (the caller passes C-contiguous, native-order ndarrays; __init__.py makes them so) and
// outputs are numpy arrays allocated here and written by the runtime.
#include "driver/Compile.h"
#include "frontends/onnx/TensorIO.h"
#include "runtime/Session.h"
#include "runtime/Tensor.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

/// Raised as tgc.Error.
struct TgcError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The numpy dtype an element type crosses as. bf16 has no numpy type: its raw bits as uint16.
py::dtype numpyDType(tgc::DType t) {
  switch (t) {
  case tgc::DType::F32: return py::dtype("float32");
  case tgc::DType::U8: return py::dtype("uint8");
  case tgc::DType::I8: return py::dtype("int8");
  case tgc::DType::I32: return py::dtype("int32");
  case tgc::DType::I64: return py::dtype("int64");
  case tgc::DType::I16: return py::dtype("int16");
  case tgc::DType::U16: return py::dtype("uint16");
  case tgc::DType::U32: return py::dtype("uint32");
  case tgc::DType::U64: return py::dtype("uint64");
  case tgc::DType::Bool: return py::dtype("bool");
  case tgc::DType::F16: return py::dtype("float16");
  case tgc::DType::F64: return py::dtype("float64");
  case tgc::DType::BF16: return py::dtype("uint16");
  // float8 crosses as its bits, int4/uint4 one a byte (sign-extended / zero-extended)
  case tgc::DType::F8E4M3FN: case tgc::DType::F8E4M3FNUZ: case tgc::DType::F8E5M2:
  case tgc::DType::F8E5M2FNUZ: case tgc::DType::U4: return py::dtype("uint8");
  case tgc::DType::I4: return py::dtype("int8");
  }
  throw TgcError("unknown element type " + std::to_string((int)t));
}

// numpy's dtype and array fields are read through Python attributes, not pybind11's struct
// accessors (dtype::itemsize/kind, array::nbytes, array(dtype, shape)): pybind11 2.10 reads
// numpy 1.x's PyArray_Descr layout, which numpy 2 changed.

/// The element type of a numpy dtype, if tgc has one (ml_dtypes' bfloat16 is bf16; uint16 is
/// u16, taken as bf16 bits by run() where the package expects bf16).
std::optional<tgc::DType> tgcDType(const py::dtype &d) {
  const char kind = d.attr("kind").cast<std::string>().at(0);
  const auto size = d.attr("itemsize").cast<int64_t>();
  if (kind == 'b' && size == 1)
    return tgc::DType::Bool;
  if (kind == 'f')
    return size == 4 ? tgc::DType::F32 : size == 8 ? tgc::DType::F64
           : size == 2 ? std::optional(tgc::DType::F16) : std::nullopt;
  if (kind == 'i')
    return size == 1 ? tgc::DType::I8 : size == 2 ? tgc::DType::I16 : size == 4 ? tgc::DType::I32
           : size == 8 ? std::optional(tgc::DType::I64) : std::nullopt;
  if (kind == 'u')
    return size == 1 ? tgc::DType::U8 : size == 2 ? tgc::DType::U16 : size == 4 ? tgc::DType::U32
           : size == 8 ? std::optional(tgc::DType::U64) : std::nullopt;
  if (size == 2 && py::str(d.attr("name")).cast<std::string>() == "bfloat16")
    return tgc::DType::BF16;
  return std::nullopt;
}

std::string shapeText(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

/// A loaded package. Runs are serialized (a tgc::Session runs one call at a time; Python threads
/// that share a Session wait for each other instead of getting the runtime's concurrency error).
class PySession {
public:
  PySession(const std::string &path, int threads) {
    tgc::Status st;
    {
      py::gil_scoped_release release;
      session_ = tgc::Session::load(path, st, threads);
    }
    if (!session_)
      throw TgcError(st.message);
  }

  /// [(name, tgc dtype name, numpy dtype, shape, min shape, dim symbols)] of the inputs or
  /// outputs. A bucketed package's axis that follows a symbol takes any value from the min
  /// shape's to the shape's (its symbol's name; None for a fixed axis).
  py::list specs(bool outputs) const {
    py::list l;
    for (const tgc::TensorSpec &s : outputs ? session_->outputs() : session_->inputs()) {
      py::list symbols;
      for (size_t a = 0; a < s.shape.size(); ++a)
        symbols.append(a < s.dimSymbols.size() && !s.dimSymbols[a].empty()
                           ? py::object(py::str(s.dimSymbols[a]))
                           : py::object(py::none()));
      const std::vector<int64_t> &lo = s.minShape.size() == s.shape.size() ? s.minShape : s.shape;
      l.append(py::make_tuple(s.name, tgc::dtypeName(s.dtype), numpyDType(s.dtype),
                              py::tuple(py::cast(s.shape)), py::tuple(py::cast(lo)),
                              py::tuple(symbols)));
    }
    return l;
  }

  /// Runs on `inputs` (ndarrays in the package's input order) and returns the outputs in order.
  py::list run(const std::vector<py::object> &inputs) {
    const auto &specs = session_->inputs();
    std::vector<py::array> arrays;
    std::vector<std::vector<int64_t>> dims(inputs.size());
    std::vector<tgc::TensorRef> in(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string what =
          "input '" + (i < specs.size() ? specs[i].name : std::to_string(i)) + "'";
      if (!py::isinstance<py::array>(inputs[i]))
        throw TgcError(what + ": expected a numpy array");
      py::array a = py::reinterpret_borrow<py::array>(inputs[i]);
      if (!(a.flags() & py::array::c_style) || !a.dtype().attr("isnative").cast<bool>())
        throw TgcError(what + ": the array must be C-contiguous in native byte order");
      auto t = tgcDType(a.dtype());
      if (!t)
        throw TgcError(what + ": numpy dtype " + py::str(a.dtype()).cast<std::string>() +
                       " has no tgc element type" +
                       (i < specs.size() ? std::string(" (expected ") +
                                               tgc::dtypeName(specs[i].dtype) + " " +
                                               shapeText(specs[i].shape) + ")"
                                         : std::string()));
      if (*t == tgc::DType::U16 && i < specs.size() && specs[i].dtype == tgc::DType::BF16)
        t = tgc::DType::BF16; // bf16 crosses as its raw bits in uint16
      if (i < specs.size() && ((*t == tgc::DType::U8 && (tgc::isFloat8DType(specs[i].dtype) ||
                                                         specs[i].dtype == tgc::DType::U4)) ||
                               (*t == tgc::DType::I8 && specs[i].dtype == tgc::DType::I4)))
        t = specs[i].dtype; // float8 bits in uint8, int4/uint4 one a byte (range unchecked)
      dims[i].assign(a.shape(), a.shape() + a.ndim());
      in[i].dtype = *t;
      in[i].rank = (int32_t)a.ndim();
      in[i].dims = dims[i].data();
      in[i].data = const_cast<void *>(a.data());
      in[i].bytes = a.attr("nbytes").cast<size_t>();
      arrays.push_back(std::move(a));
    }
    py::list result;
    std::vector<tgc::TensorRef> out;
    py::object empty = py::module_::import("numpy").attr("empty");
    for (const tgc::TensorSpec &s : session_->outputs()) {
      py::array a = empty(py::tuple(py::cast(s.shape)), numpyDType(s.dtype));
      tgc::TensorRef r;
      r.dtype = s.dtype;
      r.rank = (int32_t)s.shape.size();
      r.dims = s.shape.data();
      r.data = a.mutable_data();
      r.bytes = a.attr("nbytes").cast<size_t>();
      out.push_back(r);
      result.append(std::move(a));
    }
    tgc::Status st;
    std::vector<std::vector<int64_t>> shapes(out.size());
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      st = session_->runRefs(in.data(), in.size(), out.data(), out.size());
      for (size_t i = 0; i < out.size(); ++i)
        shapes[i] = session_->outputShape(i);
    }
    if (!st.ok)
      throw TgcError(st.message);
    // An output of data-dependent extent, or a bucketed package's output at a run's values of
    // its symbols: its valid part, packed at the buffer's start (declared at the maxima), trimmed.
    for (size_t i = 0; i < out.size(); ++i) {
      if (shapes[i] == session_->outputs()[i].shape)
        continue;
      int64_t n = 1;
      for (int64_t d : shapes[i])
        n *= d;
      py::object flat = result[i].attr("reshape")(-1);
      result[i] = flat[py::slice(0, (py::ssize_t)n, 1)]
                      .attr("reshape")(py::tuple(py::cast(shapes[i])))
                      .attr("copy")();
    }
    return result;
  }

  std::string describe() const { return session_->describe(); }
  std::string precision() const { return session_->precision(); }
  int64_t maxSeq() const { return session_->maxSeq(); }

  /// Session::generate (a decode package): the new ids and the timings, as a dict.
  py::dict generate(const std::vector<int64_t> &prompt, int maxNew, float temperature, int topK,
                    uint64_t seed, int64_t eosId) {
    tgc::GenerateOptions o;
    o.temperature = temperature;
    o.topK = topK;
    o.seed = seed;
    o.eosId = eosId;
    std::vector<int64_t> ids;
    tgc::GenerateStats stats;
    tgc::Status st;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      st = session_->generate(prompt, maxNew, o, ids, stats);
    }
    if (!st.ok)
      throw TgcError(st.message);
    py::dict d;
    d["new_ids"] = ids;
    d["prefill_ms"] = stats.prefillMs;
    d["prefill_tokens_per_s"] = stats.prefillTokensPerS;
    d["decode_ms"] = stats.decodeMs;
    d["decode_steps"] = stats.steps;
    d["decode_tokens_per_s"] = stats.decodeTokensPerS;
    return d;
  }

private:
  std::unique_ptr<tgc::Session> session_;
  std::mutex mutex_;
};

/// tgc::compile with the CLI's defaults (kernel cache in $TGC_CACHE_DIR or ~/.cache/tgc unless
/// `cacheDir` says otherwise; "" for none). Returns the statistics `tgc compile --stats` prints.
py::dict compileModel(const std::string &model, const std::string &out, const std::string &target,
                      const std::string &precision,
                      const std::map<std::string, std::vector<std::pair<int64_t, int64_t>>>
                          &inputShapes,
                      const std::map<std::string, std::string> &boundInputs,
                      std::optional<std::string> cacheDir,
                      const std::vector<std::string> &disabledRules, const std::string &dumpDir) {
  tgc::CompileOptions o;
  o.modelPath = model;
  o.outputPath = out;
  auto t = tgc::parseTarget(target);
  if (!t)
    throw TgcError(llvm::toString(t.takeError()));
  auto p = tgc::parsePrecision(precision);
  if (!p)
    throw TgcError(llvm::toString(p.takeError()));
  o.target = *t;
  o.precision = *p;
  // Fixed dims into inputShapes; an input with a range into inputRanges (a bucketed package).
  for (const auto &[name, dims] : inputShapes) {
    std::vector<tgc::DimRange> ranges;
    bool varies = false;
    for (const auto &[lo, hi] : dims) {
      if (lo <= 0 || hi < lo)
        throw TgcError("input_shapes['" + name + "']: dim " + std::to_string(lo) +
                       (hi != lo ? ".." + std::to_string(hi) : "") +
                       " is not a positive integer or a non-empty range of them");
      ranges.push_back({lo, hi});
      varies = varies || lo != hi;
    }
    if (varies)
      o.inputRanges[name] = ranges;
    else
      for (const tgc::DimRange &r : ranges)
        o.inputShapes[name].push_back(r.min);
  }
  o.boundInputs = boundInputs;
  o.disabledRules = disabledRules;
  o.dumpDir = dumpDir;
  o.cacheDir = cacheDir ? *cacheDir : tgc::defaultCacheDir();
  std::string log;
  std::optional<llvm::Expected<tgc::CompileResult>> result;
  {
    py::gil_scoped_release release;
    llvm::raw_string_ostream os(log);
    result.emplace(tgc::compile(o, os));
    os.flush();
  }
  llvm::Expected<tgc::CompileResult> &r = *result;
  if (!r)
    throw TgcError(llvm::toString(r.takeError()));
  py::dict d;
  d["package"] = out;
  d["kernels"] = r->package.kernels;
  d["arena_bytes"] = r->package.arenaBytes;
  d["weight_bytes"] = r->package.weightBytes;
  d["ops_before"] = r->opsBefore;
  d["ops_after"] = r->opsAfter;
  d["ops_after_by_kind"] = r->opsAfterByKind;
  d["rule_hits"] = r->ruleHits;
  d["pass_seconds"] = r->passSeconds;
  d["log"] = log;
  return d;
}

/// Writes `array` as a TensorProto file named `name` (for compile's bind_inputs).
void writeTensor(const std::string &path, const std::string &name, const py::array &array) {
  if (!(array.flags() & py::array::c_style))
    throw TgcError("bind_inputs['" + name + "']: the array must be C-contiguous");
  auto t = tgcDType(array.dtype());
  if (!t)
    throw TgcError("bind_inputs['" + name + "']: numpy dtype " +
                   py::str(array.dtype()).cast<std::string>() + " has no tgc element type");
  tgc::HostTensor h;
  h.name = name;
  h.dtype = *t;
  h.shape.assign(array.shape(), array.shape() + array.ndim());
  const auto *bytes = static_cast<const uint8_t *>(array.data());
  h.data.assign(bytes, bytes + array.attr("nbytes").cast<size_t>());
  if (llvm::Error e = tgc::writeTensorProtoFile(h, path))
    throw TgcError(llvm::toString(std::move(e)));
}

} // namespace

PYBIND11_MODULE(_tgc, m) {
  m.doc() = "tgc's compiler and runtime (use the `tgc` package, not this module)";
  static py::exception<TgcError> error(m, "Error", PyExc_RuntimeError);
  // Anything else thrown below (std::filesystem, bad_alloc, ...) still ends as tgc.Error.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const TgcError &e) {
      PyErr_SetString(error.ptr(), e.what());
    } catch (const py::error_already_set &) {
      throw;
    } catch (const py::builtin_exception &) {
      throw;
    } catch (const std::bad_alloc &) {
      PyErr_SetString(error.ptr(), "internal error: out of memory");
    } catch (const std::exception &e) {
      PyErr_SetString(error.ptr(), (std::string("internal error: ") + e.what()).c_str());
    }
  });
  m.attr("__version__") = tgc::tgcVersion();

  m.def("compile", &compileModel, py::arg("model"), py::arg("out_dir"), py::arg("target"),
        py::arg("precision"), py::arg("input_shapes"), py::arg("bind_inputs"),
        py::arg("cache_dir"), py::arg("disable_rules"), py::arg("dump_dir"));
  m.def("write_tensor", &writeTensor, py::arg("path"), py::arg("name"), py::arg("array"));

  py::class_<PySession>(m, "Session")
      .def(py::init<const std::string &, int>(), py::arg("path"), py::arg("threads") = 0)
      .def("specs", &PySession::specs, py::arg("outputs"))
      .def("run", &PySession::run, py::arg("inputs"))
      .def("describe", &PySession::describe)
      .def("precision", &PySession::precision)
      .def("max_seq", &PySession::maxSeq)
      .def("generate", &PySession::generate, py::arg("prompt"), py::arg("max_new_tokens"),
           py::arg("temperature"), py::arg("top_k"), py::arg("seed"), py::arg("eos_id"));
}
