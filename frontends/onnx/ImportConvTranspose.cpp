// ImportConvTranspose.cpp — ONNX ConvTranspose (1-D/2-D/3-D, every attribute) by decomposition
// into ops tg already has, so both backends run it without a new op.
//
// A transposed convolution is the adjoint of a strided one: y[o] = Σ x[i] w[k] over
// o + pad_begin = i * stride + k * dilation. It equals a stride-1 convolution of the input with
// stride-1 zeros inserted between its elements, padded by dilation * (k - 1) - pad on each side
// (plus output_padding at the end), with the kernel flipped spatially and its in/out channels
// swapped per group. Zero insertion is a reshape to [.., n, 1, ..], a pad of the unit axis to
// stride and a reshape back (its stride-1 trailing zeros are cropped with the end padding); a
// negative edge pad (a pad larger than the kernel's reach) is a negative tg.pad, a positive one
// the conv's own padding. Cost: the conv multiplies stride^d times as many zeros as a native
// kernel would, so a strided ConvTranspose with a constant weight takes the stride-phase form
// instead (ConvTransposePhases.cpp: one conv of the undilated input); this form stays for a
// non-constant weight, dilation on a strided dim, stride 1 and Col2Im (docs/decisions.md).
#include "frontends/onnx/ConvTransposePhases.h"
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"

#include <algorithm>

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

/// floor(a / 2) for any sign (Python's a // 2, as the ONNX reference computes pads).
int64_t floorHalf(int64_t a) { return a >= 0 ? a / 2 : -((-a + 1) / 2); }

/// x [N, C, n...] transposed-convolved by w [C, M/group, k...] (+ bias [M]) with the given
/// strides, dilations, begin/end pads of the full result (negative: zeros added) and
/// output_padding, to spatial dims `out`: zero insertion, edge pad/crop, flipped-kernel conv.
llvm::Expected<Value> transposedConv(ImportContext &c, const NodeView &n, Value x, Value w,
                                     Value bias, const Shape &strides, const Shape &dil,
                                     const Shape &begin, const Shape &end, const Shape &outPad,
                                     int64_t group, const Shape &out) {
  const Shape xs = c.shapeOf(x), ws = c.shapeOf(w);
  const size_t sp = xs.size() - 2;
  const Type elem = c.elemOf(x);
  const int64_t cg = xs[1] / group, mg = ws[1], m = mg * group;
  const Shape kernel(ws.begin() + 2, ws.end());
  const Location loc = n.loc;
  // Zero insertion: [N, C, n...] -> [N, C, n, 1, ...] -> pad unit axes to stride -> [N, C, n*s...].
  Value y = x;
  bool strided = std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s > 1; });
  Shape up{xs[0], xs[1]};
  for (size_t i = 0; i < sp; ++i)
    up.push_back(xs[i + 2] * strides[i]);
  if (strided) {
    Shape split{xs[0], xs[1]}, padded{xs[0], xs[1]};
    std::vector<int64_t> zpads(2 * (2 + 2 * sp), 0);
    const size_t r2 = 2 + 2 * sp;
    for (size_t i = 0; i < sp; ++i) {
      split.push_back(xs[i + 2]), split.push_back(1);
      padded.push_back(xs[i + 2]), padded.push_back(strides[i]);
      zpads[r2 + 2 + 2 * i + 1] = strides[i] - 1;
    }
    y = c.reshape(loc, y, split);
    y = c.emit<tg::PadOp>(loc, c.type(padded, elem), y, c.b.getI64ArrayAttr(zpads),
                          c.b.getF64FloatAttr(0.0));
    y = c.reshape(loc, y, up);
  }
  // Edge padding: dilation * (k - 1) - pad at the begin, the same + output_padding at the end,
  // less the stride-1 trailing zeros of the insertion. Negative parts crop (tg.pad), positive
  // parts are the conv's padding.
  std::vector<int64_t> crop(2 * (sp + 2), 0), convPads(2 * sp, 0);
  bool cropping = false;
  Shape cropped = up;
  for (size_t i = 0; i < sp; ++i) {
    const int64_t reach = dil[i] * (kernel[i] - 1);
    const int64_t pb = reach - begin[i], pe = reach - end[i] + outPad[i] - (strides[i] - 1);
    crop[2 + i] = std::min<int64_t>(pb, 0);
    crop[sp + 4 + i] = std::min<int64_t>(pe, 0);
    convPads[i] = std::max<int64_t>(pb, 0);
    convPads[i + sp] = std::max<int64_t>(pe, 0);
    cropping |= pb < 0 || pe < 0;
    cropped[i + 2] = up[i + 2] + crop[2 + i] + crop[sp + 4 + i];
    if (cropped[i + 2] <= 0)
      return c.error(n, "pads " + shapeToString(begin) + " (begin) " + shapeToString(end) +
                            " (end) crop away the whole input along spatial dim " +
                            std::to_string(i));
  }
  if (cropping)
    y = c.emit<tg::PadOp>(loc, c.type(cropped, elem), y, c.b.getI64ArrayAttr(crop),
                          c.b.getF64FloatAttr(0.0));

  // Weight [C, M/g, k...] -> [g, C/g, M/g, k...] -> [g, M/g, C/g, k...] -> [M, C/g, k...],
  // flipped along each spatial axis.
  Shape wg{group, cg, mg};
  wg.insert(wg.end(), kernel.begin(), kernel.end());
  std::vector<int64_t> perm{0, 2, 1};
  for (size_t i = 0; i < sp; ++i)
    perm.push_back((int64_t)i + 3);
  Value wt = c.transpose(loc, c.reshape(loc, w, wg), perm);
  Shape wc{m, cg};
  wc.insert(wc.end(), kernel.begin(), kernel.end());
  wt = c.reshape(loc, wt, wc);
  std::vector<int64_t> starts(wc.size(), 0), steps(wc.size(), 1);
  bool flip = false;
  for (size_t i = 0; i < sp; ++i)
    if (kernel[i] > 1)
      starts[i + 2] = kernel[i] - 1, steps[i + 2] = -1, flip = true;
  if (flip)
    wt = c.emit<tg::SliceOp>(loc, c.type(wc, elem), wt, c.b.getI64ArrayAttr(starts),
                             c.b.getI64ArrayAttr(steps));

  Shape os{xs[0], m};
  os.insert(os.end(), out.begin(), out.end());
  return c.emit<tg::ConvOp>(loc, c.type(os, elem), y, wt, bias, c.b.getI64ArrayAttr(Shape(sp, 1)),
                            c.b.getI64ArrayAttr(convPads), c.b.getI64ArrayAttr(dil),
                            (uint64_t)group, /*weight_block=*/nullptr,
                            /*channels_last=*/false, /*nhwc=*/false);
}

Result importConvTranspose(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(w, c.need(n, 1));
  Value bias = n.input(2);
  const Shape xs = c.shapeOf(x), ws = c.shapeOf(w);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size())
    return c.error(n, "input " + shapeToString(xs) + " and weight " + shapeToString(ws) +
                          " must have the same rank, 3 to 5 (1-D to 3-D)");
  const Type elem = c.elemOf(x);
  if (!c.isFloat(elem) || c.elemOf(w) != elem || (bias && c.elemOf(bias) != elem))
    return c.error(n, "input, weight and bias must be float tensors of one type");
  const size_t sp = xs.size() - 2;
  const int64_t group = n.attrInt("group", 1);
  if (group <= 0 || xs[1] != ws[0] || ws[0] % group != 0)
    return c.error(n, "input channels " + std::to_string(xs[1]) + " do not match weight " +
                          shapeToString(ws) + " (C x M/group x k...) with group " +
                          std::to_string(group));
  const int64_t m = ws[1] * group;
  const Shape kernel(ws.begin() + 2, ws.end());
  if (auto ks = n.attrInts("kernel_shape"))
    if (*ks != kernel)
      return c.error(n, "kernel_shape " + shapeToString(*ks) +
                            " differs from the weight's spatial dims " + shapeToString(kernel));
  if (bias && c.shapeOf(bias) != Shape{m})
    return c.error(n, "bias must be [" + std::to_string(m) + "]; got " +
                          shapeToString(c.shapeOf(bias)));

  const Shape strides = n.attrInts("strides").value_or(Shape(sp, 1));
  const Shape dil = n.attrInts("dilations").value_or(Shape(sp, 1));
  const auto padsAttr = n.attrInts("pads");
  const Shape pads = padsAttr.value_or(Shape(2 * sp, 0));
  const Shape outPad = n.attrInts("output_padding").value_or(Shape(sp, 0));
  auto outShapeAttr = n.attrInts("output_shape");
  if (outShapeAttr && outShapeAttr->size() == sp + 2) // some exporters give N and C too
    outShapeAttr = Shape(outShapeAttr->begin() + 2, outShapeAttr->end());
  if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp || outPad.size() != sp ||
      (outShapeAttr && outShapeAttr->size() != sp))
    return c.error(n, "strides, dilations, output_padding and output_shape need one entry per "
                      "spatial dim, pads two");
  const int64_t big = int64_t(1) << 31;
  for (size_t i = 0; i < sp; ++i)
    if (kernel[i] <= 0 || strides[i] <= 0 || dil[i] <= 0 || pads[i] < 0 || pads[i + sp] < 0 ||
        outPad[i] < 0 || kernel[i] > big || strides[i] > big || dil[i] > big || pads[i] > big ||
        pads[i + sp] > big || outPad[i] > big || xs[i + 2] > big ||
        (outShapeAttr && ((*outShapeAttr)[i] <= 0 || (*outShapeAttr)[i] > big)))
      return c.error(n, "kernel, strides, dilations and output_shape must be positive, pads and "
                        "output_padding non-negative (and all below 2^31)");
  const std::string autoPad = n.attrString("auto_pad", "NOTSET");
  const bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (!same && autoPad != "VALID" && autoPad != "NOTSET")
    return c.error(n, "auto_pad '" + autoPad +
                          "' is not supported (NOTSET, VALID, SAME_UPPER, SAME_LOWER)");

  // Begin/end padding of the full transposed output and the output's spatial dims. With
  // output_shape (or SAME: in * stride) the pads are generated from the total as the ONNX spec
  // says (SAME_UPPER puts the odd one at the end, otherwise at the begin); explicit pads keep
  // their begin. A negative total (output larger than the full result) extends the end with
  // zeros (+ bias), as ONNX Runtime and the reference do.
  Shape begin(sp), end(sp), out(sp);
  for (size_t i = 0; i < sp; ++i) {
    const int64_t eff = dil[i] * (kernel[i] - 1) + 1;
    const int64_t full = strides[i] * (xs[i + 2] - 1) + outPad[i] + eff;
    if (outShapeAttr || same) {
      out[i] = outShapeAttr ? (*outShapeAttr)[i] : xs[i + 2] * strides[i];
      const int64_t total = full - out[i];
      if (autoPad == "SAME_UPPER")
        begin[i] = floorHalf(total);
      else if (autoPad == "SAME_LOWER")
        begin[i] = total - floorHalf(total);
      else if (padsAttr)
        begin[i] = pads[i];
      else
        begin[i] = total >= 0 ? total - total / 2 : 0;
      end[i] = total - begin[i];
    } else {
      begin[i] = autoPad == "VALID" ? 0 : pads[i];
      end[i] = autoPad == "VALID" ? 0 : pads[i + sp];
      out[i] = full - begin[i] - end[i];
    }
    if (out[i] <= 0)
      return c.error(n, "pads " + shapeToString(pads) + " leave no output along spatial dim " +
                            std::to_string(i));
  }
  TGC_ASSIGN(phased, stridePhaseConv(c, n, x, w, bias, strides, dil, begin, group, out));
  if (phased)
    return Values{phased};
  TGC_ASSIGN(y, transposedConv(c, n, x, w, bias, strides, dil, begin, end, outPad, group, out));
  return Values{y};
}
/// Col2Im: the blocks of input [N, C * prod(block), L] summed into [N, C, image...] = a
/// transposed conv of the input seen as [N, C * K, L_0, ...] with group C and a constant one-hot
/// kernel [C * K, 1, block...] (channel c * K + j puts its value at block position j).
Result importCol2Im(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(image, c.requireInts(n, 1, "image_shape"));
  TGC_ASSIGN(block, c.requireInts(n, 2, "block_shape"));
  const Shape xs = c.shapeOf(x);
  const size_t sp = image.size();
  if (xs.size() != 3)
    return c.error(n, "input " + shapeToString(xs) + " must be 3-D [N, C * prod(block_shape), L]");
  if (sp < 1 || sp > 3 || block.size() != sp)
    return c.error(n, "image_shape and block_shape must hold one value per spatial dim (1 to 3); "
                      "got " +
                          std::to_string(sp) + " and " + std::to_string(block.size()));
  if (!c.isFloat(c.elemOf(x)))
    return c.error(n, "input must be a float tensor");
  const Shape strides = n.attrInts("strides").value_or(Shape(sp, 1));
  const Shape dil = n.attrInts("dilations").value_or(Shape(sp, 1));
  const Shape pads = n.attrInts("pads").value_or(Shape(2 * sp, 0));
  if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp)
    return c.error(n, "strides and dilations need one entry per spatial dim, pads two");
  const int64_t big = int64_t(1) << 31;
  int64_t k = 1, blocks = 1;
  Shape counts(sp), outPad(sp), begin(sp), end(sp);
  for (size_t i = 0; i < sp; ++i) {
    if (image[i] <= 0 || block[i] <= 0 || strides[i] <= 0 || dil[i] <= 0 || pads[i] < 0 ||
        pads[i + sp] < 0 || image[i] > big || block[i] > big || strides[i] > big || dil[i] > big ||
        pads[i] > big || pads[i + sp] > big)
      return c.error(n, "image_shape, block_shape, strides and dilations must be positive, pads "
                        "non-negative (and all below 2^31)");
    const int64_t eff = dil[i] * (block[i] - 1) + 1, span = image[i] + pads[i] + pads[i + sp] - eff;
    if (span < 0)
      return c.error(n, "block " + shapeToString(block) + " is larger than the padded image " +
                            shapeToString(image));
    counts[i] = span / strides[i] + 1;
    begin[i] = pads[i], end[i] = pads[i + sp];
    outPad[i] = image[i] - (strides[i] * (counts[i] - 1) + eff - pads[i] - pads[i + sp]);
    k *= block[i], blocks *= counts[i];
  }
  if (xs[1] % k != 0 || xs[2] != blocks)
    return c.error(n, "input " + shapeToString(xs) + " must be [N, C * " + std::to_string(k) +
                          ", " + std::to_string(blocks) + "] for image_shape " +
                          shapeToString(image) + " and block_shape " + shapeToString(block));
  const int64_t ch = xs[1] / k;
  if (xs[1] * k > (int64_t(1) << 26))
    return c.error(n, "C * prod(block_shape)^2 = " + std::to_string(xs[1] * k) +
                          " is too large for the one-hot kernel");
  Shape ws{xs[1], 1};
  ws.insert(ws.end(), block.begin(), block.end());
  HostTensor onehot = HostTensor::zeros(DType::F64, ws);
  for (int64_t r = 0; r < xs[1]; ++r)
    onehot.as<double>()[r * k + r % k] = 1.0;
  const Location loc = n.loc;
  Value w = c.cast(loc, c.constant(loc, onehot), c.elemOf(x));
  Shape x4{xs[0], xs[1]};
  x4.insert(x4.end(), counts.begin(), counts.end());
  TGC_ASSIGN(y, transposedConv(c, n, c.reshape(loc, x, x4), w, Value(), strides, dil, begin, end,
                               outPad, ch, image));
  return Values{y};
}

} // namespace

void registerConvTransposeOps(OpTable &t) {
  t["ConvTranspose"] = importConvTranspose;
  t["Col2Im"] = importCol2Im;
}

} // namespace tgc::onnx_import
