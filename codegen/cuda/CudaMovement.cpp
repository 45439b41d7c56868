// CudaMovement.cpp — CUDA kernels for data movement: transpose (a cast before it folded in), slice,
// expand, pad, concat, split (with the rotaries it applies), gather and gather-elements.
#include "codegen/cuda/CudaBuilder.h"
#include "codegen/common/MovementEmit.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::cuda {

/// The body of a rotary's grid loop over its input's shape, with `q` the offsets of (result, x,
/// cos, sin): y = x * cos + rotate(x) * sin in the calc type (float for f16/bf16, rounded once on
/// store), the partner element of x read directly (same row: the last dim is contiguous).
void rotaryElement(Code &c, tg::RotaryOp ro, const std::string &it, const std::string &out,
                   const std::string &x, const std::string &cs, const std::string &sn,
                   const std::vector<std::string> &q) {
  const CType ct = llvm::cantFail(ctypeOf(ro.getResult(), ro));
  const CType xt = llvm::cantFail(ctypeOf(ro.getInput(), ro));
  const CType cct = llvm::cantFail(ctypeOf(ro.getCos(), ro));
  const CType sct = llvm::cantFail(ctypeOf(ro.getSin(), ro));
  const std::string F = "(" + ct.calc() + ")";
  auto xAt = [&](const std::string &d) { return F + xt.ld(x + "[" + q[1] + d + "]"); };
  const int64_t D = shapeOf(ro.getInput()).back(), H = D / 2;
  c.line("const " + it + " k = " + q[0] + " % " + str(D) + ";");
  if (ro.getInterleaved())
    c.line("const " + ct.calc() + " p = (k & 1) ? " + xAt(" - 1") + " : -" + xAt(" + 1") + ";");
  else
    c.line("const " + ct.calc() + " p = k < " + str(H) + " ? -" + xAt(" + " + str(H)) + " : " +
           xAt(" - " + str(H)) + ";");
  c.line(out + "[" + q[0] + "] = " +
         ct.st(xAt("") + " * " + F + cct.ld(cs + "[" + q[2] + "]") + " + p * " + F +
               sct.ld(sn + "[" + q[3] + "]")) +
         ";");
}

std::vector<tg::RotaryOp> KernelBuilder::splitRotaries(tg::SplitOp sp) const {
  std::vector<tg::RotaryOp> rot(sp->getNumResults());
  // The ops right after the split: views and rotaries only (so no other kernel runs before the
  // rotaries' results are written, and every rotary among them must be applied here).
  std::set<Operation *> window;
  for (Operation *o = sp->getNextNode(); o && isa<tg::ReshapeOp, tg::RotaryOp>(o);
       o = o->getNextNode())
    window.insert(o);
  const Shape x = shapeOf(sp.getInput());
  auto axis = tgc::normalizeAxis(sp.getAxis(), x.size());
  auto locOf = [&](Value v) -> const BufferLoc * {
    auto it = em.plan_.locs.find(v);
    return it == em.plan_.locs.end() || it->second.kind == BufferLoc::Inline ? nullptr
                                                                              : &it->second;
  };
  const BufferLoc *in = locOf(sp.getInput());
  if (!axis || !in)
    return {};
  std::vector<const BufferLoc *> written, read{in}; // read: the input, the rotaries' cos/sin
  size_t rotaries = 0;
  for (unsigned i = 0; i < sp->getNumResults(); ++i) {
    Value v = sp->getResult(i);
    while (v.hasOneUse() && isa<tg::ReshapeOp>(*v.getUsers().begin()) &&
           window.count(*v.getUsers().begin()))
      v = v.getUsers().begin()->getResult(0);
    auto ro = v.hasOneUse() ? dyn_cast<tg::RotaryOp>(*v.getUsers().begin()) : tg::RotaryOp();
    if (ro && window.count(ro) && ro.getInput() == v) {
      // x's trailing dims span exactly the part's row, a whole number of rotary rows.
      const Shape rx = shapeOf(v);
      const int64_t part = product(shapeOf(sp->getResult(i)), *axis);
      int64_t suffix = 1;
      for (size_t k = rx.size(); k > 0 && suffix < part;)
        suffix *= rx[--k];
      auto ct = ctypeOf(v, ro);
      const BufferLoc *out = locOf(ro.getResult());
      if (!ct || !ct->isFloat || suffix != part || rx.empty() || part % rx.back() ||
          !locOf(ro.getCos()) || !locOf(ro.getSin()) || !out ||
          ro.getResult().getType() != v.getType()) {
        if (!ct)
          llvm::consumeError(ct.takeError());
        return {};
      }
      // cos/sin must exist before the kernel runs: not a part or a rotary result of this split.
      for (Value t : {ro.getCos(), ro.getSin()}) {
        while (auto r = t.getDefiningOp<tg::ReshapeOp>())
          t = r.getInput();
        if (Operation *def = t.getDefiningOp(); def && (def == sp || window.count(def)))
          return {};
        read.push_back(locOf(t));
      }
      rot[i] = ro;
      ++rotaries;
      written.push_back(out);
    } else if (const BufferLoc *out = locOf(sp->getResult(i))) {
      written.push_back(out);
    } else {
      return {};
    }
  }
  for (Operation *o : window)
    if (isa<tg::RotaryOp>(o) && std::find(rot.begin(), rot.end(), o) == rot.end())
      return {};
  std::vector<const BufferLoc *> parts; // read by the rotaries when the GEMM wrote them
  for (Value r : sp->getResults())
    if (const BufferLoc *l = locOf(r))
      parts.push_back(l);
  for (size_t a = 0; a < written.size(); ++a) {
    for (const BufferLoc *r : read)
      if (!r || overlaps(*written[a], *r))
        return {};
    for (const BufferLoc *part : parts)
      if (written[a] != part && overlaps(*written[a], *part))
        return {};
    for (size_t b = a + 1; b < written.size(); ++b)
      if (overlaps(*written[a], *written[b]))
        return {};
  }
  return rotaries ? rot : std::vector<tg::RotaryOp>();
}

llvm::Error KernelBuilder::emitSplitRotary(tg::SplitOp sp, const std::vector<tg::RotaryOp> &rot,
                                            bool byGemm, std::string &code) {
  // One thread per element of each part in turn (a grid-stride loop per part): a plain part is
  // copied (unless the GEMM wrote it); a rotated part writes its rotary's result,
  // y = x * cos + rotate(x) * sin, in the calc type (float for f16/bf16, rounded once on store),
  // reading x from the split's input (or from the part the GEMM wrote; the partner element is in
  // the same row either way) and cos/sin through broadcast strides.
  const Shape x = shapeOf(sp.getInput());
  const int64_t axis = *tgc::normalizeAxis(sp.getAxis(), x.size()), row = product(x, axis);
  int64_t off = 0, biggest = 1;
  for (unsigned i = 0; i < sp->getNumResults(); ++i) {
    const Shape r = shapeOf(sp->getResult(i));
    const int64_t part = product(r, axis), n = product(r);
    biggest = std::max(biggest, n);
    if (n == 0)
      continue;
    tg::RotaryOp ro = rot[i];
    if (!ro && byGemm) { // the GEMM wrote this part
      off += part;
      continue;
    }
    if (!ro) {
      c.open("for (" + it + " i = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x; i < " +
             str(n) + "; i += (" + it + ")gridDim.x * blockDim.x)");
      c.line(outPtr[i] + "[i] = in0[i / " + str(part) + " * " + str(row) + " + " + str(off) +
             " + i % " + str(part) + "];");
      c.close();
      off += part;
      continue;
    }
    const CType ct = llvm::cantFail(ctypeOf(ro.getResult(), ro));
    params[1 + i] = ct.name + " *" + outPtr[i]; // in place of part i: the rotary's result
    kargs[1 + i] = StepArg{ro.getResult()};
    const std::string cs = "rc" + std::to_string(i), sn = "rs" + std::to_string(i);
    const CType cct = llvm::cantFail(ctypeOf(ro.getCos(), ro)),
                sct = llvm::cantFail(ctypeOf(ro.getSin(), ro));
    addParam("const " + cct.name + " *" + cs, StepArg{ro.getCos()});
    addParam("const " + sct.name + " *" + sn, StepArg{ro.getSin()});
    // Input strides of the rotary's x: its trailing dims span the part's row (splitRotaries).
    const Shape rx = shapeOf(ro.getInput());
    Shape st(rx.size());
    int64_t s = 1;
    size_t k = rx.size();
    for (; k > 0 && s < part; --k)
      st[k - 1] = s, s *= rx[k - 1];
    for (s = row; k > 0; --k)
      st[k - 1] = s, s *= rx[k - 1];
    std::string src = "in0", base = str(off);
    if (byGemm) { // read the part the GEMM wrote (the split's result i) instead of the input
      src = "rx" + std::to_string(i), base = "0", st = contiguousStrides(rx);
      addParam("const " + ct.name + " *" + src, StepArg{sp->getResult(i)});
    }
    gridLoop(rx, {contiguousStrides(rx), st, broadcastStrides(shapeOf(ro.getCos()), rx),
                  broadcastStrides(shapeOf(ro.getSin()), rx)},
             {"0", base, "0", "0"}, [&](Code &c, const std::vector<std::string> &q) {
               rotaryElement(c, ro, it, outPtr[i], src, cs, sn, q);
             });
    const std::string names = locationNames(ro->getLoc());
    label += " + tg.rotary" + (names.empty() ? "" : " <- " + names);
    em.appliedBySplit_.insert(ro);
    off += part;
  }
  endKernel(code, gridFor(biggest), kBlock);
  return llvm::Error::success();
}

/// Elements per 16-byte vector of type `ct` (f16/bf16 8, f32 4), 0 where movement stays scalar.
static int64_t vectorWidth(const CType &ct) { return ct.lowp ? 8 : (ct.name == "float" ? 4 : 0); }

/// Data movement: one thread per output element (per input element for split), or per 16-byte
/// vector of them where a pad or gather moves whole rows.
llvm::Error KernelBuilder::emitMovement(Operation *op, const CType &ct) {
  const std::string &T = ct.name;
  if (auto tr = dyn_cast<tg::TransposeOp>(op)) {
    const Shape y = shapeOf(tr.getResult()), st = codegen::transposeStrides(tr);
    Operation *cast = tr.getInput().getDefiningOp();
    while (cast && isa<tg::ReshapeOp>(cast))
      cast = cast->getOperand(0).getDefiningOp();
    if (cast && castFoldsIntoTranspose(cast)) {
      // Read the cast's input and convert while moving.
      CType from = llvm::cantFail(ctypeOf(cast->getOperand(0), cast));
      params[0] = "const " + from.name + " *in0";
      kargs[0] = StepArg{cast->getOperand(0)};
      const std::string names = locationNames(cast->getLoc());
      label = "tg.cast" + (names.empty() ? "" : " <- " + names) + " + " + label;
      // (castFoldsIntoTranspose checked both types: the expression cannot fail.)
      gridLoop(y, {contiguousStrides(y), st}, {"0", "0"},
               [&](Code &c, const std::vector<std::string> &o) {
                 std::string e = llvm::cantFail(
                     elemExpr(cast, {"(" + from.calc() + ")" + from.ld("in0[" + o[1] + "]")}));
                 c.line("out0[" + o[0] + "] = " + (ct.lowp ? ct.st(e) : e) + ";");
               });
      return llvm::Error::success();
    }
  }
  if (codegen::isStridedCopy(op)) {
    codegen::emitStridedCopy(*this, op);
    return llvm::Error::success();
  }
  if (auto pad = dyn_cast<tg::PadOp>(op)) {
    const codegen::PadLayout l = codegen::padLayout(*this, pad, ct);
    const Shape &x = l.x, &y = l.y, &p = l.pads;
    const std::string &lit = l.value;
    Shape xs = contiguousStrides(x);
    // The last dim unpadded and a multiple of 16 bytes (aligned buffers): 16-byte vectors, each
    // inside or outside the input as a whole (a 1-D convolution's padded rows: perf-log,
    // thirty-third session).
    const int64_t V = vectorWidth(ct);
    const bool vec = V > 0 && !y.empty() && p[y.size() - 1] == 0 && y.back() == x.back() &&
                     y.back() % V == 0 && product(y) > 0 && argsAligned16();
    if (vec)
      vecWidth = V;
    const std::string fill = ct.lowp ? ct.st(lit) : "(" + T + ")" + lit;
    c.open("for (" + it + " i = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x; i < " +
           str(product(y) / vecWidth) + "; i += (" + it + ")gridDim.x * blockDim.x)");
    c.line(it + " rem = " + (vec ? "i * " + str(V) : std::string("i")) + ", src = 0;");
    c.line("bool inside = true;");
    for (int64_t d = (int64_t)y.size() - 1; d >= 0; --d) {
      c.open("");
      c.line("const " + it + " ic = rem % " + str(y[d]) + " - " + str(p[d]) + ";");
      c.line("rem /= " + str(y[d]) + ";");
      c.line("inside = inside && ic >= 0 && ic < " + str(x[d]) + ";");
      c.line("src += ic * " + str(xs[d]) + ";");
      c.close();
    }
    if (vec) {
      c.open("if (inside)");
      c.line("reinterpret_cast<uint4 *>(out0)[i] = *reinterpret_cast<const uint4 *>(in0 + src);");
      c.close();
      c.open("else");
      c.line(T + " v = " + fill + ";");
      c.line("uint4 w;");
      c.line(T + " *wp = reinterpret_cast<" + T + " *>(&w);");
      c.line("#pragma unroll");
      c.line("for (int u = 0; u < " + str(V) + "; ++u) wp[u] = v;");
      c.line("reinterpret_cast<uint4 *>(out0)[i] = w;");
      c.close();
    } else {
      c.line("out0[i] = inside ? in0[src] : " + fill + ";");
    }
    c.close();
    return llvm::Error::success();
  }
  if (isa<tg::ConcatOp, tg::SplitOp>(op)) { // one thread per element of the joined tensor
    const codegen::JoinLayout l = codegen::joinLayout(op);
    const bool cat = isa<tg::ConcatOp>(op);
    c.open("for (" + it + " i = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x; i < " +
           str(product(l.joined)) + "; i += (" + it + ")gridDim.x * blockDim.x)");
    c.line("const " + it + " o = i / " + str(l.row) + ", x = i % " + str(l.row) + ";");
    int64_t off = 0;
    std::string kw = "if";
    for (size_t i = 0; i < l.chunks.size(); ++i) {
      const int64_t chunk = l.chunks[i];
      if (chunk == 0)
        continue;
      const std::string part = (cat ? inPtr[i] : outPtr[i]) + "[o * " + str(chunk) + " + x - " +
                               str(off) + "]";
      c.line(kw + " (x < " + str(off + chunk) + ") " +
             (cat ? "out0[i] = " + part : part + " = in0[i]") + ";");
      kw = "else if";
      off += chunk;
    }
    c.close();
    return llvm::Error::success();
  }
  if (auto g = dyn_cast<tg::GatherOp>(op)) {
    const codegen::GatherLayout l = codegen::gatherLayout(g);
    const int64_t A = l.A, inner = l.inner, NI = l.NI;
    int64_t total = product(shapeOf(g.getResult()));
    c.line(sourceComment("indices are wrapped (negative + " + str(A) + ") and clamped to [0, " +
           str(std::max<int64_t>(A - 1, 0)) + "]: an out-of-range index never reads out of bounds"));
    // Rows a multiple of 16 bytes (aligned buffers): each thread moves a 16-byte vector of one
    // row (embedding rows; a 1-D convolution's columns: perf-log, thirty-third session).
    const int64_t V = vectorWidth(ct);
    const bool vec = A > 0 && V > 0 && inner % V == 0 && argsAligned16();
    if (vec)
      vecWidth = V;
    c.open("for (" + it + " i = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x; i < " +
           str(total / vecWidth) + "; i += (" + it + ")gridDim.x * blockDim.x)");
    if (A == 0) {
      c.line("out0[i] = " + ct.st("0") + ";");
    } else {
      const std::string e = vec ? "i * " + str(V) : "i";
      c.line("const " + it + " j = " + e + " % " + str(inner) + ", r = " + e + " / " + str(inner) +
             ";");
      c.line("const " + it + " o = r / " + str(NI) + ", k = r % " + str(NI) + ";");
      codegen::clampedIndexLines(c, "x", "in1[k]", A);
      const std::string src = "(o * " + str(A) + " + (" + it + ")x) * " + str(inner) + " + j";
      c.line(vec ? "reinterpret_cast<uint4 *>(out0)[i] = *reinterpret_cast<const uint4 *>(in0 + " +
                       src + ");"
                 : "out0[i] = in0[" + src + "];");
    }
    c.close();
    return llvm::Error::success();
  }
  if (isa<tg::GatherElementsOp>(op))
    return codegen::emitGatherElements(*this, op, ct);

  return opError(op, "op not supported by the CUDA backend");
}

} // namespace tgc::cuda
