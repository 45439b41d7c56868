// ConvTransposePhases.cpp — a strided ConvTranspose with a constant weight as one ordinary
// convolution of the undilated input (the stride-phase, or sub-pixel, decomposition).
//
// Along a spatial dim of stride s and kernel K (dilation 1), full-result position o = q * s + r
// (phase r in [0, s)) receives x[i] * w[k] for k = r + j * s, i = q - j: a stride-1 correlation
// of x with the phase's taps, reversed. Padding every phase's sub-kernel to J = ceil(K / s) taps
// (zeros where r + j * s >= K; a phase with no tap at all, K < s, is all zeros, i.e. all bias)
// gives every phase the same window, so all s^d phases are one tg.conv with s^d times the output
// channels: v[g, p, m, c, t] = w[g * C/g + c, m, r + (J - 1 - t) * s], gathered here at compile
// time. The conv computes rows q in [q0, q0 + Q) of each phase (the fewest that cover the
// requested window); reshape + transpose interleave the phases to [N, M, Q * s, ...] and a
// slice keeps the window. A dim of stride 1 is one phase: the whole kernel, flipped, with its
// dilation. Multiply-adds: ~(J / K)^d of the zero-insertion form's, 1/s^d when s divides K.
//
// Not taken (the caller keeps the zero-insertion form): a non-constant weight (the gather is at
// compile time), dilation > 1 on a strided dim (the taps of a phase would not be evenly spaced
// in general), no stride > 1 (nothing to gain), and pads that crop away a phase's whole input.
#include "frontends/onnx/ConvTransposePhases.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::onnx_import {

namespace {

/// Floor division for any sign of a (b > 0).
int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// The phase weight [g * P * M/g, C/g, J...] of w [C, M/g, K...] (values row-major).
HostTensor phaseWeight(const std::vector<double> &w, const Shape &ws, int64_t group,
                       const Shape &strides, const Shape &taps, DType dt) {
  const size_t sp = ws.size() - 2;
  const int64_t cin = ws[0], cg = cin / group, mg = ws[1];
  int64_t phases = 1, kvol = 1, jvol = 1;
  for (size_t i = 0; i < sp; ++i)
    phases *= strides[i], kvol *= ws[i + 2], jvol *= taps[i];
  Shape vs{group * phases * mg, cg};
  vs.insert(vs.end(), taps.begin(), taps.end());
  HostTensor v = HostTensor::zeros(dt, vs);
  Shape r(sp), t(sp);
  for (int64_t g = 0; g < group; ++g)
    for (int64_t p = 0; p < phases; ++p) {
      for (int64_t i = (int64_t)sp - 1, rest = p; i >= 0; --i)
        r[i] = rest % strides[i], rest /= strides[i];
      for (int64_t m = 0; m < mg; ++m)
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t tj = 0; tj < jvol; ++tj) {
            int64_t src = 0;
            bool inside = true;
            for (int64_t i = (int64_t)sp - 1, rest = tj; i >= 0; --i)
              t[i] = rest % taps[i], rest /= taps[i];
            for (size_t i = 0; i < sp; ++i) {
              const int64_t k = r[i] + (taps[i] - 1 - t[i]) * strides[i];
              inside &= k < ws[i + 2];
              src = src * ws[i + 2] + k;
            }
            if (!inside)
              continue;
            const int64_t from = ((g * cg + c) * mg + m) * kvol + src;
            const int64_t to = (((g * phases + p) * mg + m) * cg + c) * jvol + tj;
            v.set(to, w[from]);
          }
    }
  return v;
}

} // namespace

llvm::Expected<Value> stridePhaseConv(ImportContext &c, const NodeView &n, Value x, Value w,
                                      Value bias, const Shape &strides, const Shape &dil,
                                      const Shape &begin, int64_t group, const Shape &out) {
  const Shape xs = c.shapeOf(x), ws = c.shapeOf(w);
  const size_t sp = xs.size() - 2;
  bool strided = false;
  for (size_t i = 0; i < sp; ++i) {
    if (strides[i] > 1 && dil[i] != 1)
      return Value();
    strided |= strides[i] > 1;
  }
  if (!strided)
    return Value();
  auto wv = c.constDoubles(w);
  if (!wv)
    return Value();
  const Type elem = c.elemOf(x);
  const Location loc = n.loc;
  const int64_t mg = ws[1], m = mg * group;
  // Per dim: taps per phase J, first phase row q0, rows Q, the conv's pads (negative: crop x).
  Shape taps(sp), rows(sp), convPads(2 * sp), crop(2 * (sp + 2), 0), cropped = xs, sliceAt(sp);
  bool cropping = false;
  int64_t phases = 1;
  for (size_t i = 0; i < sp; ++i) {
    const int64_t s = strides[i], nIn = xs[i + 2];
    taps[i] = (ws[i + 2] + s - 1) / s;
    const int64_t q0 = floorDiv(begin[i], s);
    rows[i] = floorDiv(begin[i] + out[i] + s - 1, s) - q0;
    sliceAt[i] = begin[i] - q0 * s;
    const int64_t reach = dil[i] * (taps[i] - 1);
    const int64_t pb = reach - q0, pe = rows[i] - nIn - pb + reach;
    crop[2 + i] = std::min<int64_t>(pb, 0), crop[sp + 4 + i] = std::min<int64_t>(pe, 0);
    convPads[i] = std::max<int64_t>(pb, 0), convPads[i + sp] = std::max<int64_t>(pe, 0);
    cropping |= pb < 0 || pe < 0;
    cropped[i + 2] = nIn + crop[2 + i] + crop[sp + 4 + i];
    if (cropped[i + 2] <= 0)
      return Value();
    phases *= s;
  }
  DType dt = DType::F64;
  if (elem.isF32())
    dt = DType::F32;
  else if (elem.isF16())
    dt = DType::F16;
  else if (elem.isBF16())
    dt = DType::BF16;
  Value v = c.cast(loc, c.constant(loc, phaseWeight(*wv, ws, group, strides, taps, dt)), elem);
  // Bias per conv channel (g, p, m): bias[g * M/g + m], the same for every phase.
  Value pb;
  if (bias) {
    pb = c.reshape(loc, bias, {group, 1, mg});
    pb = c.expand(loc, pb, {group, phases, mg});
    pb = c.reshape(loc, pb, {group * phases * mg});
  }
  Value y = x;
  if (cropping)
    y = c.emit<tg::PadOp>(loc, c.type(cropped, elem), y, c.b.getI64ArrayAttr(crop),
                          c.b.getF64FloatAttr(0.0));
  Shape cs{xs[0], group * phases * mg};
  cs.insert(cs.end(), rows.begin(), rows.end());
  y = c.emit<tg::ConvOp>(loc, c.type(cs, elem), y, v, pb, c.b.getI64ArrayAttr(Shape(sp, 1)),
                         c.b.getI64ArrayAttr(convPads), c.b.getI64ArrayAttr(dil),
                         (uint64_t)group, /*weight_block=*/nullptr,
                         /*channels_last=*/false, /*nhwc=*/false);
  // [N, g*P*M/g, Q...] -> [N, g, s..., M/g, Q...] -> [N, g, M/g, Q0, s0, Q1, s1, ...] -> [N, M, Q*s...].
  Shape split{xs[0], group};
  split.insert(split.end(), strides.begin(), strides.end());
  split.push_back(mg);
  split.insert(split.end(), rows.begin(), rows.end());
  std::vector<int64_t> perm{0, 1, (int64_t)sp + 2};
  for (size_t i = 0; i < sp; ++i)
    perm.push_back((int64_t)(sp + 3 + i)), perm.push_back((int64_t)(2 + i));
  Shape full{xs[0], m};
  bool slicing = false;
  for (size_t i = 0; i < sp; ++i) {
    full.push_back(rows[i] * strides[i]);
    slicing |= sliceAt[i] != 0 || out[i] != rows[i] * strides[i];
  }
  y = c.reshape(loc, c.transpose(loc, c.reshape(loc, y, split), perm), full);
  if (slicing) {
    Shape os{xs[0], m}, starts(sp + 2, 0);
    os.insert(os.end(), out.begin(), out.end());
    for (size_t i = 0; i < sp; ++i)
      starts[i + 2] = sliceAt[i];
    y = c.emit<tg::SliceOp>(loc, c.type(os, elem), y, c.b.getI64ArrayAttr(starts),
                            c.b.getI64ArrayAttr(Shape(sp + 2, 1)));
  }
  return y;
}

} // namespace tgc::onnx_import
