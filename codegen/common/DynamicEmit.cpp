// DynamicEmit.cpp — nonzero, unique and non-max suppression for both backends (see DynamicEmit.h).
#include "codegen/common/DynamicEmit.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::codegen {

bool isDynamicOp(Operation *op) { return isa<tg::NonzeroOp, tg::UniqueOp, tg::NmsOp>(op); }

namespace {

/// "0" of the storage type `ct` (f16/bf16 rounded from float).
std::string zeroOf(const CKernel &kb, const CType &ct) {
  const std::string z = valueLiteral(kb.target, ct, 0);
  return ct.lowp ? ct.st(z) : z;
}

llvm::Error nonzero(CKernel &kb, tg::NonzeroOp op) {
  Code &c = kb.c;
  auto ct = kb.ctype(op.getInput(), op);
  if (!ct)
    return ct.takeError();
  const Shape x = shapeOf(op.getInput());
  const int64_t r = x.size(), n = product(x);
  if (llvm::StringRef(kb.target.backend).startswith("CUDA")) {
    // One block (the hook launches one): chunks of blockDim.x elements, a block-wide prefix sum
    // giving each nonzero element its column, in order.
    c.line(sourceComment("one block: per chunk of blockDim.x elements a block-wide prefix sum "
                         "places each nonzero element's coordinates; then zeros; out1 = count"));
    c.line("__shared__ int64_t tg_part[1024];");
    c.line("const int64_t tid = threadIdx.x, nt = blockDim.x;");
    c.line("int64_t n = 0;");
    c.open("for (int64_t start = 0; start < " + str(n) + "; start += nt)");
    c.line("const int64_t e = start + tid;");
    c.line("const int64_t f = (e < " + str(n) + " && " + ct->ld(kb.inPtr[0] + "[e]") +
           " != 0) ? 1 : 0;");
    c.line("tg_part[tid] = f;");
    c.line("__syncthreads();");
    c.open("for (int64_t off = 1; off < nt; off <<= 1)");
    c.line("const int64_t v = tid >= off ? tg_part[tid - off] : 0;");
    c.line("__syncthreads();");
    c.line("tg_part[tid] += v;");
    c.line("__syncthreads();");
    c.close();
    c.open("if (f)");
    c.line("const int64_t col = n + tg_part[tid] - 1;");
    c.line("int64_t rem = e;");
    for (int64_t d = r - 1; d >= 0; --d) {
      c.line(kb.outPtr[0] + "[" + str(d * n) + " + col] = rem % " + str(x[d]) + ";");
      c.line("rem /= " + str(x[d]) + ";");
    }
    c.close();
    c.line("n += tg_part[nt - 1];");
    c.line("__syncthreads();");
    c.close();
    c.open("for (int64_t j = n + tid; j < " + str(n) + "; j += nt)");
    for (int64_t d = 0; d < r; ++d)
      c.line(kb.outPtr[0] + "[" + str(d * n) + " + j] = 0;");
    c.close();
    c.line("if (tid == 0) " + kb.outPtr[1] + "[0] = n;");
    kb.items = 1;
    return llvm::Error::success();
  }
  c.line(sourceComment("one item: the nonzero elements' coordinates in row-major order, then "
                       "zeros; out1 = their count"));
  kb.openParallel("t", 1, std::max<int64_t>(n * r, 1));
  c.line("(void)t;");
  c.line("int64_t n = 0;");
  c.open("for (int64_t e = 0; e < " + str(n) + "; ++e)");
  c.line("if (" + ct->ld(kb.inPtr[0] + "[e]") + " == 0) continue;");
  c.line("int64_t rem = e;");
  for (int64_t d = r - 1; d >= 0; --d) {
    c.line(kb.outPtr[0] + "[" + str(d * n) + " + n] = rem % " + str(x[d]) + ";");
    c.line("rem /= " + str(x[d]) + ";");
  }
  c.line("++n;");
  c.close();
  c.open("for (int64_t j = n; j < " + str(n) + "; ++j)");
  for (int64_t d = 0; d < r; ++d)
    c.line(kb.outPtr[0] + "[" + str(d * n) + " + j] = 0;");
  c.close();
  c.line(kb.outPtr[1] + "[0] = n;");
  c.close();
  return llvm::Error::success();
}

llvm::Error unique(CKernel &kb, tg::UniqueOp op) {
  Code &c = kb.c;
  auto ct = kb.ctype(op.getInput(), op);
  if (!ct)
    return ct.takeError();
  const Shape x = shapeOf(op.getInput());
  const int64_t axis = *tgc::normalizeAxis(op.getAxis(), x.size());
  const int64_t O = product(x, 0, axis), L = x[axis], I = product(x, axis + 1), S = O * I;
  const std::string &X = kb.inPtr[0], &Y = kb.outPtr[0], &first = kb.outPtr[1], &inv = kb.outPtr[2],
                    &cnt = kb.outPtr[3];
  // Element k of slice s.
  auto at = [&](const std::string &s, const std::string &k) {
    return "(" + k + " / " + str(I) + ") * " + str(L * I) + " + " + s + " * " + str(I) + " + " + k +
           " % " + str(I);
  };
  auto val = [&](const std::string &s) { return ct->ld(X + "[" + at(s, "k") + "]"); };
  // `flag` = slices a and b are equal, element by element.
  auto same = [&](const std::string &flag, const std::string &a, const std::string &b) {
    c.line("bool " + flag + " = true;");
    c.open("for (int64_t k = 0; k < " + str(S) + " && " + flag + "; ++k)");
    c.line(flag + " = " + val(a) + " == " + val(b) + ";");
    c.close();
  };
  c.line(sourceComment("one item: distinct slices along axis " + str(axis) +
                       " by first occurrence" + (op.getSorted() ? ", then sorted" : "") +
                       "; out4 = their count"));
  kb.openParallel("t", 1, std::max<int64_t>(L * L * S, 1));
  c.line("(void)t;");
  c.line("int64_t u = 0;");
  c.open("for (int64_t s = 0; s < " + str(L) + "; ++s)");
  c.line("int64_t j = 0;");
  c.open("for (; j < u; ++j)");
  same("eq", first + "[j]", "s");
  c.line("if (eq) break;");
  c.close();
  c.open("if (j == u)");
  c.line(first + "[u] = s;");
  c.line(cnt + "[u] = 0;");
  c.line("++u;");
  c.close();
  c.line(cnt + "[j] += 1;");
  c.line(inv + "[s] = j;");
  c.close();
  if (op.getSorted()) {
    c.line("// insertion sort of the distinct slices, lexicographically");
    c.open("for (int64_t p = 1; p < u; ++p)");
    c.line("const int64_t fi = " + first + "[p], fc = " + cnt + "[p];");
    c.line("int64_t q = p;");
    c.open("while (q > 0)");
    c.line("const int64_t g = " + first + "[q - 1];");
    c.line("bool lt = false;");
    c.open("for (int64_t k = 0; k < " + str(S) + "; ++k)");
    c.line("if (" + val("fi") + " < " + val("g") + ") { lt = true; break; }");
    c.line("if (" + val("g") + " < " + val("fi") + ") break;");
    c.close();
    c.line("if (!lt) break;");
    c.line(first + "[q] = g;");
    c.line(cnt + "[q] = " + cnt + "[q - 1];");
    c.line("--q;");
    c.close();
    c.line(first + "[q] = fi;");
    c.line(cnt + "[q] = fc;");
    c.close();
    c.open("for (int64_t s = 0; s < " + str(L) + "; ++s)");
    c.open("for (int64_t j = 0; j < u; ++j)");
    same("eq", first + "[j]", "s");
    c.open("if (eq)");
    c.line(inv + "[s] = j;");
    c.line("break;");
    c.close();
    c.close();
    c.close();
  }
  c.open("for (int64_t p = 0; p < " + str(L) + "; ++p)");
  c.open("for (int64_t k = 0; k < " + str(S) + "; ++k)");
  c.line(Y + "[" + at("p", "k") + "] = p < u ? " + X + "[" + at(first + "[p]", "k") +
         "] : " + zeroOf(kb, *ct) + ";");
  c.close();
  c.open("if (p >= u)");
  c.line(first + "[p] = 0;");
  c.line(cnt + "[p] = 0;");
  c.close();
  c.close();
  c.line(kb.outPtr[4] + "[0] = u;");
  c.close();
  return llvm::Error::success();
}

llvm::Error nms(CKernel &kb, tg::NmsOp op) {
  Code &c = kb.c;
  auto ct = kb.ctype(op.getBoxes(), op);
  if (!ct)
    return ct.takeError();
  if (!ct->isFloat)
    return kb.error(op, "boxes must be float");
  const Shape b = shapeOf(op.getBoxes()), s = shapeOf(op.getScores());
  const int64_t B = b[0], N = b[1], C = s[1];
  const int64_t cap = std::min<int64_t>(op.getMaxPerClassAttr().getInt(), N);
  const int64_t rows = B * C * cap;
  const std::string T = ct->calc();
  const bool f32 = T == "float";
  const std::string iou = kb.target.floatLiteral(op.getIouThreshold().convertToDouble(), f32);
  const std::string thr = kb.target.floatLiteral(op.getScoreThreshold().convertToDouble(), f32);
  const std::string &bx = kb.inPtr[0], &sc = kb.inPtr[1], &out = kb.outPtr[0];
  auto ld = [&](const std::string &e) { return ct->ld(e); };
  c.line(sourceComment("one item: per batch and class, candidates by decreasing score, each kept "
                       "unless a kept box's IoU exceeds the threshold; out1 = the rows written"));
  kb.openParallel("t", 1, std::max<int64_t>(B * C * N * N, 1));
  c.line("(void)t;");
  c.line("int64_t n = 0;");
  c.open("for (int64_t bc = 0; bc < " + str(B * C) + "; ++bc)");
  c.line("const int64_t b = bc / " + str(C) + ", cl = bc % " + str(C) + ";");
  c.line("const int64_t start = n;");
  c.line(T + " pv = 0;");
  c.line("int64_t pi = -1;");
  c.open("for (int64_t q = 0; q < " + str(N) + " && n - start < " + str(cap) + "; ++q)");
  c.line(T + " bv = 0;");
  c.line("int64_t bi = -1;");
  c.open("for (int64_t j = 0; j < " + str(N) + "; ++j)");
  c.line("const " + T + " v = " + ld(sc + "[bc * " + str(N) + " + j]") + ";");
  if (op.getHasScoreThreshold())
    c.line("if (!(v > " + thr + ")) continue;");
  c.line("if (pi >= 0 && !(v < pv || (v == pv && j > pi))) continue;");
  c.line("if (bi < 0 || v > bv || (v == bv && j < bi)) { bv = v; bi = j; }");
  c.close();
  c.line("if (bi < 0) break;");
  c.line("pv = bv;");
  c.line("pi = bi;");
  c.line("bool keep = true;");
  c.open("for (int64_t r = start; r < n && keep; ++r)");
  auto box = [&](const std::string &i, int k) {
    return ld(bx + "[(b * " + str(N) + " + " + i + ") * 4 + " + std::to_string(k) + "]");
  };
  c.line("const int64_t o = " + out + "[r * 3 + 2];");
  c.line(T + " a0 = " + box("bi", 0) + ", a1 = " + box("bi", 1) + ", a2 = " + box("bi", 2) +
         ", a3 = " + box("bi", 3) + ";");
  c.line(T + " b0 = " + box("o", 0) + ", b1 = " + box("o", 1) + ", b2 = " + box("o", 2) +
         ", b3 = " + box("o", 3) + ";");
  c.line(T + " ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;");
  if (!op.getCenterPointBox()) {
    c.line("ax0 = a1 < a3 ? a1 : a3; ax1 = a1 < a3 ? a3 : a1;");
    c.line("ay0 = a0 < a2 ? a0 : a2; ay1 = a0 < a2 ? a2 : a0;");
    c.line("bx0 = b1 < b3 ? b1 : b3; bx1 = b1 < b3 ? b3 : b1;");
    c.line("by0 = b0 < b2 ? b0 : b2; by1 = b0 < b2 ? b2 : b0;");
  } else {
    c.line("ax0 = a0 - a2 / 2; ax1 = a0 + a2 / 2; ay0 = a1 - a3 / 2; ay1 = a1 + a3 / 2;");
    c.line("bx0 = b0 - b2 / 2; bx1 = b0 + b2 / 2; by0 = b1 - b3 / 2; by1 = b1 + b3 / 2;");
  }
  c.line("const " + T + " ix0 = ax0 > bx0 ? ax0 : bx0, ix1 = ax1 < bx1 ? ax1 : bx1;");
  c.line("const " + T + " iy0 = ay0 > by0 ? ay0 : by0, iy1 = ay1 < by1 ? ay1 : by1;");
  c.line("if (ix1 <= ix0 || iy1 <= iy0) continue;");
  c.line("const " + T + " inter = (ix1 - ix0) * (iy1 - iy0);");
  c.line("const " + T + " areaA = (ax1 - ax0) * (ay1 - ay0), areaB = (bx1 - bx0) * (by1 - by0);");
  c.line("const " + T + " uni = areaA + areaB - inter;");
  c.line("if (inter <= 0 || areaA <= 0 || areaB <= 0 || uni <= 0) continue;");
  c.line("keep = !(inter / uni > " + iou + ");");
  c.close();
  c.line("if (!keep) continue;");
  c.line(out + "[n * 3] = b;");
  c.line(out + "[n * 3 + 1] = cl;");
  c.line(out + "[n * 3 + 2] = bi;");
  c.line("++n;");
  c.close();
  c.close();
  c.open("for (int64_t r = n * 3; r < " + str(rows * 3) + "; ++r)");
  c.line(out + "[r] = 0;");
  c.close();
  c.line(kb.outPtr[1] + "[0] = n;");
  c.close();
  return llvm::Error::success();
}

} // namespace

llvm::Error emitDynamicOp(CKernel &kb, Operation *op) {
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    if (kb.inPtr[i].empty())
      return kb.error(op, "operand " + std::to_string(i) + " has no buffer");
  if (auto nz = dyn_cast<tg::NonzeroOp>(op))
    return nonzero(kb, nz);
  if (auto u = dyn_cast<tg::UniqueOp>(op))
    return unique(kb, u);
  if (auto n = dyn_cast<tg::NmsOp>(op))
    return nms(kb, n);
  return kb.error(op, "not a data-dependent op");
}

} // namespace tgc::codegen
