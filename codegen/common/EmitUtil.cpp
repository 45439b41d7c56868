// EmitUtil.cpp — shapes, strides and literals for the kernel emitters.
#include "codegen/common/EmitUtil.h"
#include "runtime/Text.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <set>
#include <vector>

namespace tgc::codegen {

std::string integerCTypeName(mlir::Type t) {
  if (t.isInteger(1))
    return "uint8_t";
  auto i = t.dyn_cast<mlir::IntegerType>();
  if (!i)
    return "";
  const bool u = i.isUnsigned();
  switch (i.getWidth()) {
  case 4: // one a byte, int4 sign-extended
  case 8: return u ? "uint8_t" : "int8_t";
  case 16: return u ? "uint16_t" : "int16_t";
  case 32: return u ? "uint32_t" : "int32_t";
  case 64: return u ? "uint64_t" : "int64_t";
  default: return "";
  }
}

std::optional<std::vector<std::string>>
denseLiterals(const mlir::DenseElementsAttr &a, const std::function<bool(mlir::Type)> &floatOk,
              const std::function<std::string(double, bool)> &floatLit) {
  std::vector<std::string> out;
  mlir::Type e = a.getElementType();
  if (e.isa<mlir::FloatType>()) {
    if (!floatOk(e))
      return std::nullopt;
    const bool f32 = !e.isF64();
    if (a.isSplat())
      out.push_back(floatLit(a.getSplatValue<llvm::APFloat>().convertToDouble(), f32));
    else
      for (llvm::APFloat f : a.getValues<llvm::APFloat>())
        out.push_back(floatLit(f.convertToDouble(), f32));
    return out;
  }
  auto it = e.dyn_cast<mlir::IntegerType>();
  if (!it)
    return std::nullopt;
  auto lit = [&](const llvm::APInt &v) {
    if (it.getWidth() == 1)
      return std::string(v.isZero() ? "0" : "1");
    if (it.isUnsigned())
      return std::to_string(v.getZExtValue()) + "ULL";
    return str(v.getSExtValue());
  };
  if (a.isSplat())
    out.push_back(lit(a.getSplatValue<llvm::APInt>()));
  else
    for (llvm::APInt v : a.getValues<llvm::APInt>())
      out.push_back(lit(v));
  return out;
}

int64_t product(const Shape &s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < std::min(to, s.size()); ++i)
    n *= s[i];
  return n;
}

Shape shapeOf(mlir::Value v) {
  auto t = v.getType().cast<mlir::RankedTensorType>();
  return Shape(t.getShape().begin(), t.getShape().end());
}

Shape contiguousStrides(const Shape &s) { return stridesOf(s); }

Shape broadcastStrides(const Shape &in, const Shape &out) {
  Shape st(out.size(), 0), cs = contiguousStrides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    st[off + i] = in[i] == 1 ? 0 : cs[i];
  return st;
}

std::string offsetExpr(const std::string &base, const std::string &var, int64_t stride) {
  if (stride == 0)
    return base;
  std::string b = base == "0" ? "" : base + " + ";
  if (stride == 1)
    return b + var;
  return b + var + " * " + str(stride);
}

std::string str(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min())
    return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + (v > 2147483647 || v < -2147483647 ? "LL" : "");
}

Shape intsOf(mlir::ArrayAttr a) {
  Shape r;
  for (mlir::Attribute v : a)
    r.push_back(v.cast<mlir::IntegerAttr>().getInt());
  return r;
}

std::string intArray(const Shape &v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + str(v[i]);
  return s + (v.empty() ? "0}" : "}");
}

std::string locationNames(mlir::Location loc) {
  std::vector<std::string> names;
  std::function<void(mlir::Location)> walk = [&](mlir::Location l) {
    if (auto n = l.dyn_cast<mlir::NameLoc>()) {
      names.push_back(escapeText(n.getName().strref().str()));
    } else if (auto f = l.dyn_cast<mlir::FusedLoc>()) {
      for (mlir::Location x : f.getLocations())
        walk(x);
    } else if (auto cs = l.dyn_cast<mlir::CallSiteLoc>()) {
      walk(cs.getCallee());
    }
  };
  walk(loc);
  std::string s;
  std::set<std::string> seen;
  for (auto &n : names)
    if (seen.insert(n).second)
      s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string firstCompilerError(const std::string &log) {
  llvm::SmallVector<llvm::StringRef, 64> lines;
  llvm::StringRef(log).split(lines, '\n');
  auto isError = [](llvm::StringRef l) {
    return l.contains(": error:") || l.contains("): error") || l.contains(": fatal error:") ||
           l.startswith("error:");
  };
  size_t first = lines.size(), errors = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    if (isError(lines[i]) && errors++ == 0)
      first = i;
  if (first == lines.size())
    return log.size() > 8000 ? log.substr(0, 8000) + "\n... (truncated)" : log;
  std::string out;
  for (size_t i = first; i < lines.size() && i < first + 5; ++i) {
    if (i > first && (isError(lines[i]) || lines[i].contains(": warning") ||
                      lines[i].contains("): warning") || lines[i].trim().empty()))
      break;
    out += (out.empty() ? "" : "\n") + lines[i].str();
  }
  if (errors > 1)
    out += "\n(" + std::to_string(errors - 1) + " more error(s) follow in the compiler's output)";
  return out;
}

std::string sourceComment(llvm::StringRef text) { return std::string("// ").append(safeText(text.str())); }

std::vector<std::pair<int64_t, Shape>> mergeLoopDims(const Shape &shape,
                                                     const std::vector<Shape> &strides) {
  const size_t n = strides.size();
  std::vector<std::pair<int64_t, Shape>> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    Shape st(n);
    for (size_t k = 0; k < n; ++k)
      st[k] = strides[k][d];
    if (!dims.empty()) {
      bool merge = true;
      for (size_t k = 0; k < n; ++k)
        merge = merge && dims.back().second[k] == st[k] * shape[d];
      if (merge) {
        dims.back().first *= shape[d];
        dims.back().second = st;
        continue;
      }
    }
    dims.push_back({shape[d], st});
  }
  return dims;
}

std::string broadcastIndex(const std::string &idx, const Shape &out, const Shape &in) {
  if (product(in) == product(out))
    return idx; // the same elements in the same order (broadcasting can only add 1s)
  const Shape st = broadcastStrides(in, out), inner = contiguousStrides(out);
  std::string e;
  for (size_t d = 0; d < out.size(); ++d)
    if (st[d] != 0 && out[d] > 1)
      e += (e.empty() ? "" : " + ") + std::string("(") + idx + ") / " + std::to_string(inner[d]) +
           " % " + std::to_string(out[d]) + " * " + std::to_string(st[d]);
  return e.empty() ? "0" : e;
}

ReduceLayout reduceLayout(mlir::Operation *reduceOp) {
  const Shape x = shapeOf(reduceOp->getOperand(0));
  std::vector<bool> red(x.size(), false);
  for (mlir::Attribute a : reduceOp->getAttrOfType<mlir::ArrayAttr>("axes"))
    red[(size_t)*tgc::normalizeAxis(a.cast<mlir::IntegerAttr>().getInt(), x.size())] = true;
  const Shape xs = contiguousStrides(x);
  ReduceLayout l;
  Shape reduced, reducedStrides;
  for (size_t d = 0; d < x.size(); ++d) {
    (red[d] ? reduced : l.kept).push_back(x[d]);
    (red[d] ? reducedStrides : l.keptStrides).push_back(xs[d]);
  }
  for (const auto &[size, strides] : mergeLoopDims(reduced, {reducedStrides})) {
    l.rdims.push_back({size, strides[0]});
    l.count *= size;
  }
  return l;
}

NormParamIndex normParamIndex(const Shape &x, int64_t axis, Shape ps) {
  NormParamIndex ix;
  const Shape norm(x.begin() + axis, x.end());
  const int64_t D = product(norm);
  while (ps.size() > norm.size() && ps.front() == 1)
    ps.erase(ps.begin());
  Shape st;
  if (ps.size() > norm.size()) {
    ix.rowDims = true;
    st = broadcastStrides(ps, x);
    for (int64_t d = 0; d < axis; ++d)
      if (st[d] != 0)
        ix.rowOff += " + ((r / " + str(product(x, d + 1, axis)) + ") % " + str(x[d]) + ") * " +
                     str(st[d]);
    st.erase(st.begin(), st.begin() + axis);
  } else if (ps == norm) {
    ix.perColumn = true;
    return ix;
  } else if (product(ps) == 1) {
    ix.one = true;
    return ix;
  } else {
    st = broadcastStrides(ps, norm);
  }
  Shape coord(norm.size(), 0);
  bool contiguous = true;
  for (int64_t j = 0; j < D; ++j) {
    int64_t o = 0;
    for (size_t d = 0; d < norm.size(); ++d)
      o += coord[d] * st[d];
    ix.table.push_back(o);
    contiguous = contiguous && o == j;
    for (int64_t d = (int64_t)norm.size() - 1; d >= 0; --d) {
      if (++coord[d] < norm[d])
        break;
      coord[d] = 0;
    }
  }
  if (contiguous) {
    ix.table.clear();
    ix.perColumn = !ix.rowDims; // e.g. [M] over normalized dims [1, M]
  }
  return ix;
}

std::optional<MatmulDims> matmulDims(const Shape &a, const Shape &b) {
  MatmulDims d;
  d.M = a.size() >= 2 ? a[a.size() - 2] : 1;
  d.K = a.back();
  d.N = b.size() >= 2 ? b.back() : 1;
  d.lhsBatch = a.size() > 2 ? Shape(a.begin(), a.end() - 2) : Shape{};
  d.rhsBatch = b.size() > 2 ? Shape(b.begin(), b.end() - 2) : Shape{};
  auto batch = tgc::broadcastShapes(d.lhsBatch, d.rhsBatch);
  if (!batch)
    return std::nullopt;
  d.batch = *batch;
  d.NB = product(d.batch);
  return d;
}

std::string attentionMaskIndex(const Shape &mask, const Shape &bhsl) {
  const Shape ms = broadcastStrides(mask, bhsl);
  const char *vars[] = {"b", "h", "s", "t"};
  std::string idx;
  for (int d = 0; d < 4; ++d)
    if (ms[d] != 0)
      idx += std::string(idx.empty() ? "" : " + ") + vars[d] + " * " + str(ms[d]);
  return idx.empty() ? "0" : idx;
}

} // namespace tgc::codegen
