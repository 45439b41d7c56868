// CpuConv.cpp — CPU kernels for sliding windows: convolutions and pooling (codegen/common/PoolEmit).
//
// A depthwise f32 convolution calls the prelude's direct kernel tg_conv_dw2d with its window,
// strides and dilations as template arguments (so the window unrolls), a 2-D f32 one with at
// most 64 output channels and group 1 the direct tg_conv_direct2d; every other one calls
// tg_conv, im2col + GEMM (CpuConvPrelude.cpp; docs/decisions.md, "CPU convolutions").
#include "codegen/cpu/CpuBuilder.h"

#include "codegen/common/PoolEmit.h"

namespace tgc::cpu {

namespace {

/// Largest window the depthwise kernel unrolls (taps); larger ones take im2col + GEMM.
constexpr int64_t kMaxDepthwiseTaps = 256;

/// Taps of the convolution's window (the product of the weight's spatial dims).
int64_t windowTaps(tg::ConvOp conv) {
  Shape w = shapeOf(conv.getWeight());
  int64_t taps = 1;
  for (size_t d = 2; d < w.size(); ++d)
    taps *= w[d];
  return taps;
}

/// Every stride in [1, maxStride] and every dilation in [1, maxDilation].
bool stepsWithin(tg::ConvOp conv, int64_t maxStride, int64_t maxDilation) {
  for (int64_t v : codegen::intsOf(conv.getStrides()))
    if (v < 1 || v > maxStride)
      return false;
  for (int64_t v : codegen::intsOf(conv.getDilations()))
    if (v < 1 || v > maxDilation)
      return false;
  return true;
}

/// A 1-D or 2-D convolution with one input channel per group (depthwise, any channel
/// multiplier) whose window fits the unrolled direct kernel (tg_conv_dw2d).
bool isDepthwise(tg::ConvOp conv) {
  Shape x = shapeOf(conv.getInput()), w = shapeOf(conv.getWeight());
  const int64_t sp = (int64_t)x.size() - 2;
  if (sp < 1 || sp > 2 || x[1] <= 0 || conv.getGroup() != x[1] || w[1] != 1 ||
      w[0] % x[1] != 0 || product(x) == 0 || product(shapeOf(conv.getResult())) == 0)
    return false;
  const int64_t taps = windowTaps(conv);
  return stepsWithin(conv, 8, 16) && taps >= 1 && taps <= kMaxDepthwiseTaps;
}

/// Output channels up to which a regular f32 2-D convolution (group 1, a window of 2 to 49
/// taps) runs direct (tg_conv_direct2d) instead of im2col + sgemm: with few output rows the
/// GEMM's packing of the unfolded input costs as much as its multiply (docs/decisions.md).
/// 1-D convolutions (audio_frontend's: 61 positions) measured slower direct and stay on GEMM.
constexpr int64_t kDirectConvMaxM = 64;
/// Output positions (OH*OW) below which im2col + sgemm stays faster: the direct kernel computes
/// blocks of 16 positions over rows padded by the window (a 4x4 output under a 3x3 window is
/// 16 useful positions of 32 computed; cnn_small's last two layers measured 20-30 % slower).
constexpr int64_t kDirectConvMinPositions = 64;

bool isSmallDirect(tg::ConvOp conv) {
  Shape x = shapeOf(conv.getInput()), w = shapeOf(conv.getWeight());
  const int64_t sp = (int64_t)x.size() - 2;
  const Shape y = shapeOf(conv.getResult());
  if (sp != 2 || conv.getGroup() != 1 || w[0] > kDirectConvMaxM || x[1] < 1 ||
      product(x) == 0 || y[2] * y[3] < kDirectConvMinPositions)
    return false;
  const int64_t taps = windowTaps(conv);
  return stepsWithin(conv, 4, 4) && taps > 1 && taps <= 49;
}

/// The lanes kernel's register block for M output channels over rows of OW positions: B blocks
/// of 16 channels by P positions (B*P accumulators of 16 floats, at most 24 so that the B weight
/// vectors fit beside them in 32 registers). Costed per useful multiply-add: a row computes
/// ceil(OW/P)*P positions; each tap costs B + P loads for B*P FMAs (a load weighed as 0.1 of
/// an FMA); a P that is not 16 stores partial transposes (8 % dearer); the last group of
/// MBs % B blocks runs at its own rate. Calibrated on cnn_small and detector_tiny's layers
/// (docs/perf-log.md): P = 16 with B = 1 wherever a row has 16 positions (detector's 32-wide
/// rows: 103 us against 116 for B = 2, P = 11), more blocks on narrow rows (cnn_small's 4x4
/// layer: B = 4, 13.1 us against 15.1 for B = 1).
std::pair<int64_t, int64_t> lanesBlock(int64_t M, int64_t OW) {
  const int64_t MBs = (M + 15) / 16;
  std::pair<int64_t, int64_t> best{1, 1};
  double bestCost = 1e30;
  for (int64_t B = 1; B <= std::min<int64_t>(4, MBs); ++B) {
    const int64_t pmax = 24 / B, rows = (OW + pmax - 1) / pmax;
    for (int64_t P : {(OW + rows - 1) / rows, int64_t(16)}) {
      if (P > pmax)
        continue;
      auto rate = [&](int64_t b) { return 1.0 + 0.1 * double(b + P) / double(b * P); };
      const int64_t full = MBs / B, rest = MBs % B;
      const double cost = double((OW + P - 1) / P * P) / double(OW) * (P % 16 ? 1.08 : 1.0) *
                          (double(full * B) * rate(B) + (rest ? double(rest) * rate(rest) : 0)) /
                          double(MBs);
      if (cost < bestCost - 1e-9) { // ties keep the smaller B, then the first P
        bestCost = cost;
        best = {B, P};
      }
    }
  }
  return best;
}

/// A window dim as the 2-D kernels take it (1-D is 2-D with H = 1): along H, v[at] for 2-D
/// (`sp` spatial dims) and `one` for 1-D.
std::string alongH(const Shape &v, size_t at, int64_t one, int sp) {
  return str(sp == 2 ? v[at] : one);
}

} // namespace

llvm::Error KernelBuilder::emitConv(Operation *op, const CType *ct,
                                    const std::vector<std::string> &in, const std::string &out,
                                    const std::string &epi) {
  const std::string T = ct->name;

  if (auto conv = dyn_cast<tg::ConvOp>(op)) {
    Shape x = shapeOf(conv.getInput()), w = shapeOf(conv.getWeight()), y = shapeOf(conv.getResult());
    int sp = (int)x.size() - 2;
    // channels_last (the lanes kernel only): y as [N, M, spatial...] below.
    const bool last = conv.getChannelsLast();
    if (conv.getNhwc())
      return opError(op, "an nhwc convolution (every operand channels last) is a CUDA layout");
    if (last && !conv.getWeightBlock())
      return opError(op, "a channels-last convolution needs a blocked weight (the lanes kernel)");
    if (last && y.size() >= 3)
      std::rotate(y.begin() + 1, y.end() - 1, y.end());
    if (sp > 8)
      return opError(op, "conv with more than 8 spatial dims");
    const std::string bias = conv.getBias() ? in[2] : "nullptr";
    const std::string xw = in[0] + ", " + in[1] + ", ";
    auto h = [&](const Shape &v, size_t at, int64_t one) { return alongH(v, at, one, sp); };
    if (auto block = conv.getWeightBlock()) {
      // Weights blocked by 16 output channels (tgc-cpu-weight-layout): the lanes kernel.
      if (T != "float" || *block != 16 || conv.getGroup() != 1 || sp < 1 || sp > 2)
        return opError(op, "a weight blocked by " + std::to_string(*block) +
                               " is read only by f32 1-D/2-D convolutions of group 1 blocked "
                               "by 16");
      // (An epilogue functor is only ever passed for this kernel.)
      Shape st = codegen::intsOf(conv.getStrides()), pads = codegen::intsOf(conv.getPads()),
            dil = codegen::intsOf(conv.getDilations());
      auto [B, P] = lanesBlock(y[1], y.back());
      c.line("tg_conv_lanes2d<" + h(w, 2, 1) + ", " + str(w[w.size() - 2]) + ", " + h(st, 0, 1) +
             ", " + str(st.back()) + ", " + h(dil, 0, 1) + ", " + str(dil.back()) + ", " +
             str(B) + ", " + str(P) + (last ? ", true" : "") + ">(" + xw + bias + ", " + out +
             ", " + str(x[0]) + ", " +
             str(x[1]) + ", " + str(y[1]) + ", " + h(x, 2, 1) + ", " + str(x.back()) + ", " +
             h(y, 2, 1) + ", " + str(y.back()) + ", " + h(pads, 0, 0) + ", " +
             str(pads[sp - 1]) + (epi.empty() ? "" : ", " + epi) + ");");
      return llvm::Error::success();
    }
    const bool direct = T == "float" && !isDepthwise(conv) && isSmallDirect(conv);
    if (T == "float" && (isDepthwise(conv) || direct)) {
      // 1-D as 2-D with a window, stride and dilation of 1 along H (tg_conv_dw2d).
      Shape st = codegen::intsOf(conv.getStrides()), pads = codegen::intsOf(conv.getPads()),
            dil = codegen::intsOf(conv.getDilations());
      const std::string tmpl = "<" + h(w, 2, 1) + ", " + str(w.back()) + ", " + h(st, 0, 1) +
                               ", " + str(st.back()) + ", " + h(dil, 0, 1) + ", " +
                               str(dil.back()) + ">";
      const std::string dims = h(x, 2, 1) + ", " + str(x.back()) + ", " + h(y, 2, 1) + ", " +
                               str(y.back()) + ", " + h(pads, 0, 0) + ", " + str(pads[sp - 1]);
      if (direct)
        c.line("tg_conv_direct2d" + tmpl + "(" + xw + bias + ", " + out + ", " + str(x[0]) + ", " +
               str(x[1]) + ", " + str(w[0]) + ", " + dims + ");");
      else
        c.line("tg_conv_dw2d" + tmpl + "(" + xw + bias + ", " + out + ", " + str(x[0]) + ", " +
               str(x[1]) + ", " + str(w[0] / x[1]) + ", " + dims + ");");
      return llvm::Error::success();
    }
    c.line("static const int64_t xs[] = " + intArray(x) + ", ws[] = " + intArray(w) +
           ", ys[] = " + intArray(y) + ";");
    c.line("static const int64_t st[] = " + intArray(codegen::intsOf(conv.getStrides())) +
           ", pads[] = " + intArray(codegen::intsOf(conv.getPads())) +
           ", dil[] = " + intArray(codegen::intsOf(conv.getDilations())) + ";");
    c.line("tg_conv<" + T + ">(" + xw + bias + ", " + out + ", " + std::to_string(sp) +
           ", xs, ws, ys, st, pads, dil, " + str(conv.getGroup()) + ");");
    return llvm::Error::success();
  }

  if (auto pool = dyn_cast<tg::PoolOp>(op)) {
    const int64_t total = product(shapeOf(pool.getResult()));
    const Shape x = shapeOf(pool.getInput()), y = shapeOf(pool.getResult());
    const int nsp = (int)x.size() - 2;
    if (T == "float" && pool.getKind() == "max" && (nsp == 1 || nsp == 2) && total > 0 &&
        !pool.getNhwc()) {
      // Separable, vectorized over output columns (tg_maxpool2d; 1-D as 2-D with H = 1).
      const Shape k = codegen::intsOf(pool.getKernel()), st = codegen::intsOf(pool.getStrides()),
                  pads = codegen::intsOf(pool.getPads()),
                  dil = codegen::intsOf(pool.getDilations());
      auto h = [&](const Shape &v, size_t at, int64_t one) { return alongH(v, at, one, nsp); };
      c.line("tg_maxpool2d<" + h(k, 0, 1) + ", " + str(k.back()) + ", " + h(st, 0, 1) + ", " +
             str(st.back()) + ", " + h(dil, 0, 1) + ", " + str(dil.back()) + ">(" + in[0] + ", " +
             out + ", " + str(x[0] * x[1]) + ", " + h(x, 2, 1) + ", " + str(x.back()) + ", " +
             h(y, 2, 1) + ", " + str(y.back()) + ", " + h(pads, 0, 0) + ", " + str(pads[nsp - 1]) +
             ");");
      return llvm::Error::success();
    }
    codegen::PoolSpelling sp;
    sp.index = "int64_t";
    sp.acc = ct->calc(); // float for f16/bf16, loaded and rounded on store
    sp.lowest = ct->isFloat ? "-std::numeric_limits<" + sp.acc + ">::infinity()"
                            : "std::numeric_limits<" + T + ">::lowest()";
    if (ct->lowp) {
      sp.load = [ct](const std::string &e) { return ct->ld(e); };
      sp.store = [ct](const std::string &e) { return ct->st(e); };
    } else {
      sp.load = sp.store = [](const std::string &e) { return e; };
    }
    if (std::string pr = pragma(codegen::poolWork(pool)); !pr.empty())
      c.line(pr);
    c.open("for (int64_t i = 0; i < " + str(total) + "; ++i)");
    codegen::emitPoolElement(c, pool, sp, in[0], out);
    c.close();
    return llvm::Error::success();
  }

  return opError(op, "op not supported by the CPU backend");
}

} // namespace tgc::cpu
