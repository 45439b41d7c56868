// CutlassConfig.cuh — the plug-in's tile configurations as CUTLASS types, and what makes one
// GEMM of them: its arguments, check and creation. Each tile is instantiated in a translation unit
// of its own (CutlassTile.cu, built once per tile, in parallel); CutlassGemm.cu holds the C
// interface and calls a tile's checkTile<N> / createTile<N>.
//
// Two orientations. Tiles 0-4 run row-major C = A·Bᵀ as column-major Cᵀ = B·Aᵀ: the weights B
// are CUTLASS's operand A (M = weight rows), the operand example 63's kernel prefetches into L2
// while it waits for the previous kernel (perf-log, seventh session), and the bias is a per-row
// one. Tiles 5-7 ("tokens first") run C = A·Bᵀ as it stands (M = tokens, C row-major, a
// per-column bias): cooperative kernels split M between their two consumer warp groups, so M
// must be 128 or 256, and 128 tokens × 192 weight rows is the tile that fills 132 SMs with
// 1,024 tokens × 3,072 outputs (one wave of 128 tiles; perf-log, thirty-third session).
#ifndef TGC_RUNTIME_CUDA_CUTLASS_CUTLASSCONFIG_CUH
#define TGC_RUNTIME_CUDA_CUTLASS_CUTLASSCONFIG_CUH

#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

// CUTLASS example 63 (the include path points at its folder).
#include "collective/builder.hpp"
#include "collective/dispatch_policy_extra.hpp"
#include "kernel/sm90_gemm_tma_warpspecialized_with_prefetch.hpp"

#include "runtime/cuda/cutlass/CutlassGemm.h"
#include "runtime/cuda/cutlass/CutlassSplitReduce.cuh"

namespace tgc_cutlass {

using namespace cute;

/// The kernel a tile runs on: example 63's (weights prefetched, few tokens), CUTLASS's
/// persistent ping-pong (two warp groups take turns on the tensor cores, one's epilogue under
/// the other's mainloop) or cooperative (two warp groups share one tile) kernel.
enum class KernelKind { kPrefetch, kPingPong, kCooperative };

/// A tile: CUTLASS M × N × K, its kernel and orientation (see the top of this file).
template <int M, int N, int K, KernelKind Kind, bool TokensFirst> struct TileDesc {
  using Shape = cute::Shape<Int<M>, Int<N>, Int<K>>;
  static constexpr KernelKind kKind = Kind;
  static constexpr bool kTokensFirst = TokensFirst;
};
constexpr KernelKind kPrefetch = KernelKind::kPrefetch, kPingPong = KernelKind::kPingPong,
                     kCooperative = KernelKind::kCooperative;

/// Tile `Id` (TgcCutlassGemmDesc.tile). Tiles 0-4 put the weight rows in M, 5-7 the tokens.
template <int Id> struct TileOf;
template <> struct TileOf<0> : TileDesc<64, 64, 128, kPrefetch, false> {};
template <> struct TileOf<1> : TileDesc<64, 128, 64, kPrefetch, false> {};
template <> struct TileOf<2> : TileDesc<64, 32, 128, kPrefetch, false> {};
template <> struct TileOf<3> : TileDesc<128, 128, 64, kPingPong, false> {};
template <> struct TileOf<4> : TileDesc<64, 128, 64, kPingPong, false> {};
template <> struct TileOf<5> : TileDesc<128, 192, 64, kCooperative, true> {}; // 128 tokens × 192
template <> struct TileOf<6> : TileDesc<64, 192, 64, kPingPong, true> {};     // per warp group
template <> struct TileOf<7> : TileDesc<64, 96, 64, kPingPong, true> {};      // per warp group

template <class T, template <class> class Act>
using WithAct = cutlass::epilogue::fusion::LinCombEltAct<Act, T, float, T, float>;

template <class T, template <class> class Act>
using RowBiasAct = cutlass::epilogue::fusion::LinCombPerRowBiasEltAct<Act, T, float, T, T, float>;

template <class T, template <class> class Act>
using ColBiasAct = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<Act, T, float, T, T, float>;

/// CUTLASS's elementwise activation for plan.proto's code `Act`.
template <int Act> struct ActOf {
  template <class T>
  using Fn = std::conditional_t<
      Act == 1, cutlass::epilogue::thread::ReLu<T>,
      std::conditional_t<
          Act == 2, cutlass::epilogue::thread::GELU<T>,
          std::conditional_t<Act == 3, cutlass::epilogue::thread::GELU_taylor<T>,
                             std::conditional_t<Act == 4, cutlass::epilogue::thread::SiLu<T>,
                                                cutlass::epilogue::thread::Identity<T>>>>>;
};

/// Act: 0 none, 1 ReLU, 2 erf-GELU, 3 tanh-GELU, 4 SiLU (plan.proto's codes). Partial: the
/// split-K form, which writes float partial sums of k-slices (no C, bias or activation;
/// splitReduce applies them). Example 63's kernel adds the bias in its mainloop (kExample63);
/// the ping-pong and cooperative kernels' epilogues add it (per row, or per column when tokens
/// come first) and apply the activation.
template <class T, int Act, int TileId, bool Partial = false> struct Config {
  static constexpr bool kPartial = Partial;
  static constexpr KernelKind kKind = TileOf<TileId>::kKind;
  static constexpr bool kExample63 = kKind == KernelKind::kPrefetch;
  static constexpr bool kTokensFirst = TileOf<TileId>::kTokensFirst;
  static constexpr bool kSplitK = TileId == 0 && !Partial; // the tile split-K runs on
  using Tile = typename TileOf<TileId>::Shape;
  using Cluster = Shape<_1, _1, _1>;
  using Out = std::conditional_t<Partial, float, T>;
  using Src = std::conditional_t<Partial, void, T>;
  using LayoutC = std::conditional_t<kTokensFirst, cutlass::layout::RowMajor,
                                     cutlass::layout::ColumnMajor>;
  using Fusion63 = std::conditional_t<
      Partial, cutlass::epilogue::fusion::LinearCombination<float, float, void, float>,
      std::conditional_t<
          Act == 0, cutlass::epilogue::fusion::LinearCombination<T, float, T, float>,
          WithAct<T, ActOf<Act>::template Fn>>>;
  using Fusion = std::conditional_t<
      kExample63, Fusion63,
      std::conditional_t<kTokensFirst, ColBiasAct<T, ActOf<Act>::template Fn>,
                         RowBiasAct<T, ActOf<Act>::template Fn>>>;
  using EpilogueSchedule =
      std::conditional_t<kKind == KernelKind::kCooperative,
                         cutlass::epilogue::TmaWarpSpecializedCooperative,
                         cutlass::epilogue::TmaWarpSpecialized>;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, Src, LayoutC,
      16 / sizeof(Out), Out, LayoutC, 16 / sizeof(Out), EpilogueSchedule, Fusion>::CollectiveOp;
  using Schedule = std::conditional_t<
      kExample63, cutlass::gemm::KernelTmaWarpSpecializedFP8FastAccumWithPrefetchAndSplitDMA,
      std::conditional_t<kKind == KernelKind::kCooperative,
                         cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                         cutlass::gemm::KernelTmaWarpSpecializedPingpong>>;
  // Both orientations read K-major operands: weight rows and token rows are k contiguous.
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, T, cutlass::layout::RowMajor, 8, T,
      cutlass::layout::ColumnMajor, 8, float, Tile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      Schedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

inline int fail(char *err, size_t len, const std::string &msg) {
  if (err && len)
    std::snprintf(err, len, "%s", msg.c_str());
  return 1;
}

/// The descriptor in words, for errors (CutlassGemm.cu).
std::string describe(const TgcCutlassGemmDesc &d);

struct Op {
  virtual ~Op() = default;
  virtual cutlass::Status run(cudaStream_t stream, bool pdl) = 0;
};

template <class G> struct OpT : Op {
  G gemm;
  void *ws = nullptr; // the kernel's workspace, where it asks for one
  ~OpT() override { cudaFree(ws); }
  cutlass::Status run(cudaStream_t stream, bool pdl) override {
    return gemm.run(stream, nullptr, pdl);
  }
};

/// A split-K GEMM: the partial GEMM over `splits` k-slices into a float workspace, then
/// splitReduce, both with programmatic dependent launch.
template <class G, class T> struct SplitOp : Op {
  G gemm;
  float *ws = nullptr;
  TgcCutlassGemmDesc d{};
  ~SplitOp() override { cudaFree(ws); }
  cutlass::Status run(cudaStream_t stream, bool pdl) override {
    cutlass::Status s = gemm.run(stream, nullptr, pdl);
    if (s != cutlass::Status::kSuccess)
      return s;
    cudaLaunchConfig_t cfg = {};
    cfg.stream = stream;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl ? 1 : 0;
    const float *p = ws;
    const T *bias = static_cast<const T *>(d.bias), *res = static_cast<const T *>(d.residual);
    T *c = static_cast<T *>(d.c);
    cudaError_t e;
    if (d.norm) {
      cfg.gridDim = dim3((unsigned)d.m);
      cfg.blockDim = dim3((unsigned)((d.n / 8 + 31) / 32 * 32));
      auto launch = [&](auto *y) { // Y's type: T, or float
        using TY = std::remove_pointer_t<decltype(y)>;
        return cudaLaunchKernelEx(&cfg, tgc_cutlass::splitReduceNorm<T, TY>, p, d.splits,
                                  (int)d.m, (int)d.n, (int)d.ldc, bias, res, c, d.norm, d.eps,
                                  static_cast<const T *>(d.gamma),
                                  static_cast<const T *>(d.beta), y);
      };
      e = d.norm_out_f32 ? launch(static_cast<float *>(d.norm_out))
                         : launch(static_cast<T *>(d.norm_out));
    } else {
      cfg.gridDim = dim3((unsigned)((d.m * d.n / 4 + 255) / 256));
      cfg.blockDim = dim3(256);
      e = cudaLaunchKernelEx(&cfg, tgc_cutlass::splitReduce<T>, p, d.splits, (int)d.m, (int)d.n,
                             (int)d.ldc, bias, res, c, d.activation);
    }
    return e == cudaSuccess ? cutlass::Status::kSuccess : cutlass::Status::kErrorInternal;
  }
};

/// CUTLASS's arguments for `d` (its pointers baked in).
template <class C> typename C::Gemm::Arguments arguments(const TgcCutlassGemmDesc &d, int sms) {
  using Args = typename C::Gemm::Arguments;
  using K = typename C::Gemm::GemmKernel;
  using E = typename C::Gemm::ElementA;
  using PtrC = decltype(Args{}.epilogue.ptr_C);
  using PtrD = decltype(Args{}.epilogue.ptr_D);
  const int n = (int)d.n, m = (int)d.m, k = (int)d.k, l = (int)d.batch;
  const auto mode =
      l > 1 ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm;
  cutlass::KernelHardwareInfo hw;
  hw.sm_count = sms;
  if constexpr (C::kTokensFirst) {
    // C (m×n, row-major) = A (m×k) · Bᵀ (B: n×k), as given.
    auto dA = cutlass::make_cute_packed_stride(typename K::StrideA{}, cute::make_shape(m, k, l));
    get<0>(dA) = d.lda, get<2>(dA) = d.stride_a;
    auto dB = cutlass::make_cute_packed_stride(typename K::StrideB{}, cute::make_shape(n, k, l));
    get<0>(dB) = d.ldb, get<2>(dB) = d.stride_b;
    auto dC = cutlass::make_cute_packed_stride(typename K::StrideC{}, cute::make_shape(m, n, l));
    get<0>(dC) = d.ldc, get<2>(dC) = d.stride_c;
    auto dD = cutlass::make_cute_packed_stride(typename K::StrideD{}, cute::make_shape(m, n, l));
    get<0>(dD) = d.ldc, get<2>(dD) = d.stride_c;
    Args args{mode,
              {m, n, k, l},
              {static_cast<const E *>(d.a), dA, static_cast<const E *>(d.b), dB},
              {{}, static_cast<PtrC>(d.residual), dC, static_cast<PtrD>(d.c), dD},
              hw};
    args.epilogue.thread.alpha = 1.f;
    args.epilogue.thread.beta = d.residual ? 1.f : 0.f;
    args.epilogue.thread.bias_ptr = static_cast<const E *>(d.bias); // per column: a weight row's
    args.epilogue.thread.dBias = {_0{}, _1{}, d.bias_stride};
    return args;
  } else {
    // Cᵀ (n×m, column-major) = B (n×k) · Aᵀ: the weights are CUTLASS's A.
    auto dA = cutlass::make_cute_packed_stride(typename K::StrideA{}, cute::make_shape(n, k, l));
    get<0>(dA) = d.ldb, get<2>(dA) = d.stride_b;
    auto dB = cutlass::make_cute_packed_stride(typename K::StrideB{}, cute::make_shape(m, k, l));
    get<0>(dB) = d.lda, get<2>(dB) = d.stride_a;
    auto dC = cutlass::make_cute_packed_stride(typename K::StrideC{}, cute::make_shape(n, m, l));
    get<1>(dC) = d.ldc, get<2>(dC) = d.stride_c;
    auto dD = cutlass::make_cute_packed_stride(typename K::StrideD{}, cute::make_shape(n, m, l));
    get<1>(dD) = d.ldc, get<2>(dD) = d.stride_c;
    Args args{mode,
              {n, m, k, l},
              {static_cast<const E *>(d.b), dA, static_cast<const E *>(d.a), dB},
              {{}, static_cast<PtrC>(d.residual), dC, static_cast<PtrD>(d.c), dD},
              hw};
    args.epilogue.thread.alpha = 1.f;
    args.epilogue.thread.beta = d.residual ? 1.f : 0.f;
    // The bias: added to the accumulators by the kernel (tools/setup's patch to example 63),
    // which reads it before the mainloop; split-K's sum kernel applies it instead.
    if constexpr (!C::kExample63) {
      // The ping-pong kernel: the epilogue's per-row broadcast adds it (a weight: read without
      // waiting for the kernel ahead, as example 63's patch does).
      args.epilogue.thread.bias_ptr = static_cast<const E *>(d.bias);
      args.epilogue.thread.dBias = {_1{}, _0{}, d.bias_stride};
    } else {
      if constexpr (!C::kPartial) {
        args.mainloop.tgc_bias = d.bias;
        args.mainloop.tgc_bias_batch_stride = d.bias_stride;
      }
      // Example 63's knobs: trigger the next kernel's launch after half the k tiles are loaded;
      // prefetch weights until the other loads are past the wait.
      args.mainloop.overlap_ratio = 0.5f; // 0 and 0.25 measured the same (perf-log, 8th session)
      args.mainloop.prefetch_ratio = -1.f;
    }
    return args;
  }
}

/// Split-K's partial GEMM as a batched GEMM of its own: slice s (k/S deep) of A and B writes the
/// float partial P_s (m×n, row pitch n) at ws + s·m·n; splitReduce applies bias, activation and
/// residual.
inline TgcCutlassGemmDesc partialDesc(const TgcCutlassGemmDesc &d, float *ws) {
  TgcCutlassGemmDesc p = d;
  p.k = d.k / d.splits, p.batch = d.splits, p.splits = 1;
  p.stride_a = p.stride_b = p.k;
  p.ldc = d.n, p.stride_c = d.m * d.n;
  p.c = ws, p.bias = p.residual = nullptr, p.activation = 0, p.bias_stride = 0;
  p.norm = 0, p.gamma = p.beta = nullptr, p.norm_out = nullptr, p.norm_out_f32 = 0;
  return p;
}

template <class C> using PartialOf = Config<typename C::Gemm::ElementA, 0, 0, true>;

template <class C> int check(const TgcCutlassGemmDesc &d, char *err, size_t len) {
  cutlass::Status s;
  if constexpr (C::kSplitK) {
    using P = PartialOf<C>;
    s = d.splits > 1 ? P::Gemm::can_implement(arguments<P>(partialDesc(d, nullptr), 1))
                     : C::Gemm::can_implement(arguments<C>(d, 1));
  } else {
    s = d.splits > 1 ? cutlass::Status::kErrorNotSupported
                     : C::Gemm::can_implement(arguments<C>(d, 1));
  }
  if (s != cutlass::Status::kSuccess)
    return fail(err, len, std::string("CUTLASS refuses ") + describe(d) + ": " +
                              cutlassGetStatusString(s));
  return 0;
}

/// After check (tgc_cutlass_gemm_create runs it): the operation, initialized for this device.
template <class C> int create(const TgcCutlassGemmDesc &d, void **handle, char *err, size_t len) {
  int dev = 0, sms = 0;
  cudaError_t ce = cudaGetDevice(&dev);
  if (ce == cudaSuccess)
    ce = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (ce != cudaSuccess)
    return fail(err, len, std::string("CUDA runtime: ") + cudaGetErrorString(ce));
  cutlass::Status s = cutlass::Status::kErrorNotSupported;
  std::unique_ptr<Op> op;
  if (d.splits > 1) {
    if constexpr (C::kSplitK) {
      using E = typename C::Gemm::ElementA;
      auto sp = std::make_unique<SplitOp<typename PartialOf<C>::Gemm, E>>();
      sp->d = d;
      if ((ce = cudaMalloc(&sp->ws, (size_t)d.splits * d.m * d.n * sizeof(float))) != cudaSuccess)
        return fail(err, len,
                    std::string("cudaMalloc(split-K partials): ") + cudaGetErrorString(ce));
      s = sp->gemm.initialize(arguments<PartialOf<C>>(partialDesc(d, sp->ws), sms), nullptr);
      op = std::move(sp);
    }
  } else {
    auto one = std::make_unique<OpT<typename C::Gemm>>();
    const auto args = arguments<C>(d, sms);
    if (const size_t bytes = C::Gemm::get_workspace_size(args);
        bytes && (ce = cudaMalloc(&one->ws, bytes)) != cudaSuccess)
      return fail(err, len, std::string("cudaMalloc(GEMM workspace): ") + cudaGetErrorString(ce));
    s = one->gemm.initialize(args, one->ws);
    op = std::move(one);
  }
  if (s != cutlass::Status::kSuccess)
    return fail(err, len, std::string("CUTLASS initialize ") + describe(d) + ": " +
                              cutlassGetStatusString(s) + " (" +
                              cudaGetErrorString(cudaGetLastError()) + ")");
  *handle = op.release();
  return 0;
}

template <class C> struct Check {
  static int call(const TgcCutlassGemmDesc &d, char *err, size_t len) { return check<C>(d, err, len); }
};
template <class C> struct Create {
  static int call(const TgcCutlassGemmDesc &d, void **h, char *err, size_t len) {
    return create<C>(d, h, err, len);
  }
};

/// Calls F<Config<element, activation, Tile>>::call(d, a...) for the descriptor's element type
/// and activation.
template <template <class> class F, class T, int Tile, class... A>
int dispatchAct(const TgcCutlassGemmDesc &d, A... a) {
  switch (d.activation) {
  case 1: return F<Config<T, 1, Tile>>::call(d, a...);
  case 2: return F<Config<T, 2, Tile>>::call(d, a...);
  case 3: return F<Config<T, 3, Tile>>::call(d, a...);
  case 4: return F<Config<T, 4, Tile>>::call(d, a...);
  default: return F<Config<T, 0, Tile>>::call(d, a...);
  }
}
template <template <class> class F, int Tile, class... A>
int dispatchType(const TgcCutlassGemmDesc &d, A... a) {
  return d.dtype == 10 ? dispatchAct<F, cutlass::half_t, Tile>(d, a...)
                       : dispatchAct<F, cutlass::bfloat16_t, Tile>(d, a...);
}

/// Tile N's check and create, each defined in CutlassTile.cu built with TGC_CUTLASS_TILE=N.
template <int Tile> int checkTile(const TgcCutlassGemmDesc &d, char *err, size_t len);
template <int Tile> int createTile(const TgcCutlassGemmDesc &d, void **h, char *err, size_t len);
#define TGC_CUTLASS_DECLARE_TILE(N)                                                              \
  template <> int checkTile<N>(const TgcCutlassGemmDesc &, char *, size_t);                      \
  template <> int createTile<N>(const TgcCutlassGemmDesc &, void **, char *, size_t);
TGC_CUTLASS_DECLARE_TILE(0)
TGC_CUTLASS_DECLARE_TILE(1)
TGC_CUTLASS_DECLARE_TILE(2)
TGC_CUTLASS_DECLARE_TILE(3)
TGC_CUTLASS_DECLARE_TILE(4)
TGC_CUTLASS_DECLARE_TILE(5)
TGC_CUTLASS_DECLARE_TILE(6)
TGC_CUTLASS_DECLARE_TILE(7)
#undef TGC_CUTLASS_DECLARE_TILE
static_assert(TGC_CUTLASS_TILES == 8, "declare each tile's entry points above");

} // namespace tgc_cutlass

#endif // TGC_RUNTIME_CUDA_CUTLASS_CUTLASSCONFIG_CUH
