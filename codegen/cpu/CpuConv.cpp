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

} // namespace

llvm::Error KernelBuilder::emitConv(Operation *op, const CType *ct,
                                    const std::vector<std::string> &in, const std::string &out) {
  const std::string T = ct->name;

  if (auto conv = dyn_cast<tg::ConvOp>(op)) {
    Shape x = shapeOf(conv.getInput()), w = shapeOf(conv.getWeight()), y = shapeOf(conv.getResult());
    int sp = (int)x.size() - 2;
    if (sp > 8)
      return opError(op, "conv with more than 8 spatial dims");
    const std::string bias = conv.getBias() ? in[2] : "nullptr";
    const std::string xw = in[0] + ", " + in[1] + ", ";
    const bool direct = T == "float" && !isDepthwise(conv) && isSmallDirect(conv);
    if (T == "float" && (isDepthwise(conv) || direct)) {
      // 1-D as 2-D with a window, stride and dilation of 1 along H (tg_conv_dw2d).
      Shape st = codegen::intsOf(conv.getStrides()), pads = codegen::intsOf(conv.getPads()),
            dil = codegen::intsOf(conv.getDilations());
      // Along H: the first spatial dim's value for 2-D, `one` for 1-D; along W: the last dim's.
      auto h = [&](const Shape &v, size_t at, int64_t one) { return str(sp == 2 ? v[at] : one); };
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
