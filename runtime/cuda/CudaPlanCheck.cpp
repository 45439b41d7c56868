// CudaPlanCheck.cpp — the checks of a CUDA package's plan before the GPU is touched: every step
// argument's byte range, every GEMM's extent, the norm steps a GEMM may apply, and the caller's
// tensors against the plan's specs.
#include "runtime/cuda/CudaSessionImpl.h"
#include "runtime/DecodePlan.h"
#include "runtime/Env.h"
#include <cmath>

namespace tgc::cuda::detail {

Status CudaSession::checkArg(const BufferArg &a, const std::string &where) const {
  int64_t limit;
  switch (a.kind()) {
  case plan::ARENA: limit = plan_.arena_bytes(); break;
  case plan::WEIGHT: limit = plan_.weights_bytes(); break;
  case plan::INPUT:
    if (a.index() < 0 || (size_t)a.index() >= inBytes_.size())
      return Status::error(where + ": input index " + std::to_string(a.index()) + " out of range");
    limit = inBytes_[a.index()];
    break;
  case plan::STATE: return checkStateArg(a, stateBytes_, where);
  default:
    return Status::error(where + ": buffer kind " + std::to_string((int)a.kind()) +
                         " is not valid in a CUDA package");
  }
  if (a.offset() < 0 || a.bytes() < 0 || a.offset() > limit || a.bytes() > limit - a.offset())
    return Status::error(where + ": range " + plan::formatArg(a) + " lies outside its buffer (" +
                         std::to_string(limit) + " bytes)");
  return Status::success();
}

Status CudaSession::checkGemm(const plan::Step &s, const std::string &where) const {
  const plan::GemmDesc &g = s.gemm();
  // fp32, fp16 or bf16 (ONNX dtypes 1, 10, 16) for A, B, C, bias and R; fp32 accumulation.
  if (g.dtype() != 1 && g.dtype() != 10 && g.dtype() != 16)
    return Status::error(where + ": GEMM dtype " + std::to_string(g.dtype()) + " is not supported");
  const int64_t es = g.dtype() == 1 ? 4 : 2;
  if (g.out_f32() && (g.dtype() == 1 || g.bias() || g.residual() ||
                      g.activation() != plan::GemmDesc::NONE))
    return Status::error(where + ": an f32-result GEMM takes f16/bf16 operands and no bias, "
                                 "residual or activation");
  if (!plan::GemmDesc::Activation_IsValid(g.activation()))
    return Status::error(where + ": GEMM activation " + std::to_string(g.activation()) +
                         " is not supported");
  if (s.args_size() != 3 + g.bias() + g.residual())
    return Status::error(where + ": GEMM needs " + std::to_string(3 + g.bias() + g.residual()) +
                         " args");
  const int64_t lim = int64_t(1) << 31;
  for (int64_t v : {g.m(), g.n(), g.k(), g.lda(), g.ldb(), g.ldc(), g.batch()})
    if (v < 0 || v >= lim)
      return Status::error(where + ": GEMM dims out of range");
  for (int64_t v : {g.stride_a(), g.stride_b(), g.stride_c(), g.bias_stride()})
    if (v < 0 || v >= kMaxBufferBytes)
      return Status::error(where + ": GEMM strides out of range");
  if (g.m() == 0 || g.n() == 0 || g.k() == 0 || g.batch() < 1 || g.lda() < g.k() ||
      g.ldc() < g.n() || g.ldb() < (g.trans_b() ? g.k() : g.n()))
    return Status::error(where + ": GEMM shape is invalid");
  // Largest element index + 1 each operand touches.
  int64_t b1 = g.batch() - 1;
  int64_t needA = b1 * g.stride_a() + (g.m() - 1) * g.lda() + g.k();
  int64_t needB = b1 * g.stride_b() + (g.trans_b() ? (g.n() - 1) * g.ldb() + g.k()
                                                   : (g.k() - 1) * g.ldb() + g.n());
  int64_t needC = b1 * g.stride_c() + (g.m() - 1) * g.ldc() + g.n();
  int64_t need[5] = {needA, needB, needC, g.bias() ? b1 * g.bias_stride() + g.n() : needC, needC};
  for (int i = 0; i < s.args_size(); ++i)
    if (need[i] > s.args(i).bytes() / (i >= 2 && i != 3 && g.out_f32() ? 4 : es))
      return Status::error(where + ": GEMM operand " + std::to_string(i) + " needs " +
                           std::to_string(need[i] * (i >= 2 && i != 3 && g.out_f32() ? 4 : es)) +
                           " bytes, its range has " +
                           std::to_string(s.args(i).bytes()));
  return Status::success();
}

Status CudaSession::validate() {
  Status st = readPlan(path_, plan_);
  if (!st.ok)
    return Status::error(pre_ + st.message);
  return validatePlan();
}

Status CudaSession::validatePlan() {
  Status st;
  if (plan_.target().rfind("cuda:", 0) != 0)
    return Status::error(pre_ + "target '" + plan_.target() + "' is not a CUDA target");
  if (plan_.arena_bytes() < 0 || plan_.arena_bytes() > kMaxBufferBytes ||
      plan_.weights_bytes() < 0 || plan_.weights_bytes() > kMaxBufferBytes)
    return Status::error(pre_ + "arena or weights size is invalid");
  if (Status st = readInterface(plan_, pre_); !st.ok)
    return st;
  int64_t off = 0;
  for (int64_t b : inBytes_) {
    inOffsets_.push_back(off);
    off += (b + 255) / 256 * 256;
  }
  // Files.
  for (const std::string *f : {&plan_.weights_file(), &plan_.kernels_file(), &plan_.ptx_file()})
    if (!plainFileName(*f) && !(bucket_ && f == &plan_.weights_file()))
      return Status::error(pre_ + "file name '" + *f + "' is invalid");
  if (!bucket_) { // a bucket reads the package's weights, checked once (CudaBucket.cpp)
    st = readWhole(path_ + "/" + plan_.weights_file(), kMaxBufferBytes, weightsHost_, "weights");
    if (!st.ok)
      return Status::error(pre_ + st.message);
    if ((int64_t)weightsHost_.size() != plan_.weights_bytes() ||
        plan::xxh3(weightsHost_.data(), weightsHost_.size()) != plan_.weights_xxh3())
      return Status::error(pre_ + plan_.weights_file() + " size or checksum mismatch (corrupt)");
  }
  st = readWhole(path_ + "/" + plan_.kernels_file(), 1ll << 30, cubin_, "kernels");
  if (!st.ok)
    return Status::error(pre_ + st.message);
  if (plan::xxh3(cubin_.data(), cubin_.size()) != plan_.kernels_xxh3())
    return Status::error(pre_ + plan_.kernels_file() + " checksum mismatch (corrupt)");
  st = readWhole(path_ + "/" + plan_.ptx_file(), 1ll << 30, ptx_, "ptx");
  if (!st.ok)
    return Status::error(pre_ + st.message);
  if (plan::xxh3(ptx_.data(), ptx_.size()) != plan_.ptx_xxh3())
    return Status::error(pre_ + plan_.ptx_file() + " checksum mismatch (corrupt)");
  // Steps.
  for (int i = 0; i < plan_.steps_size(); ++i) {
    const plan::Step &s = plan_.steps(i);
    std::string where = pre_ + "step " + std::to_string(i) + " (" + s.symbol() + ")";
    for (int j = 0; j < s.args_size(); ++j) {
      st = checkArg(s.args(j), where + " arg " + std::to_string(j));
      if (!st.ok)
        return st;
      writesStates_ = writesStates_ || s.args(j).kind() == plan::STATE;
    }
    if (s.has_attention() && s.kind() != plan::Step::KERNEL)
      return Status::error(where + ": an attention shape is for kernel steps");
    if (s.kind() == plan::Step::GEMM) {
      if (s.skip_if_gemm_fused() || s.norm().kind() != plan::NormDesc::NONE)
        return Status::error(where + ": skip_if_gemm_fused and norm are for kernel steps");
      st = checkGemm(s, where);
      if (!st.ok)
        return st;
    } else if (s.kind() == plan::Step::KERNEL || s.kind() == plan::Step::CONV) {
      if (s.kind() == plan::Step::CONV &&
          (s.skip_if_gemm_fused() || s.norm().kind() != plan::NormDesc::NONE))
        return Status::error(where + ": skip_if_gemm_fused and norm are for kernel steps");
      if (s.kind() == plan::Step::CONV && !(st = checkConv(i, where)).ok)
        return st;
      if (s.has_attention() && !(st = checkAttention(i, where)).ok)
        return st;
      if (s.symbol().empty() || s.grid_size() != 3 || s.block_size() != 3)
        return Status::error(where + ": kernel step needs a symbol, grid[3] and block[3]");
      uint64_t threads = 1;
      for (int d = 0; d < 3; ++d) {
        if (s.grid(d) == 0 || s.block(d) == 0)
          return Status::error(where + ": empty launch dimension");
        threads *= s.block(d);
      }
      if (threads > 1024 || s.grid(1) > 65535 || s.grid(2) > 65535)
        return Status::error(where + ": launch shape exceeds the device limits");
      if (s.norm().kind() != plan::NormDesc::NONE) {
        st = checkNorm(i, where);
        if (!st.ok)
          return st;
      } else if (s.skip_if_gemm_fused() && !(i > 0 && [&](const plan::Step &p) {
                   if (p.kind() == plan::Step::CONV)
                     return p.conv().activation() != plan::GemmDesc::NONE || p.conv().residual() ||
                            p.conv().own_epilogue();
                   return p.kind() == plan::Step::GEMM &&
                          p.gemm().activation() != plan::GemmDesc::NONE;
                 }(plan_.steps(i - 1)))) {
        return Status::error(where + ": skip_if_gemm_fused needs a GEMM step with an "
                                     "activation (or a CONV step with an activation, a "
                                     "residual or its own epilogue) right before it");
      }
    } else if (s.kind() == plan::Step::LOOP) {
      LoopLayout layout;
      if (Status ls = checkLoopStep(s, where, layout); !ls.ok)
        return ls;
    } else {
      return Status::error(where + ": step kind " + std::to_string((int)s.kind()) +
                           " is not valid in a CUDA package");
    }
  }
  return checkOutputSources(plan_, outBytes_, pre_, [&](const BufferArg &a, const std::string &w) {
    return checkArg(a, w);
  });
}

// A CONV step's ConvDesc: shapes that agree with each other and with the convolution's
// arithmetic, arg indices in range, and every operand's byte range holding its tensor.
Status CudaSession::checkConv(int i, const std::string &where) const {
  const plan::Step &s = plan_.steps(i);
  const plan::ConvDesc &c = s.conv();
  auto bad = [&](const std::string &why) { return Status::error(where + ": conv " + why); };
  const int rank = c.x_size(), sp = rank - 2;
  if (rank < 3 || rank > 10 || c.w_size() != rank || c.y_size() != rank ||
      c.pads_size() != 2 * sp || c.strides_size() != sp || c.dilations_size() != sp)
    return bad("shapes and attributes do not agree in rank");
  if (c.dtype() != 1 && c.dtype() != 10 && c.dtype() != 16)
    return bad("dtype " + std::to_string(c.dtype()) + " is not supported");
  if (c.activation() != plan::GemmDesc::NONE && c.activation() != plan::GemmDesc::RELU)
    return bad("activation must be NONE or RELU");
  // An own kernel applying its epilogue needs the epilogue step after it to be skippable, or the
  // epilogue would be applied twice.
  if (c.own_epilogue() &&
      !(i + 1 < plan_.steps_size() && plan_.steps(i + 1).kind() == plan::Step::KERNEL &&
        plan_.steps(i + 1).skip_if_gemm_fused()))
    return bad("own_epilogue needs a kernel step marked skip_if_gemm_fused right after it");
  // Every dimension and attribute below 2^31, every tensor below 2^40 elements: the arithmetic
  // below cannot overflow, and cuDNN's int descriptors hold them.
  const int64_t lim = (int64_t(1) << 31) - 1;
  for (const auto *v : {&c.x(), &c.w(), &c.y()})
    for (int64_t e : *v)
      if (e < 1 || e > lim)
        return bad("dimension out of range");
  // The shapes in N, C, spatial... order (an nhwc step stores the channels last).
  auto ncOrder = [&](const google::protobuf::RepeatedField<int64_t> &v) {
    std::vector<int64_t> r(v.begin(), v.end());
    if (c.nhwc())
      std::rotate(r.begin() + 1, r.end() - 1, r.end());
    return r;
  };
  const std::vector<int64_t> x = ncOrder(c.x()), w = ncOrder(c.w()), y = ncOrder(c.y());
  if (c.group() < 1 || c.group() > lim || x[1] % c.group() || w[0] % c.group() ||
      w[1] * c.group() != x[1] || y[0] != x[0] || y[1] != w[0])
    return bad("channels, groups and batch do not agree");
  for (int d = 0; d < sp; ++d) {
    const int64_t st = c.strides(d), dl = c.dilations(d), pb = c.pads(d), pe = c.pads(d + sp);
    if (st < 1 || st > lim || dl < 1 || dl > lim || pb < 0 || pb > lim || pe < 0 || pe > lim)
      return bad("stride, dilation or padding out of range");
    const int64_t span = x[d + 2] + pb + pe - dl * (w[d + 2] - 1) - 1;
    if (span < 0 || span / st + 1 != y[d + 2])
      return bad("output size " + std::to_string(y[d + 2]) + " along spatial dim " +
                 std::to_string(d) + " does not follow from the input, window and attributes");
  }
  const int64_t es = c.dtype() == 1 ? 4 : 2;
  auto elems = [](const google::protobuf::RepeatedField<int64_t> &v) {
    int64_t n = 1;
    for (int64_t e : v)
      if (__builtin_mul_overflow(n, e, &n) || n > (int64_t(1) << 40))
        return int64_t(-1);
    return n;
  };
  for (const auto *v : {&c.x(), &c.w(), &c.y()})
    if (elems(*v) < 0)
      return bad("a tensor of more than 2^40 elements");
  struct Need {
    bool used;
    int arg;
    int64_t elems;
    const char *what;
  } needs[] = {{true, c.x_arg(), elems(c.x()), "x"},
               {true, c.w_arg(), elems(c.w()), "w"},
               {true, c.y_arg(), elems(c.y()), "y"},
               {c.bias(), c.bias_arg(), w[0], "bias"},
               {c.residual(), c.residual_arg(), elems(c.y()), "residual"}};
  for (const Need &n : needs) {
    if (!n.used)
      continue;
    if (n.arg < 0 || n.arg >= s.args_size())
      return bad(std::string(n.what) + " arg " + std::to_string(n.arg) + " out of range");
    if (n.elems > s.args(n.arg).bytes() / es)
      return bad(std::string(n.what) + " needs " + std::to_string(n.elems * es) +
                 " bytes, its range has " + std::to_string(s.args(n.arg).bytes()));
  }
  return Status::success();
}

// A KERNEL step's AttentionDesc: dimensions in range, heads a multiple of the key/value heads,
// f16 or bf16, and every operand's byte range holding its packed tensor.
Status CudaSession::checkAttention(int i, const std::string &where) const {
  const plan::Step &s = plan_.steps(i);
  const plan::AttentionDesc &a = s.attention();
  auto bad = [&](const std::string &why) { return Status::error(where + ": attention " + why); };
  const int64_t lim = (int64_t(1) << 31) - 1;
  for (int64_t e : {a.batch(), a.heads(), a.kv_heads(), a.seq_q(), a.seq_kv(), a.head_dim(),
                    a.head_dim_v()})
    if (e < 1 || e > lim)
      return bad("dimension out of range");
  if (a.heads() % a.kv_heads())
    return bad("heads " + std::to_string(a.heads()) + " not a multiple of key/value heads " +
               std::to_string(a.kv_heads()));
  if (a.dtype() != 10 && a.dtype() != 16)
    return bad("dtype " + std::to_string(a.dtype()) + " is not f16 or bf16");
  if (!std::isfinite(a.scale()))
    return bad("scale is not finite");
  auto elems = [](std::initializer_list<int64_t> dims) {
    int64_t n = 1;
    for (int64_t e : dims)
      if (__builtin_mul_overflow(n, e, &n) || n > (int64_t(1) << 40))
        return int64_t(-1);
    return n;
  };
  struct Need {
    int arg;
    int64_t elems;
    const char *what;
  } needs[] = {{a.q_arg(), elems({a.batch(), a.heads(), a.seq_q(), a.head_dim()}), "q"},
               {a.k_arg(), elems({a.batch(), a.kv_heads(), a.seq_kv(), a.head_dim()}), "k"},
               {a.v_arg(), elems({a.batch(), a.kv_heads(), a.seq_kv(), a.head_dim_v()}), "v"},
               {a.o_arg(), elems({a.batch(), a.heads(), a.seq_q(), a.head_dim_v()}), "o"}};
  for (const Need &n : needs) {
    if (n.elems < 0)
      return bad(std::string("a tensor of more than 2^40 elements (") + n.what + ")");
    if (n.arg < 0 || n.arg >= s.args_size())
      return bad(std::string(n.what) + " arg " + std::to_string(n.arg) + " out of range");
    if (n.elems > s.args(n.arg).bytes() / 2)
      return bad(std::string(n.what) + " needs " + std::to_string(n.elems * 2) +
                 " bytes, its range has " + std::to_string(s.args(n.arg).bytes()));
  }
  return Status::success();
}

Status CudaSession::checkNorm(int i, const std::string &where) const {
  const plan::Step &s = plan_.steps(i);
  if (!s.skip_if_gemm_fused() || i == 0)
    return Status::error(where + ": a norm step needs skip_if_gemm_fused and a GEMM step right "
                                 "before it");
  const std::string why = plan::gemmNormProblem(plan_.steps(i - 1), s);
  return why.empty() ? Status::success() : Status::error(where + ": " + why);
}

bool CudaSession::gemmMayApplyNorm(size_t i) const {
  if (i + 1 >= steps_.size() || !steps_[i + 1].norm)
    return false;
  if (const char *e = tgc::envValue(tgc::Env::GemmNorm); e && std::string(e) == "off")
    return false;
  const plan::Step &n = plan_.steps((int)i + 1);
  const int params = (n.norm().scale() ? 1 : 0) + (n.norm().bias() ? 1 : 0);
  for (int a = 1; a <= params; ++a)
    if (n.args(a).kind() != plan::WEIGHT)
      return false;
  return true;
}

int CudaSession::gemmWeightOperands(size_t i) const {
  const plan::Step &s = plan_.steps((int)i);
  return (s.args(1).kind() == plan::WEIGHT ? 1 : 0) |
         (s.gemm().bias() && s.args(3).kind() == plan::WEIGHT ? 2 : 0);
}

} // namespace tgc::cuda::detail
