// PlanUtil.cpp — checksums and the human-readable dump of a launch plan.
//
// xxHash is compiled into this file (XXH_INLINE_ALL: every function static inline, names
// private to this translation unit), so the runtime links no libxxhash and exports none of
// its symbols: libtgc.so stays self-contained, and a host process with another xxHash
// version loaded cannot interpose on ours (docs/decisions.md, issue 27).
#include "runtime/schema/PlanUtil.h"
#include "runtime/Text.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "runtime/Tensor.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace tgc::plan {

namespace {
/// Checksum of `p` serialized with plan_xxh3 cleared (fields serialize in number order).
bool contentChecksum(const Plan &p, uint64_t &h) {
  Plan copy = p;
  copy.clear_plan_xxh3();
  std::string bytes;
  if (!copy.SerializeToString(&bytes))
    return false;
  h = xxh3(bytes.data(), bytes.size());
  return true;
}
} // namespace

bool serializePlan(const Plan &p, std::string &out) {
  uint64_t h;
  if (!contentChecksum(p, h))
    return false;
  Plan copy = p;
  copy.set_plan_xxh3(h);
  return copy.SerializeToString(&out);
}

bool planChecksumMatches(const Plan &p) {
  uint64_t h;
  return contentChecksum(p, h) && h == p.plan_xxh3();
}

uint64_t xxh3(const void *data, size_t n) { return XXH3_64bits(data, n); }

bool xxh3File(const std::string &path, uint64_t &out) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return false;
  XXH3_state_t state; // on the stack: no allocation, nothing to free on any path
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  std::vector<unsigned char> buf(1 << 16);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0)
    XXH3_64bits_update(&state, buf.data(), n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  out = XXH3_64bits_digest(&state);
  return ok;
}

static const char *kindName(BufferKind k) {
  switch (k) {
  case INPUT: return "INPUT";
  case OUTPUT: return "OUTPUT";
  case ARENA: return "ARENA";
  case WEIGHT: return "WEIGHT";
  case STATE: return "STATE";
  default: return "UNKNOWN";
  }
}

std::string formatArg(const BufferArg &a) {
  std::ostringstream os;
  os << kindName(a.kind());
  if (a.kind() == INPUT || a.kind() == OUTPUT || a.kind() == STATE)
    os << "[" << a.index() << "]";
  os << "+" << a.offset() << ":" << a.bytes();
  return os.str();
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

static std::string formatDesc(const TensorDesc &d) {
  std::ostringstream os;
  os << "'" << escapeText(d.name()) << "' ";
  if (isKnownDType(d.dtype()))
    os << dtypeName(static_cast<DType>(d.dtype()));
  else
    os << "dtype(" << d.dtype() << ")";
  os << " " << formatShape(std::vector<int64_t>(d.shape().begin(), d.shape().end()));
  return os.str();
}

std::string formatPlan(const Plan &p) {
  std::ostringstream os;
  char hex[32];
  os << "tgc plan v" << p.format_version() << "\n";
  os << "target:       " << p.target() << "\n";
  os << "tgc version:  " << p.tgc_version() << "\n";
  if (!p.precision().empty())
    os << "precision:    " << p.precision() << "\n";
  os << "model:        " << escapeText(p.model_name()) << " (hash " << p.model_hash() << ")\n";
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)p.weights_xxh3());
  os << "weights:      " << p.weights_file() << ", " << p.weights_bytes() << " bytes, xxh3 " << hex
     << "\n";
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)p.kernels_xxh3());
  os << "kernels:      " << p.kernels_file() << ", xxh3 " << hex << "\n";
  os << "arena:        " << p.arena_bytes() << " bytes (alignment " << p.alignment() << ")\n";
  os << "inputs:\n";
  for (int i = 0; i < p.inputs_size(); ++i) {
    os << "  [" << i << "] " << formatDesc(p.inputs(i));
    if (p.inputs(i).has_index_bound()) {
      const IndexBound &b = p.inputs(i).index_bound();
      os << " in [" << b.lo() << ", " << b.hi() << "] (indices of " << escapeText(b.node()) << ")";
    }
    os << "\n";
  }
  os << "outputs:\n";
  for (int i = 0; i < p.outputs_size(); ++i) {
    os << "  [" << i << "] " << formatDesc(p.outputs(i)) << " <- "
       << formatArg(p.outputs(i).source());
    if (p.outputs(i).has_count()) // a data-dependent extent: the shape is its upper bound
      os << ", dim " << p.outputs(i).dynamic_axis() << " data-dependent (count at "
         << formatArg(p.outputs(i).count()) << ")";
    os << "\n";
  }
  os << "steps: " << p.steps_size() << "\n";
  for (int i = 0; i < p.steps_size(); ++i) {
    const Step &s = p.steps(i);
    os << "  " << i << ": " << (s.kind() == Step::COPY ? "copy" : s.symbol())
       << (!s.skip_if_gemm_fused() ? ""
           : i > 0 && p.steps(i - 1).kind() == Step::CONV
               ? (p.steps(i - 1).conv().own_epilogue() ? "[only after cuDNN, unless it applied it]"
                                                       : "[unless cuDNN applied it]")
               : "[unless the GEMM applied it]");
    if (s.kind() == Step::GEMM)
      os << "[" << s.gemm().m() << "x" << s.gemm().n() << "x" << s.gemm().k()
         << (s.gemm().batch() > 1 ? ", batch " + std::to_string(s.gemm().batch()) : "")
         << (s.gemm().bias() ? (s.gemm().bias_stride() ? ", +bias per batch" : ", +bias") : "") << (s.gemm().residual() ? ", +residual" : "") << (s.gemm().out_f32() ? ", f32 result" : "")
         << (s.gemm().activation() ? ", +" + GemmDesc::Activation_Name(s.gemm().activation()) : "")
         << "]";
    if (s.kind() == Step::CONV) {
      const ConvDesc &c = s.conv();
      os << "[conv";
      const int k0 = c.nhwc() ? 1 : 2, k1 = c.nhwc() ? c.w_size() - 1 : c.w_size(); // the window
      for (int d = k0; d < k1; ++d)
        os << (d == k0 ? " " : "x") << c.w(d);
      os << ", " << (c.w_size() ? c.w(0) : 0) << " out" << (c.nhwc() ? ", channels last" : "")
         << (c.group() > 1 ? ", group " + std::to_string(c.group()) : "")
         << (c.bias() ? ", +bias" : "") << (c.residual() ? ", +residual" : "")
         << (c.activation() ? ", +" + GemmDesc::Activation_Name(c.activation()) : "")
         << "; cuDNN or the kernel" << (c.own_epilogue() ? " with its epilogue" : "") << "]";
    }
    if ((s.kind() == Step::KERNEL || s.kind() == Step::CONV) && s.grid_size() == 3 &&
        s.block_size() == 3)
      os << "<<<" << s.grid(0) << ", " << s.block(0)
         << (s.shared_bytes() ? ", " + std::to_string(s.shared_bytes()) + " B shared" : "")
         << (s.one_block_per_sm() ? ", one block per SM" : "") << ">>>";
    os << "(";
    for (int j = 0; j < s.args_size(); ++j)
      os << (j ? ", " : "") << formatArg(s.args(j));
    os << ")";
    if (!s.label().empty())
      os << "  # " << safeText(s.label());
    os << "\n";
  }
  return os.str();
}

std::string gemmNormProblem(const Step &gemm, const Step &norm) {
  const NormDesc &nd = norm.norm();
  if (gemm.kind() != Step::GEMM || norm.kind() != Step::KERNEL)
    return "a norm step needs a GEMM step right before it";
  if (nd.kind() != NormDesc::LAYER_NORM && nd.kind() != NormDesc::RMS_NORM)
    return "unknown norm kind " + std::to_string((int)nd.kind());
  if (nd.kind() == NormDesc::RMS_NORM && nd.bias())
    return "an RMS norm has no bias";
  const GemmDesc &g = gemm.gemm();
  if (g.activation() != GemmDesc::NONE || g.batch() != 1 || (g.dtype() != 10 && g.dtype() != 16) ||
      g.ldc() != g.n() || nd.cols() != g.n() || !(nd.epsilon() >= 0.f && nd.epsilon() < 1e30f))
    return "the norm needs an f16/bf16 GEMM of one batch without an activation, rows of n = "
           "cols packed (ldc = n) and a finite epsilon >= 0";
  const int64_t row = g.n() * 2, all = g.m() * row, yAll = all * (nd.out_f32() ? 2 : 1);
  const int want = 2 + nd.scale() + nd.bias();
  if (norm.args_size() != want || gemm.args_size() < 3)
    return "the norm needs " + std::to_string(want) + " arguments";
  const BufferArg &x = norm.args(0), &c = gemm.args(2), &y = norm.args(want - 1);
  if (x.kind() != c.kind() || x.index() != c.index() || x.offset() != c.offset() ||
      x.bytes() != all || c.bytes() != all || y.bytes() != yAll)
    return "the norm must read exactly the GEMM's result (" + std::to_string(all) +
           " bytes) and write " + std::to_string(yAll);
  for (int j = 1; j + 1 < want; ++j)
    if (norm.args(j).bytes() != row || norm.args(j).kind() != WEIGHT)
      return "the norm's scale and bias need to be weights of " + std::to_string(row) +
             " bytes each (the sum kernel reads them before the GEMM ends)";
  return "";
}

bool stepOmitted(const Step &s, const std::vector<std::string> &words) {
  const bool gemm = s.kind() == Step::GEMM;
  for (const std::string &w : words) {
    if (w == "gemm") {
      if (gemm)
        return true;
    } else if (w.rfind("gemm:", 0) == 0) {
      if (gemm && s.label().find(w.substr(5)) != std::string::npos)
        return true;
    } else if (!gemm && s.symbol().find(w) != std::string::npos) {
      return true;
    }
  }
  return false;
}

uint32_t launchSharedBytes(const Step &s, int64_t blocks, int64_t sms, int64_t perSm,
                           int64_t reserved, int64_t perBlockMax) {
  const int64_t own = s.shared_bytes();
  if (!s.one_block_per_sm() || blocks > sms || perSm <= 0)
    return (uint32_t)own;
  // Two blocks need 2 · (bytes + reserved) <= perSm; one more than half of it each is too much.
  const int64_t alone = (perSm / 2 - reserved + 1 + 15) / 16 * 16;
  return (uint32_t)(alone <= perBlockMax ? std::max(own, alone) : own);
}

} // namespace tgc::plan
