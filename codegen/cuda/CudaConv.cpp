// CudaConv.cpp — convolutions on CUDA. A float convolution (f32, f16, bf16) is a CONV step
// (plan.proto ConvDesc): the runtime runs it through cuDNN when it can (runtime/cuda/CudaConv.cpp)
// and otherwise launches the step's own kernel, written here (one thread per output, the sum in
// float). The epilogue of a "conv" tg.fused (bias, activation, residual add) is a second kernel,
// in place on the output; when it is exactly what cuDNN's fused call applies (a ReLU, a residual
// add, or the add then the ReLU), the CONV step carries it. The own kernel applies the epilogue
// itself (ConvDesc.own_epilogue) unless the step carries a residual; the epilogue kernel, marked
// skip_if_gemm_fused, then runs only after cuDNN without a fused call. Otherwise it runs after
// the own kernel and after cuDNN's unfused call.
#include "codegen/cuda/CudaBuilder.h"

using namespace mlir;

namespace tgc::cuda {
namespace {

/// What cuDNN's fused convolution applies of a "conv" kernel's epilogue: act(conv + bias + z).
struct LibraryEpilogue {
  bool ok = false;
  int act = 0;   ///< plan::GemmDesc::Activation: NONE or RELU
  int zArg = -1; ///< the fused op's operand holding the residual z
};

/// The epilogue `ops` (ending in `result`) of convolution result `g` when cuDNN can apply all of
/// it: [relu(g)], [add(g, z)] or [add(g, z), relu] with z a buffered operand of g's type.
LibraryEpilogue libraryEpilogue(const std::vector<Operation *> &ops, Value g, Value result,
                                Block &body, const std::vector<std::string> &inPtr) {
  LibraryEpilogue le;
  Value v = g;
  size_t k = 0;
  if (k < ops.size() && isa<tg::AddOp>(ops[k]) && ops[k]->getResult(0).getType() == g.getType()) {
    Operation *add = ops[k];
    Value other = add->getOperand(0) == v ? add->getOperand(1) : add->getOperand(0);
    auto arg = other.dyn_cast<BlockArgument>();
    if ((add->getOperand(0) == v || add->getOperand(1) == v) && other != v && arg &&
        arg.getOwner() == &body && !inPtr[arg.getArgNumber()].empty() &&
        other.getType() == g.getType()) {
      le.zArg = (int)arg.getArgNumber();
      v = add->getResult(0);
      ++k;
    }
  }
  if (k < ops.size() && isa<tg::ReluOp>(ops[k]) && ops[k]->getOperand(0) == v) {
    le.act = plan::GemmDesc::RELU;
    v = ops[k]->getResult(0);
    ++k;
  }
  le.ok = k == ops.size() && v == result;
  return le;
}

/// The index of `a` among the kernel's arguments, or -1.
int argIndex(const std::vector<StepArg> &args, const StepArg &a) {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].value == a.value && args[i].offset == a.offset && args[i].bytes == a.bytes)
      return (int)i;
  return -1;
}

} // namespace

void KernelBuilder::emitConvLoop(tg::ConvOp conv, const CType &ct, const std::string &x,
                                 const std::string &w, const std::string &b,
                                 const ConvStore &store) {
  const std::string T = ct.name;
  Shape xs = shapeOf(conv.getInput()), ws = shapeOf(conv.getWeight()),
        ys = shapeOf(conv.getResult());
  const int sp = (int)xs.size() - 2;
  const Shape st = codegen::intsOf(conv.getStrides()), pads = codegen::intsOf(conv.getPads()),
              dil = codegen::intsOf(conv.getDilations());
  // NC[D]HW: x [N, C, spatial...], w [M, C/group, k...]; nhwc (every operand channels last): x
  // [N, spatial..., C], w [M, k..., C/group], and the channel sum is the inner loop, over
  // contiguous elements of x and w. `at`: the first spatial (or window) dim.
  const bool last = conv.getNhwc();
  const size_t at = last ? 1 : 2;
  const int64_t group = conv.getGroup(), C = last ? xs.back() : xs[1], M = ws[0],
                Cg = C / group, Mg = M / group;
  const std::string acc = T == "double" ? "double" : (ct.isFloat ? "float" : "int64_t");
  if (depthwiseNhwc(conv) && ct.isFloat)
    return emitDepthwiseNhwcLoop(conv, ct, x, w, b, store);
  c.open("for (" + it + " i = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x; i < " +
         str(product(ys)) + "; i += (" + it + ")gridDim.x * blockDim.x)");
  c.line(it + " rem = i;");
  if (last) {
    c.line("const " + it + " m = rem % " + str(M) + ";");
    c.line("rem /= " + str(M) + ";");
  }
  for (int d = sp - 1; d >= 0; --d) {
    c.line("const " + it + " y" + std::to_string(d) + " = rem % " + str(ys[d + at]) + ";");
    c.line("rem /= " + str(ys[d + at]) + ";");
  }
  if (last) {
    c.line("const " + it + " n = rem, g = m / " + str(Mg) + ";");
  } else {
    c.line("const " + it + " m = rem % " + str(M) + ", n = rem / " + str(M) + ";");
    c.line("const " + it + " g = m / " + str(Mg) + ";");
  }
  c.line(acc + " a = " + (b.empty() ? "0" : "(" + acc + ")" + ct.ld(b + "[m]")) + ";");
  if (!last) {
    c.open("for (" + it + " ci = 0; ci < " + str(Cg) + "; ++ci)");
    c.line("const " + T + " *xc = " + x + " + (n * " + str(C) + " + g * " + str(Cg) + " + ci) * " +
           str(product(xs, 2)) + ";");
    c.line("const " + T + " *wc = " + w + " + (m * " + str(Cg) + " + ci) * " +
           str(product(ws, 2)) + ";");
  }
  for (int d = 0; d < sp; ++d) {
    std::string k = "k" + std::to_string(d), ic = "x" + std::to_string(d);
    c.open("for (" + it + " " + k + " = 0; " + k + " < " + str(ws[d + at]) + "; ++" + k + ")");
    c.line("const " + it + " " + ic + " = y" + std::to_string(d) + " * " + str(st[d]) + " - " +
           str(pads[d]) + " + " + k + " * " + str(dil[d]) + ";");
    c.line("if (" + ic + " < 0 || " + ic + " >= " + str(xs[d + at]) + ") continue;");
  }
  // The tap's offset: within the (n, c) plane (NC[D]HW), or the position's pixel (nhwc).
  std::string xo = last ? "n" : "0", wo = last ? "m" : "0";
  for (int d = 0; d < sp; ++d) {
    xo = "(" + xo + ") * " + str(xs[d + at]) + " + x" + std::to_string(d);
    wo = "(" + wo + ") * " + str(ws[d + at]) + " + k" + std::to_string(d);
  }
  if (last) {
    c.line("const " + T + " *xc = " + x + " + (" + xo + ") * " + str(C) + " + g * " + str(Cg) +
           ";");
    c.line("const " + T + " *wc = " + w + " + (" + wo + ") * " + str(Cg) + ";");
    c.open("for (" + it + " ci = 0; ci < " + str(Cg) + "; ++ci)");
    c.line("a += (" + acc + ")" + ct.ld("xc[ci]") + " * (" + acc + ")" + ct.ld("wc[ci]") + ";");
    c.close();
  } else {
    c.line("a += (" + acc + ")" + ct.ld("xc[" + xo + "]") + " * (" + acc + ")" +
           ct.ld("wc[" + wo + "]") + ";");
  }
  for (int d = 0; d < sp; ++d)
    c.close();
  if (!last)
    c.close();
  store("i", "a");
  c.close();
}

int64_t KernelBuilder::depthwiseStrip(tg::ConvOp conv) {
  Shape ys = shapeOf(conv.getResult());
  // The widest strip (4, 2, 1 outputs along W) that still leaves 64K threads.
  int64_t p = 4;
  while (p > 1 && ys[0] * ys[1] * ((ys[2] + p - 1) / p) * ys[3] < 65536)
    p /= 2;
  return p;
}

void KernelBuilder::emitDepthwiseNhwcLoop(tg::ConvOp conv, const CType &ct, const std::string &x,
                                          const std::string &w, const std::string &b,
                                          const ConvStore &store) {
  // x [N, H, W, C], w [C, kh, kw, 1], y [N, Ho, Wo, C]. A thread: channel m (neighbouring
  // threads, neighbouring channels: coalesced) and a strip of P outputs along W, its kw weights
  // and the strip's input columns of each window row held in registers, so an input element is
  // read once per row and strip instead of once per tap.
  const std::string T = ct.name;
  Shape xs = shapeOf(conv.getInput()), ws = shapeOf(conv.getWeight()),
        ys = shapeOf(conv.getResult());
  const Shape st = codegen::intsOf(conv.getStrides()), pads = codegen::intsOf(conv.getPads()),
              dil = codegen::intsOf(conv.getDilations());
  const int64_t C = xs[3], kh = ws[1], kw = ws[2], P = depthwiseStrip(conv),
                strips = (ys[2] + P - 1) / P, cols = (P - 1) * st[1] + (kw - 1) * dil[1] + 1;
  const std::string acc = T == "double" ? "double" : "float";
  c.open("for (" + it + " i = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x; i < " +
         str(ys[0] * ys[1] * strips * C) + "; i += (" + it + ")gridDim.x * blockDim.x)");
  c.line("const " + it + " m = i % " + str(C) + ", sx = i / " + str(C) + " % " + str(strips) +
         ", r = i / " + str(C * strips) + ";");
  c.line("const " + it + " y0 = r % " + str(ys[1]) + ", n = r / " + str(ys[1]) + ", ox = sx * " +
         str(P) + ";");
  c.line(acc + " a[" + str(P) + "];");
  c.line("#pragma unroll");
  c.line("for (int p = 0; p < " + str(P) + "; ++p) a[p] = " +
         (b.empty() ? "0" : "(" + acc + ")" + ct.ld(b + "[m]")) + ";");
  c.open("for (int k0 = 0; k0 < " + str(kh) + "; ++k0)");
  c.line("const " + it + " x0 = y0 * " + str(st[0]) + " - " + str(pads[0]) + " + k0 * " +
         str(dil[0]) + ";");
  c.line("if (x0 < 0 || x0 >= " + str(xs[1]) + ") continue;");
  c.line("const " + T + " *row = " + x + " + (n * " + str(xs[1]) + " + x0) * " +
         str(xs[2] * C) + " + m;");
  c.line("const " + it + " c0 = ox * " + str(st[1]) + " - " + str(pads[1]) + ";");
  c.line(acc + " xr[" + str(cols) + "], wr[" + str(kw) + "];");
  c.line("#pragma unroll");
  c.line("for (int j = 0; j < " + str(cols) + "; ++j) xr[j] = c0 + j >= 0 && c0 + j < " +
         str(xs[2]) + " ? (" + acc + ")" + ct.ld("row[(c0 + j) * " + str(C) + "]") + " : 0;");
  c.line("#pragma unroll");
  c.line("for (int k1 = 0; k1 < " + str(kw) + "; ++k1) wr[k1] = (" + acc + ")" +
         ct.ld(w + "[(m * " + str(kh) + " + k0) * " + str(kw) + " + k1]") + ";");
  c.line("#pragma unroll");
  c.open("for (int k1 = 0; k1 < " + str(kw) + "; ++k1)");
  c.line("#pragma unroll");
  c.line("for (int p = 0; p < " + str(P) + "; ++p) a[p] += xr[p * " + str(st[1]) + " + k1 * " +
         str(dil[1]) + "] * wr[k1];");
  c.close();
  c.close();
  c.line("#pragma unroll");
  c.open("for (int p = 0; p < " + str(P) + "; ++p)");
  c.open("if (ox + p < " + str(ys[2]) + ")");
  store("((n * " + str(ys[1]) + " + y0) * " + str(ys[2]) + " + ox + p) * " + str(C) + " + m",
        "a[p]");
  c.close();
  c.close();
  c.close();
}

llvm::Error KernelBuilder::emitConv(Operation *rootOp, tg::ConvOp conv, FusedParts *parts,
                                    std::string &code) {
  if (conv.getWeightBlock() || conv.getChannelsLast())
    return opError(conv, "a blocked conv weight (weight_block) or a channels-last result alone is "
                         "a CPU layout");
  Value g = conv.getResult();
  auto gt = ctypeOf(g, conv);
  if (!gt)
    return gt.takeError();
  Value out = rootOp->getResult(0);
  if (product(shapeOf(out)) == 0 || product(shapeOf(g)) == 0)
    return llvm::Error::success();
  // The convolution's operands: the op's own, or the fused op's operands it reads.
  std::vector<std::string> ptrs;
  std::vector<StepArg> operands;
  for (unsigned i = 0; i < conv->getNumOperands(); ++i) {
    const unsigned a = parts ? parts->gemmArgs[i] : i;
    ptrs.push_back(inPtr[a]);
    operands.push_back(StepArg{rootOp->getOperand(a)});
  }
  const bool epilogue = parts && parts->result != g;
  // The convolution writes the output buffer when the epilogue keeps its shape and type (each
  // element is then read and rewritten in place by the thread that owns it); else the scratch.
  StepArg dst{out};
  std::string dptr = outPtr[0];
  const std::string epilogueGlobals = globals;
  globals.clear();
  if (epilogue && (shapeOf(g) != shapeOf(out) || g.getType() != out.getType())) {
    const int64_t bytes = tensorBytes(g.getType());
    em.scratch_ = std::max(em.scratch_, (bytes + kBufferAlignment - 1) / kBufferAlignment *
                                            kBufferAlignment);
    dst = StepArg{Value(), 0, bytes};
    addParam(gt->name + " *gtmp", dst);
    dptr = "gtmp";
  }
  // The own kernel applies the epilogue itself when it is written in place of the output (the
  // epilogue step after it then runs only after cuDNN without a fused epilogue) and is not
  // exactly cuDNN's fused call, or is a lone ReLU (a runtime without ConvDesc.own_epilogue
  // refuses the first and applies the second twice, to the same result).
  Type et = g.getType().cast<RankedTensorType>().getElementType();
  const bool library = et.isF32() || et.isF16() || et.isBF16();
  LibraryEpilogue le;
  if (library && epilogue && dptr != "gtmp")
    le = libraryEpilogue(parts->ops, g, parts->result, cast<tg::FusedOp>(rootOp).getBody().front(),
                         inPtr);
  const bool ownEpilogue =
      library && epilogue && dptr != "gtmp" &&
      (!le.ok || (le.act == plan::GemmDesc::RELU && le.zArg < 0)) &&
      llvm::all_of(parts->leaves, [](const auto &l) { return l.second.gather.idx.empty(); });
  ConvStore store = [&](const std::string &idx, const std::string &acc) {
    c.line(dptr + "[" + idx + "] = " + gt->st(acc) + ";");
  };
  std::vector<std::pair<Value, Leaf>> inKernel;
  if (ownEpilogue) {
    inKernel = parts->leaves;
    inKernel.push_back({g, Leaf{shapeOf(g), *gt, "gv", ""}});
    if (auto e = checkElementwise(parts->ops, inKernel, parts->result))
      return e;
    // The epilogue's constant arrays are declared before the convolution's kernel, which reads
    // them now; the epilogue kernel after it reads the same declarations.
    globals = epilogueGlobals;
  }
  llvm::Error epilogueError = llvm::Error::success();
  if (ownEpilogue) {
    const Shape os = shapeOf(out);
    store = [&, os](const std::string &idx, const std::string &acc) {
      // The sum rounded to the output type first, as the epilogue kernel reads it.
      c.line("const " + gt->name + " gv = " + gt->st(acc) + ";");
      std::string r = elementLines(
          c, parts->ops, inKernel, parts->result,
          [&](size_t k) {
            const Leaf &l = inKernel[k].second;
            if (k + 1 == inKernel.size())
              return l.ct.ld("gv");
            return l.ct.ld(l.ptr + "[" + broadcastIndex(idx, os, l.shape) + "]");
          },
          epilogueError);
      c.line(dptr + "[" + idx + "] = " + r + ";");
    };
  }
  {
    // Each store in a scope of its own (its `gv` and the epilogue's names stay local).
    ConvStore scoped = [&](const std::string &idx, const std::string &acc) {
      c.open("");
      store(idx, acc);
      c.close();
    };
    emitConvLoop(conv, *gt, ptrs[0], ptrs[1], conv.getBias() ? ptrs[2] : "",
                 ownEpilogue ? scoped : store);
  }
  if (epilogueError)
    return epilogueError;
  const std::string base = symbolBase;
  if (epilogue)
    symbolBase += "_conv";
  Shape ys = shapeOf(g);
  if (depthwiseNhwc(conv) && gt->isFloat) // a thread per strip of outputs along W
    ys[2] = (ys[2] + depthwiseStrip(conv) - 1) / depthwiseStrip(conv);
  endKernel(code, gridFor(product(ys)), kBlock);
  symbolBase = base;

  // A float convolution becomes a CONV step the runtime may run through cuDNN.
  if (library) {
    EmittedStep &s = steps.back();
    plan::ConvDesc &d = s.conv;
    s.isConv = true;
    for (int64_t v : shapeOf(conv.getInput()))
      d.add_x(v);
    for (int64_t v : shapeOf(conv.getWeight()))
      d.add_w(v);
    for (int64_t v : shapeOf(g))
      d.add_y(v);
    for (int64_t v : codegen::intsOf(conv.getPads()))
      d.add_pads(v);
    for (int64_t v : codegen::intsOf(conv.getStrides()))
      d.add_strides(v);
    for (int64_t v : codegen::intsOf(conv.getDilations()))
      d.add_dilations(v);
    d.set_group(conv.getGroup());
    d.set_nhwc(conv.getNhwc());
    d.set_dtype(et.isF32() ? 1 : (et.isF16() ? 10 : 16));
    d.set_x_arg(argIndex(s.args, operands[0]));
    d.set_w_arg(argIndex(s.args, operands[1]));
    d.set_y_arg(argIndex(s.args, dst));
    if (conv.getBias()) {
      d.set_bias(true);
      d.set_bias_arg(argIndex(s.args, operands[2]));
    }
    d.set_own_epilogue(ownEpilogue);
    if (le.ok) {
      d.set_activation((plan::GemmDesc::Activation)le.act);
      if (le.zArg >= 0) {
        d.set_residual(true);
        d.set_residual_arg(argIndex(s.args, StepArg{rootOp->getOperand(le.zArg)}));
      }
    }
    if (d.x_arg() < 0 || d.w_arg() < 0 || d.y_arg() < 0 || (d.bias() && d.bias_arg() < 0) ||
        (d.residual() && d.residual_arg() < 0))
      return opError(conv, "internal: a convolution operand is not among its kernel's arguments");
  }
  if (!epilogue)
    return llvm::Error::success();

  // The epilogue, in place on the output (or reading the scratch).
  std::vector<std::pair<Value, Leaf>> leaves = parts->leaves;
  if (auto e = beginKernel())
    return e;
  globals = ownEpilogue ? "" : epilogueGlobals;
  if (dptr == "gtmp")
    addParam("const " + gt->name + " *gtmp", dst);
  c.line(sourceComment("epilogue: " + std::to_string(parts->ops.size()) +
                       " elementwise op(s) per output element"));
  leaves.push_back({g, Leaf{shapeOf(g), *gt, dptr, ""}});
  if (auto e = elementwise(parts->ops, leaves, parts->result, outPtr[0]))
    return e;
  endKernel(code, gridFor(product(shapeOf(out)) / vecWidth), kBlock);
  steps.back().skipIfGemmFused = le.ok || ownEpilogue;
  return llvm::Error::success();
}

} // namespace tgc::cuda
