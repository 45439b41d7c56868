// PlanUtil.h — constants, checksums and the text dump of a launch plan (no MLIR dependency).
//
// Shared by the package writers (codegen/) and the runtime, so both sides agree on the magic,
// the format version and the checksum function (XXH3 64).
#ifndef TGC_RUNTIME_SCHEMA_PLANUTIL_H
#define TGC_RUNTIME_SCHEMA_PLANUTIL_H

#include "runtime/schema/plan.pb.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tgc::plan {

/// "TGCP" read as a little-endian uint32.
constexpr uint32_t kPlanMagic = 0x50434754u;
/// Bumped whenever the meaning of a field changes (2: the plan's own checksum is required;
/// 3: every checksum is XXH3 64, in new fields).
constexpr uint32_t kPlanFormatVersion = 3;
/// Format version of a bucketed package's top-level plan (Plan.buckets set; docs/runtime.md,
/// "Bucketed packages"). Single-shape packages keep kPlanFormatVersion.
constexpr uint32_t kPlanFormatVersionBucketed = 4;
/// Format version of a decode package's top-level plan (`tgc compile --decode`): a bucketed plan
/// (its buckets are the prefill plans) with Plan.states, decode_step and decode set
/// (docs/runtime.md, "Decode packages").
constexpr uint32_t kPlanFormatVersionDecode = 5;
/// Alignment of every arena and weight offset.
constexpr int64_t kAlignment = 64;
/// Largest plan.pb the runtime reads.
constexpr int64_t kMaxPlanBytes = 256ll << 20;

/// XXH3 64 (seed 0; xxHash, header-only: see PlanUtil.cpp) of `n` bytes: the package checksums
/// and tgc's cache keys.
uint64_t xxh3(const void *data, size_t n);
/// XXH3 64 of a file's bytes, read in 64 KiB pieces; false when it cannot be read.
bool xxh3File(const std::string &path, uint64_t &out);

/// Serializes `p` with plan_xxh3 set to the checksum of its contents.
bool serializePlan(const Plan &p, std::string &out);
/// True when `p`'s plan_xxh3 matches its contents (as re-serialized).
bool planChecksumMatches(const Plan &p);

/// "INPUT[0]+0:64", "ARENA+128:256", ...
std::string formatArg(const BufferArg &a);
/// Human-readable dump of the whole plan (header, interface, steps) for `tgc inspect`.
std::string formatPlan(const Plan &p);
/// "[1, 32]"
std::string formatShape(const std::vector<int64_t> &shape);

/// Why the KERNEL step `norm` (its Step.norm set) cannot be applied by the GEMM step `gemm` right
/// before it, or "" when it can (plan.proto Step.norm): the compiler marks only such pairs, the
/// CUDA runtime refuses a plan that marks any other.
std::string gemmNormProblem(const Step &gemm, const Step &norm);

/// Whether `tgc bench --omit` words leave step `s` out of a diagnostic replay: "gemm" every GEMM
/// step; "gemm:<text>" the GEMM steps whose label contains <text> (e.g. gemm:attn/c_proj, GPT-2's
/// attention-output GEMMs); any other word the kernel steps whose symbol contains it.
bool stepOmitted(const Step &s, const std::vector<std::string> &words);

/// The dynamic shared memory the CUDA runtime launches KERNEL step `s` with (`blocks` in its
/// grid): its own shared_bytes, or for a step marked one_block_per_sm whose grid fits in `sms`
/// multiprocessors of `perSm` bytes each (every block also takes `reserved`), the least that
/// leaves no room for a second block, when one block may have that much (`perBlockMax`).
uint32_t launchSharedBytes(const Step &s, int64_t blocks, int64_t sms, int64_t perSm,
                           int64_t reserved, int64_t perBlockMax);

} // namespace tgc::plan

#endif // TGC_RUNTIME_SCHEMA_PLANUTIL_H
