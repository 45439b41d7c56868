// CpuMovement.cpp — CPU kernels for data movement: transpose, slice, expand, pad, concat, split,
// gather and gather-elements.
#include "codegen/cpu/CpuBuilder.h"
#include "codegen/common/MovementEmit.h"

namespace tgc::cpu {

llvm::Error KernelBuilder::emitMovement(Operation *op, const CType *ct) {
  const std::string T = ct->name;
  const std::string sz = "sizeof(" + T + ")";
  (void)sz;

  // A transpose that moves the input's contiguous dim: 2-D tiles (tg_transpose2d) over the dim
  // contiguous in the output (b) and the one contiguous in the input (a), the other dims as an
  // outer loop. The plain strided copy read one element per cache line at a power-of-two stride
  // (a 1x1 convolution's NCHW -> NHWC: 4 KiB apart, one L1 set), ~14 ns an element.
  if (auto tr = dyn_cast<tg::TransposeOp>(op)) {
    const Shape y = shapeOf(tr.getResult());
    const auto dims =
        codegen::mergeLoopDims(y, {contiguousStrides(y), codegen::transposeStrides(tr)});
    int a = -1;
    for (size_t d = 0; d + 1 < dims.size(); ++d)
      if (dims[d].second[1] == 1)
        a = (int)d;
    // The dims other than a and the innermost: the loop nest around either row kernel below.
    Shape rest, restOut, restIn;
    for (size_t d = 0; a >= 0 && d + 1 < dims.size(); ++d)
      if ((int)d != a) {
        rest.push_back(dims[d].first);
        restOut.push_back(dims[d].second[0]);
        restIn.push_back(dims[d].second[1]);
      }
    // The output's contiguous dim is short (<= 4, e.g. the stride phase that ConvTranspose's
    // phase interleave puts innermost): for each output row of the input's contiguous dim a,
    // the B input rows are read contiguously and written interleaved (B unrolled, constant
    // strides: a vectorizable loop). The 8 x 8 tiles spent most of their work on tails there.
    if (a >= 0 && dims.back().first <= 4 && dims.back().second[1] != 1) {
      const int64_t A = dims[a].first, B = dims.back().first;
      const int64_t isb = dims.back().second[1], osa = dims[a].second[0];
      loopNest(
          c, rest, {restOut, restIn}, {"0", "0"},
          [&](Code &c, const std::vector<std::string> &o) {
            c.line("const " + T + " *const ip = in0 + " + o[1] + ";");
            c.line(T + " *const op = out0 + " + o[0] + ";");
            c.open("for (int64_t q = 0; q < " + str(A) + "; ++q)");
            for (int64_t b = 0; b < B; ++b)
              c.line("op[q * " + str(osa) + " + " + str(b) + "] = ip[q + " + str(b * isb) + "];");
            c.close();
          },
          A * B);
      return llvm::Error::success();
    }
    if (a >= 0 && dims.back().second[1] >= 32 && dims[a].first * dims.back().first >= 64) {
      const int64_t A = dims[a].first, B = dims.back().first;
      const std::string call = "tg_transpose2d<" + T + ">(" + str(A) + ", " + str(B) + ", " +
                               str(dims.back().second[1]) + ", " + str(dims[a].second[0]) + ", ";
      if (rest.empty()) {
        c.line(call + "in0, out0, true);");
      } else {
        loopNest(
            c, rest, {restOut, restIn}, {"0", "0"},
            [&](Code &c, const std::vector<std::string> &o) {
              c.line(call + "in0 + " + o[1] + ", out0 + " + o[0] + ", false);");
            },
            A * B);
      }
      return llvm::Error::success();
    }
  }

  if (codegen::isStridedCopy(op)) {
    codegen::emitStridedCopy(*this, op);
    return llvm::Error::success();
  }

  if (auto pad = dyn_cast<tg::PadOp>(op)) {
    const codegen::PadLayout l = codegen::padLayout(*this, pad, *ct);
    const Shape &x = l.x, &y = l.y, &p = l.pads;
    const std::string &lit = l.value;
    c.line("std::fill(out0, out0 + " + str(product(y)) + ", (" + T + ")" + lit + ");");
    size_t r = x.size();
    Shape region(r), ys = contiguousStrides(y), xs = contiguousStrides(x);
    int64_t ob = 0, ib = 0;
    for (size_t d = 0; d < r; ++d) {
      int64_t begin = p[d], end = p[d + r];
      int64_t skipIn = std::max<int64_t>(-begin, 0), cutIn = std::max<int64_t>(-end, 0);
      region[d] = std::max<int64_t>(x[d] - skipIn - cutIn, 0);
      ob += std::max<int64_t>(begin, 0) * ys[d];
      ib += skipIn * xs[d];
    }
    loopNest(c, region, {ys, xs}, {str(ob), str(ib)},
             [&](Code &c, const std::vector<std::string> &o) {
               c.line("out0[" + o[0] + "] = in0[" + o[1] + "];");
             });
    return llvm::Error::success();
  }

  if (isa<tg::ConcatOp, tg::SplitOp>(op)) { // row by row, one memcpy per part
    const codegen::JoinLayout l = codegen::joinLayout(op);
    const bool cat = isa<tg::ConcatOp>(op);
    if (l.outer * l.row == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    std::string pr = pragma(l.outer * l.row);
    if (!pr.empty() && l.outer > 1)
      c.line(pr);
    c.open("for (int64_t o = 0; o < " + str(l.outer) + "; ++o)");
    int64_t off = 0;
    for (size_t i = 0; i < l.chunks.size(); ++i) {
      const int64_t chunk = l.chunks[i];
      const std::string joined = std::string(cat ? "out0" : "in0") + " + o * " + str(l.row) +
                                 " + " + str(off);
      const std::string part = (cat ? inPtr[i] : outPtr[i]) + " + o * " + str(chunk);
      if (chunk > 0)
        c.line("std::memcpy(" + (cat ? joined + ", " + part : part + ", " + joined) + ", " +
               str(chunk) + " * " + sz + ");");
      off += chunk;
    }
    c.close();
    return llvm::Error::success();
  }

  if (isa<tg::GatherElementsOp>(op))
    return codegen::emitGatherElements(*this, op, *ct);

  if (auto g = dyn_cast<tg::GatherOp>(op)) {
    const codegen::GatherLayout l = codegen::gatherLayout(g);
    const int64_t outer = l.outer, A = l.A, inner = l.inner, NI = l.NI;
    int64_t total = outer * NI * inner;
    if (total == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    if (A == 0) {
      c.line("std::fill(out0, out0 + " + str(total) + ", (" + T + ")0); // no data to gather");
      return llvm::Error::success();
    }
    c.line(sourceComment("indices are wrapped (negative + " + str(A) + ") and clamped to [0, " +
           str(A - 1) + "]: an out-of-range index never reads out of bounds"));
    std::string pr = pragma(total);
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(outer * NI) + "; ++r)");
    c.line("const int64_t o = r / " + str(NI) + ", k = r % " + str(NI) + ";");
    codegen::clampedIndexLines(c, "i", "in1[k]", A);
    if (inner == 1)
      c.line("out0[r] = in0[o * " + str(A) + " + i];");
    else
      c.line("std::memcpy(out0 + r * " + str(inner) + ", in0 + (o * " + str(A) + " + i) * " +
             str(inner) + ", " + str(inner) + " * " + sz + ");");
    c.close();
    return llvm::Error::success();
  }

  return opError(op, "op not supported by the CPU backend");
}

} // namespace tgc::cpu
