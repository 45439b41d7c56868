// ImportSignal.cpp — ONNX signal ops (opset 17+) by decomposition into ops tg already has, so both
// backends run them without a new op:
//   HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix: every input must be constant (a
//     graph input can be bound with --bind-input), so the result is computed here, in double, and
//     emitted as a constant of output_datatype (through tg.cast, ONNX Cast's conversion).
//   DFT (opset 17: axis attribute; opset 20: axis input) and STFT: the shapes are static, so the
//     transform along the axis is one MatMul with a constant [m*c, 2K] matrix of cos/sin terms
//     (c = 1 real or 2 complex input parts, m = the samples used, K = the bins produced), the
//     axis moved last by Transpose and back; STFT first gathers its frames (Gather with constant
//     indices) and multiplies them by the window. This is O(n^2) per transform — fine for the
//     frame and feature sizes front-ends use; long signals would want an FFT op later.
// dft_length pads (matrix rows of zeros are simply left out) or truncates (Slice). onesided keeps
// the first floor(L/2)+1 bins; like ONNX's reference it is applied to complex input and to the
// inverse transform's output too.
#include "frontends/onnx/ImportContext.h"
#include "frontends/onnx/ModelLoader.h"

#include "compiler/dialect/TgDialect.h"

#include <cmath>

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

/// The most elements a generated constant (window, mel matrix, DFT matrix) may hold.
constexpr int64_t kMaxGenerated = int64_t(1) << 26;

/// A scalar (or one-element) integer input that must be constant.
llvm::Expected<int64_t> scalarInt(ImportContext &c, const NodeView &n, size_t i, const char *what) {
  TGC_ASSIGN(v, c.requireInts(n, i, what));
  if (v.size() != 1 || c.rankOf(n.input(i)) > 1)
    return c.error(n, std::string(what) + " must be a scalar");
  return v[0];
}

/// A double HostTensor as a constant of the ONNX data type `onnxType` (via tg.cast).
llvm::Expected<Value> generated(ImportContext &c, const NodeView &n, const HostTensor &t,
                                int64_t onnxType) {
  auto dt = dtypeFromOnnx((int32_t)onnxType, n.label + ": output_datatype");
  if (!dt)
    return dt.takeError();
  if (*dt == DType::Bool)
    return c.error(n, "output_datatype bool is not supported");
  return c.cast(n.loc, c.constant(n.loc, t), mlirElementType(*dt, c.ctx));
}

bool checkFlag(int64_t v) { return v == 0 || v == 1; }

enum class Window { Hann, Hamming, Blackman };

Result importWindow(ImportContext &c, const NodeView &n, Window kind) {
  if (n.opset < 17)
    return c.error(n, "window ops need opset 17 or later (the model imports opset " +
                          std::to_string(n.opset) + ")");
  TGC_ASSIGN(size, scalarInt(c, n, 0, "size"));
  if (size < 0 || size > kMaxGenerated)
    return c.error(n, "size " + std::to_string(size) + " must lie in [0, " +
                          std::to_string(kMaxGenerated) + "]");
  const int64_t periodic = n.attrInt("periodic", 1);
  if (!checkFlag(periodic))
    return c.error(n, "periodic must be 0 or 1, got " + std::to_string(periodic));
  // Like ONNX's function bodies: N = size (periodic) or size - 1 (symmetric; size 1 gives 0/0).
  const double N = (double)(periodic ? size : size - 1);
  HostTensor t = HostTensor::zeros(DType::F64, {size});
  for (int64_t i = 0; i < size; ++i) {
    const double a = 2 * M_PI * (double)i / N;
    double v = 0;
    switch (kind) {
    case Window::Hann:
      v = 0.5 - 0.5 * std::cos(a);
      break;
    case Window::Hamming: // alpha = 25/46, beta = 21/46 (ONNX's values)
      v = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(a);
      break;
    case Window::Blackman:
      v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
      break;
    }
    t.as<double>()[i] = v;
  }
  TGC_ASSIGN(out, generated(c, n, t, n.attrInt("output_datatype", 1)));
  return Values{out};
}

/// A float input that must be a constant scalar.
llvm::Expected<double> scalarFloat(ImportContext &c, const NodeView &n, size_t i,
                                   const char *what) {
  TGC_ASSIGN(v, c.need(n, i));
  if (!c.isConstant(v))
    return c.error(n, std::string(what) + " input must be constant" + c.bindHint(v));
  auto d = c.constDoubles(v);
  if (!d || d->size() != 1 || c.rankOf(v) > 1)
    return c.error(n, std::string(what) + " must be a scalar");
  return (*d)[0];
}

Result importMelWeightMatrix(ImportContext &c, const NodeView &n) {
  if (n.opset < 17)
    return c.error(n, "MelWeightMatrix needs opset 17 or later");
  TGC_ASSIGN(bins, scalarInt(c, n, 0, "num_mel_bins"));
  TGC_ASSIGN(L, scalarInt(c, n, 1, "dft_length"));
  TGC_ASSIGN(rate, scalarInt(c, n, 2, "sample_rate"));
  TGC_ASSIGN(lo, scalarFloat(c, n, 3, "lower_edge_hertz"));
  TGC_ASSIGN(hi, scalarFloat(c, n, 4, "upper_edge_hertz"));
  if (bins < 1 || L < 1 || rate < 1)
    return c.error(n, "num_mel_bins, dft_length and sample_rate must be positive");
  const int64_t spec = L / 2 + 1;
  if (spec * bins > kMaxGenerated)
    return c.error(n, "the matrix [" + std::to_string(spec) + ", " + std::to_string(bins) +
                          "] is too large");
  if (!(lo >= 0 && lo < hi))
    return c.error(n, "the edges must satisfy 0 <= lower_edge_hertz < upper_edge_hertz");
  // As ONNX's reference: num_mel_bins + 2 points evenly spaced on the mel scale, mapped to DFT
  // bins floor((dft_length + 1) * f / sample_rate); triangles between neighbours, peak 1.
  auto mel = [](double f) { return 2595 * std::log10(1 + f / 700); };
  const double lowMel = mel(lo), step = (mel(hi) - lowMel) / (double)(bins + 2);
  std::vector<int64_t> at(bins + 2);
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double f = 700 * (std::pow(10.0, ((double)i * step + lowMel) / 2595) - 1);
    at[i] = (int64_t)std::floor((double)(L + 1) * f / (double)rate);
    if (at[i] < 0 || at[i] >= spec)
      return c.error(n, "upper_edge_hertz " + std::to_string(hi) +
                            " maps past the last DFT bin (sample_rate / 2 is the most)");
  }
  HostTensor t = HostTensor::zeros(DType::F64, {spec, bins});
  double *o = t.as<double>();
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t left = at[i], center = at[i + 1], right = at[i + 2];
    if (center == left)
      o[center * bins + i] = 1;
    else
      for (int64_t j = left; j <= center; ++j)
        o[j * bins + i] = (double)(j - left) / (double)(center - left);
    for (int64_t j = center; j < right; ++j)
      o[j * bins + i] = (double)(right - j) / (double)(right - center);
  }
  TGC_ASSIGN(out, generated(c, n, t, n.attrInt("output_datatype", 1)));
  return Values{out};
}

/// The [m*cin, 2K] matrix taking m samples (cin parts each: real, or real and imaginary) to K
/// bins (real, imaginary) of a length-L DFT (inverse: with e^{+i} and 1/L).
llvm::Expected<Value> dftMatrix(ImportContext &c, const NodeView &n, int64_t m, int64_t L,
                                int64_t cin, int64_t K, bool inverse, Type elem) {
  if (m * cin * 2 * K > kMaxGenerated)
    return c.error(n, "the DFT matrix [" + std::to_string(m * cin) + ", " + std::to_string(2 * K) +
                          "] is too large (tgc computes a DFT as a MatMul)");
  HostTensor t = HostTensor::zeros(DType::F64, {m * cin, 2 * K});
  double *w = t.as<double>();
  const double scale = inverse ? 1.0 / (double)L : 1.0, sgn = inverse ? 1.0 : -1.0;
  for (int64_t j = 0; j < m; ++j)
    for (int64_t k = 0; k < K; ++k) {
      const double a = 2 * M_PI * (double)((j * k) % L) / (double)L;
      const double cs = std::cos(a) * scale, sn = sgn * std::sin(a) * scale; // e^{sgn i a}
      // (re + i im)(cs + i sn) = re cs - im sn + i (re sn + im cs)
      double *rowRe = w + (j * cin) * 2 * K;
      rowRe[2 * k] = cs;
      rowRe[2 * k + 1] = sn;
      if (cin == 2) {
        double *rowIm = rowRe + 2 * K;
        rowIm[2 * k] = -sn;
        rowIm[2 * k + 1] = cs;
      }
    }
  return c.cast(n.loc, c.constant(n.loc, t), elem);
}

/// Transforms `x` [B, m, cin] (B rows, m samples) into [B, K, 2] with `mat`.
Value applyMatrix(ImportContext &c, Location loc, Value x, Value mat, int64_t B, int64_t m,
                  int64_t cin, int64_t K) {
  Type elem = c.elemOf(x);
  Value rows = c.reshape(loc, x, {B, m * cin});
  Value y = c.emit<tg::MatmulOp>(loc, c.type({B, 2 * K}, elem), rows, mat);
  return c.reshape(loc, y, {B, K, 2});
}

Result importDFT(ImportContext &c, const NodeView &n) {
  if (n.opset < 17)
    return c.error(n, "DFT needs opset 17 or later");
  TGC_ASSIGN(x, c.need(n, 0));
  const Shape xs = c.shapeOf(x);
  const int64_t r = (int64_t)xs.size();
  if (!c.isFloat(c.elemOf(x)))
    return c.error(n, "input must be floating point");
  if (r < 2 || (xs[r - 1] != 1 && xs[r - 1] != 2))
    return c.error(n, "input " + shapeToString(xs) +
                          " must be [..., 1] (real) or [..., 2] (complex), of rank >= 2");
  const int64_t cin = xs[r - 1];
  int64_t axis = n.opset >= 20 ? -2 : n.attrInt("axis", 1);
  if (n.opset >= 20 && n.input(2)) {
    TGC_ASSIGN(a, scalarInt(c, n, 2, "axis"));
    axis = a;
  }
  const int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a > r - 2)
    return c.error(n, "axis " + std::to_string(axis) + " must lie in [-" + std::to_string(r) +
                          ", -2] or [0, " + std::to_string(r - 2) + "] for input " +
                          shapeToString(xs));
  const int64_t inverse = n.attrInt("inverse", 0), onesided = n.attrInt("onesided", 0);
  if (!checkFlag(inverse) || !checkFlag(onesided))
    return c.error(n, "inverse and onesided must be 0 or 1");
  const int64_t len = xs[a];
  int64_t L = len;
  if (n.input(1)) {
    TGC_ASSIGN(d, scalarInt(c, n, 1, "dft_length"));
    L = d;
  }
  if (L < 1)
    return c.error(n, "dft_length " + std::to_string(L) + " must be positive");
  const int64_t m = std::min(len, L), K = onesided ? L / 2 + 1 : L;
  TGC_ASSIGN(mat, dftMatrix(c, n, m, L, cin, K, inverse, c.elemOf(x)));
  Location loc = n.loc;
  // [others..., axis, parts]
  std::vector<int64_t> perm;
  Shape lead;
  int64_t B = 1;
  for (int64_t i = 0; i < r - 1; ++i)
    if (i != a) {
      perm.push_back(i);
      lead.push_back(xs[i]);
      B *= xs[i];
    }
  perm.push_back(a);
  perm.push_back(r - 1);
  Value v = c.transpose(loc, x, perm);
  if (len > L) { // only the first dft_length samples
    Shape s = lead;
    s.push_back(L);
    s.push_back(cin);
    v = c.emit<tg::SliceOp>(loc, c.type(s, c.elemOf(x)), v,
                            c.b.getI64ArrayAttr(std::vector<int64_t>(r, 0)),
                            c.b.getI64ArrayAttr(std::vector<int64_t>(r, 1)));
  }
  v = applyMatrix(c, loc, v, mat, B, m, cin, K);
  Shape ys = lead;
  ys.push_back(K);
  ys.push_back(2);
  v = c.reshape(loc, v, ys);
  std::vector<int64_t> back(r);
  for (int64_t i = 0; i < r; ++i)
    back[perm[i]] = i;
  return Values{c.transpose(loc, v, back)};
}

Result importSTFT(ImportContext &c, const NodeView &n) {
  if (n.opset < 17)
    return c.error(n, "STFT needs opset 17 or later");
  TGC_ASSIGN(x, c.need(n, 0));
  const Type elem = c.elemOf(x);
  if (!c.isFloat(elem))
    return c.error(n, "signal must be floating point");
  // torch.onnx exports a real signal as [batch, length]; ONNX Runtime reads that as real, and
  // so does tgc.
  if (c.rankOf(x) == 2)
    x = c.reshape(n.loc, x, {c.shapeOf(x)[0], c.shapeOf(x)[1], 1});
  const Shape xs = c.shapeOf(x);
  if (xs.size() != 3 || (xs[2] != 1 && xs[2] != 2))
    return c.error(n, "signal " + shapeToString(xs) +
                          " must be [batch, length] or [batch, length, 1] (real), or [batch, "
                          "length, 2] (complex)");
  const int64_t batch = xs[0], S = xs[1], cin = xs[2];
  TGC_ASSIGN(step, scalarInt(c, n, 1, "frame_step"));
  if (step < 1)
    return c.error(n, "frame_step " + std::to_string(step) + " must be positive");
  Value window = n.input(2);
  int64_t L = -1;
  if (n.input(3)) {
    TGC_ASSIGN(fl, scalarInt(c, n, 3, "frame_length"));
    L = fl;
  }
  if (window) {
    const Shape ws = c.shapeOf(window);
    if (ws.size() != 1 || c.elemOf(window) != elem)
      return c.error(n, "window must be 1-D, of the signal's type");
    if (L >= 0 && L != ws[0])
      return c.error(n, "window length " + std::to_string(ws[0]) + " differs from frame_length " +
                            std::to_string(L));
    L = ws[0];
  }
  if (L < 0)
    L = S; // neither given: one frame of the whole signal (as ONNX's reference)
  if (L < 1 || L > S)
    return c.error(n, "frame_length " + std::to_string(L) + " must lie in [1, signal length " +
                          std::to_string(S) + "]");
  const int64_t onesided = n.attrInt("onesided", 1);
  if (!checkFlag(onesided))
    return c.error(n, "onesided must be 0 or 1");
  const int64_t F = 1 + (S - L) / step, K = onesided ? L / 2 + 1 : L;
  if (F * L > kMaxGenerated)
    return c.error(n, "too many frames");
  TGC_ASSIGN(mat, dftMatrix(c, n, L, L, cin, K, false, elem));
  Location loc = n.loc;
  std::vector<int64_t> idx(F * L);
  for (int64_t f = 0; f < F; ++f)
    for (int64_t k = 0; k < L; ++k)
      idx[f * L + k] = f * step + k;
  Value frames = c.emit<tg::GatherOp>(loc, c.type({batch, F, L, cin}, elem), x,
                                      c.reshape(loc, c.constI64(loc, idx), {F, L}), (uint64_t)1);
  if (window)
    frames = c.binary<tg::MulOp>(loc, frames, c.reshape(loc, window, {1, 1, L, 1}));
  Value y = applyMatrix(c, loc, frames, mat, batch * F, L, cin, K);
  return Values{c.reshape(loc, y, {batch, F, K, 2})};
}

} // namespace

void registerSignalOps(OpTable &t) {
  t["HannWindow"] = [](ImportContext &c, const NodeView &n) {
    return importWindow(c, n, Window::Hann);
  };
  t["HammingWindow"] = [](ImportContext &c, const NodeView &n) {
    return importWindow(c, n, Window::Hamming);
  };
  t["BlackmanWindow"] = [](ImportContext &c, const NodeView &n) {
    return importWindow(c, n, Window::Blackman);
  };
  t["MelWeightMatrix"] = importMelWeightMatrix;
  t["DFT"] = importDFT;
  t["STFT"] = importSTFT;
}

} // namespace tgc::onnx_import
