// PlanBuffers.cpp — liveness-based arena planning and weights layout for `@main`.
//
// Decisions:
// - Positions: the top-level ops of @main are numbered in order (arguments are position -1).
//   tg.fused regions are IsolatedFromAbove, so every use of a top-level value is a top-level op.
// - A value's live range is [position of its definition, position of its last reader]; graph
//   outputs (tg.name'd or not, every operand of `return`) live to the end, because the runtime
//   copies them out after the last step. Values nobody reads still get a buffer (the kernel
//   writes them) that is free again right after their defining op.
// - Reshape is a view: its result shares its input's storage (same offset, no copy), and the
//   storage's live range is extended to the last reader of any view. A view of a graph input
//   or a weight stays in that buffer.
// - On the CPU (planBuffers' cpuViews), a slice or split whose every result is one contiguous
//   range of its input (viewOffsets: a recurrent cell's per-step input, its gates) is a view
//   too, each result at an offset into the input's storage; no kernel copies it. Not on CUDA,
//   whose kernels may assume 64-byte aligned buffers for vector loads and whose QKV GEMM writes
//   a split's results itself.
// - Arena allocation is greedy first-fit over the free gaps, in definition order: before op i,
//   buffers whose last reader is < i are released; op i's results are then placed in the first
//   gap that fits. An op's results never overlap its operands (no in-place kernels), so kernels
//   may read inputs after writing outputs. Offsets and the total are 64-byte aligned.
// - When tg.rotary ops follow a tg.split (with only views and rotaries in between), the split's
//   input and results and the rotaries' cos/sin stay live until the last of them, so a backend
//   may apply them all in one kernel (the CUDA backend does: in the split's kernel, or in one
//   kernel after the GEMM that wrote the parts).
// - A 16-bit float layer/RMS norm right after the op that writes its input and followed by a
//   tg.cast of its result to f32 (a model's output): the norm's input and that op's operands
//   stay live until the cast, so the cast's result never lands on them. A backend may then
//   apply the norm and the cast in the kernel that finishes that op while it still reads those
//   operands (the CUDA backend's split-K sum kernel reads the GEMM's residual and writes the
//   norm as float, twice the bytes: in place is not possible as it is for a norm of the same
//   type).
// - The results of a tg.split are placed back to back in one allocation (result i right after
//   result i-1, each 64-byte aligned), live until the last reader of any of them, and never over
//   the operands of the op that produced the split's input. So that producer can write all of
//   them at once with a fixed stride (the CUDA backend's QKV GEMM writes q, k and v as one
//   batched GEMM and no split kernel runs).
// - Weights: every tg.constant read by a kernel (or returned) goes in the weights blob, 64-byte
//   aligned, in op order — except splat constants and constants of at most kMaxInlineElements
//   elements whose every reader is elementwise code (a standalone elementwise op, or a tg.fused
//   block argument used only by elementwise ops in the region): codegen inlines those as literals.
// - Graph outputs stay in the arena; the plan names their offset and the runtime copies them out.
//   Outputs that are an input or a weight (or views of them) are copied by the package writer's
//   COPY steps into an arena slot, which this planner allocates like any other result.
#include "codegen/planning/PlanBuffers.h"

#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace tgc {

namespace {

constexpr int64_t kMaxInlineElements = 64;

int64_t alignUp(int64_t v) { return (v + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

/// True when every reader of block argument `arg` is elementwise.
bool onlyElementwiseReaders(Value v) {
  for (Operation *user : v.getUsers())
    if (!isElementwiseOp(user))
      return false;
  return true;
}

/// True when the constant `c` may be written into kernels as literals.
bool isInlineConstant(tg::ConstantOp c) {
  auto type = c.getType().cast<RankedTensorType>();
  auto dense = c.getValue().dyn_cast<DenseElementsAttr>();
  if (!dense || !type.hasStaticShape())
    return false;
  if (!dense.isSplat() && type.getNumElements() > kMaxInlineElements)
    return false;
  if (c->use_empty())
    return false;
  for (OpOperand &use : c->getUses()) {
    Operation *user = use.getOwner();
    if (isElementwiseOp(user))
      continue;
    if (auto fused = dyn_cast<tg::FusedOp>(user)) {
      Block &body = fused.getBody().front();
      if (use.getOperandNumber() < body.getNumArguments() &&
          onlyElementwiseReaders(body.getArgument(use.getOperandNumber())))
        continue;
    }
    return false;
  }
  return true;
}

/// Greedy first-fit allocator over one growing arena.
class Arena {
public:
  int64_t allocate(int64_t bytes) {
    bytes = alignUp(std::max<int64_t>(bytes, 1));
    int64_t cursor = 0;
    for (auto &[off, len] : live_) {
      if (off - cursor >= bytes)
        break;
      cursor = std::max(cursor, off + len);
    }
    live_.emplace(cursor, bytes);
    peak_ = std::max(peak_, cursor + bytes);
    return cursor;
  }
  void release(int64_t offset) {
    auto it = live_.find(offset);
    if (it != live_.end())
      live_.erase(it);
  }
  int64_t peak() const { return peak_; }

private:
  std::multimap<int64_t, int64_t> live_; // offset -> aligned length
  int64_t peak_ = 0;
};

} // namespace

bool isElementwiseOp(Operation *op) {
  return isa<tg::NegOp, tg::AbsOp, tg::SignOp, tg::ExpOp, tg::LogOp, tg::SqrtOp, tg::RsqrtOp,
             tg::ReciprocalOp, tg::TanhOp, tg::SigmoidOp, tg::ErfOp, tg::ReluOp, tg::SiluOp,
             tg::SinOp, tg::CosOp, tg::FloorOp, tg::CeilOp, tg::RoundOp, tg::NotOp, tg::GeluOp,
             tg::MathOp, tg::IsNanOp, tg::CastOp, tg::AddOp, tg::SubOp, tg::MulOp, tg::DivOp, tg::PowOp,
             tg::MaxOp, tg::MinOp, tg::ModOp, tg::EqualOp, tg::LessOp, tg::LessEqualOp,
             tg::GreaterOp, tg::GreaterEqualOp, tg::AndOp, tg::OrOp, tg::XorOp, tg::WhereOp,
             tg::BitwiseOp, tg::BitwiseNotOp>(op);
}

int64_t tensorBytes(Type type) {
  auto t = type.dyn_cast<RankedTensorType>();
  if (!t || !t.hasStaticShape())
    return -1;
  Type e = t.getElementType();
  int64_t size;
  if (e.isInteger(1) || e.isInteger(4) || tg::isFloat8(e)) // one a byte (i4/ui4, float8)
    size = 1;
  else if (e.isIntOrFloat() && e.getIntOrFloatBitWidth() % 8 == 0)
    size = e.getIntOrFloatBitWidth() / 8;
  else
    return -1;
  int64_t n = size;
  for (int64_t d : t.getShape()) {
    if (d < 0 || (d > 0 && n > INT64_MAX / d))
      return -1;
    n *= d;
  }
  return n;
}

std::optional<std::vector<int64_t>> viewOffsets(Operation *op) {
  if (auto sp = dyn_cast_or_null<tg::SplitOp>(op)) {
    auto in = sp.getInput().getType().dyn_cast<RankedTensorType>();
    if (!in || !in.hasStaticShape())
      return std::nullopt;
    const int64_t axis = sp.getAxis() < 0 ? sp.getAxis() + in.getRank() : sp.getAxis();
    if (axis < 0 || axis >= in.getRank())
      return std::nullopt;
    int64_t inner = 1;
    for (int64_t d = 0; d < in.getRank(); ++d) {
      if (d < axis && in.getDimSize(d) != 1)
        return std::nullopt; // each result is rows of the input, not one range
      if (d > axis)
        inner *= in.getDimSize(d);
    }
    std::vector<int64_t> offsets;
    int64_t at = 0;
    for (Value r : sp.getResults()) {
      auto rt = r.getType().dyn_cast<RankedTensorType>();
      if (!rt || !rt.hasStaticShape() || rt.getRank() != in.getRank())
        return std::nullopt;
      offsets.push_back(at * inner);
      at += rt.getDimSize(axis);
    }
    if (at != in.getDimSize(axis))
      return std::nullopt;
    return offsets;
  }
  auto sl = dyn_cast_or_null<tg::SliceOp>(op);
  if (!sl)
    return std::nullopt;
  auto in = sl.getInput().getType().dyn_cast<RankedTensorType>();
  auto out = sl.getType().dyn_cast<RankedTensorType>();
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() || in.getRank() != out.getRank())
    return std::nullopt;
  auto starts = sl.getStarts().getValue(), steps = sl.getSteps().getValue();
  const int64_t r = in.getRank();
  if ((int64_t)starts.size() != r || (int64_t)steps.size() != r)
    return std::nullopt;
  int64_t last = -1; // the last dim the slice narrows
  for (int64_t d = 0; d < r; ++d)
    if (out.getDimSize(d) != in.getDimSize(d))
      last = d;
  int64_t offset = 0, stride = 1;
  for (int64_t d = r - 1; d >= 0; --d) {
    const int64_t s = starts[d].cast<IntegerAttr>().getInt(), n = out.getDimSize(d);
    const int64_t step = steps[d].cast<IntegerAttr>().getInt();
    if (n == 0)
      return std::nullopt;
    if (s < 0 || s + n > in.getDimSize(d) || (n > 1 && step != 1))
      return std::nullopt;
    if (d < last && n != 1)
      return std::nullopt;
    offset += s * stride;
    stride *= in.getDimSize(d);
  }
  return std::vector<int64_t>{offset};
}

llvm::Expected<BufferPlan> planBuffers(func::FuncOp fn, bool cpuViews) {
  BufferPlan plan;
  Block &body = fn.getBody().front();
  auto fail = [&](Value v, const llvm::Twine &msg) -> llvm::Error {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << msg << " (type " << v.getType() << " at " << v.getLoc() << ")";
    return llvm::createStringError(llvm::inconvertibleErrorCode(), os.str());
  };

  // Positions and the storage root of every value (reshape views point at their input's root).
  llvm::DenseMap<Operation *, int64_t> position;
  llvm::DenseMap<Value, Value> root;
  int64_t n = 0;
  for (Operation &op : body) {
    position[&op] = n++;
    if (auto r = dyn_cast<tg::ReshapeOp>(op)) {
      Value in = r.getInput();
      root[r.getResult()] = root.count(in) ? root[in] : in;
    }
    if (cpuViews && viewOffsets(&op)) {
      Value in = op.getOperand(0);
      for (Value res : op.getResults())
        root[res] = root.count(in) ? root[in] : in;
      plan.views.insert(&op);
    }
  }
  auto rootOf = [&](Value v) { auto it = root.find(v); return it == root.end() ? v : it->second; };

  // Last reader of each root, counting readers of views.
  llvm::DenseMap<Value, int64_t> lastUse;
  auto touch = [&](Value v, int64_t pos) {
    Value r = rootOf(v);
    auto [it, inserted] = lastUse.try_emplace(r, pos);
    if (!inserted)
      it->second = std::max(it->second, pos);
  };
  for (Operation &op : body) {
    int64_t pos = position[&op];
    if (isa<tg::ReshapeOp>(op) || plan.views.count(&op))
      continue; // a view reads nothing by itself
    bool isReturn = op.hasTrait<OpTrait::IsTerminator>();
    for (Value v : op.getOperands())
      touch(v, isReturn ? n : pos);
  }

  // The rotaries right after a split (among views) may all run in one kernel (the CUDA backend's
  // splitRotaries: the split's own, or one kernel after a GEMM that wrote the split's results),
  // which writes every rotary's result while it reads the split's input or results and every
  // rotary's cos and sin: those stay live until the last of those rotaries, so no rotary result
  // lands on them.
  for (Operation &op : body) {
    auto sp = dyn_cast<tg::SplitOp>(op);
    if (!sp)
      continue;
    // The rotaries among the views and rotaries right after the split (what the emitter fuses).
    std::vector<Operation *> rotaries;
    for (Operation *o = sp->getNextNode(); o && isa<tg::ReshapeOp, tg::RotaryOp>(o);
         o = o->getNextNode())
      if (isa<tg::RotaryOp>(o))
        rotaries.push_back(o);
    if (rotaries.empty())
      continue;
    const int64_t last = position[rotaries.back()];
    touch(sp.getInput(), last);
    for (Value r : sp->getResults())
      touch(r, last);
    for (Operation *ro : rotaries) // their cos and sin: read until the last rotary is written
      for (Value v : ro->getOperands().drop_front())
        touch(v, last);
  }

  // A norm after the op that writes its input, cast right after (see the file comment): the
  // norm's input and that op's operands are read until the cast is written.
  for (Operation &op : body) {
    if (!isa<tg::LayerNormOp, tg::RmsNormOp>(op))
      continue;
    Operation *producer = op.getOperand(0).getDefiningOp(), *cast = op.getNextNode();
    if (!producer || producer->getNextNode() != &op || !isa_and_nonnull<tg::CastOp>(cast) ||
        cast->getOperand(0) != op.getResult(0))
      continue;
    const Type from = getElementTypeOrSelf(op.getResult(0)),
               to = getElementTypeOrSelf(cast->getResult(0));
    if (!(from.isF16() || from.isBF16()) || !to.isF32())
      continue;
    touch(op.getOperand(0), position[cast]);
    for (Value v : producer->getOperands())
      touch(v, position[cast]);
  }

  // Graph inputs, and the states of a decode package (arguments with `tg.state`, after the
  // inputs: passes/decode).
  for (BlockArgument arg : body.getArguments()) {
    int64_t bytes = tensorBytes(arg.getType());
    if (bytes < 0)
      return fail(arg, "cannot size input " + llvm::Twine(arg.getArgNumber()));
    if (auto k = fn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "tg.state"))
      plan.locs[arg] = {BufferLoc::State, k.getInt(), 0, bytes};
    else
      plan.locs[arg] = {BufferLoc::Input, arg.getArgNumber(), 0, bytes};
  }

  // Weights, then arena, in op order.
  Arena arena;
  std::vector<std::pair<int64_t, int64_t>> releases; // (last use, offset)
  for (Operation &op : body) {
    int64_t pos = position[&op];
    if (auto c = dyn_cast<tg::ConstantOp>(op)) {
      int64_t bytes = tensorBytes(c.getType());
      if (bytes < 0)
        return fail(c.getResult(), "cannot size constant");
      if (!lastUse.count(c.getResult()))
        continue; // unused (and not viewed): no storage
      if (isInlineConstant(c) && rootOf(c.getResult()) == c.getResult()) {
        plan.locs[c.getResult()] = {BufferLoc::Inline, 0, 0, bytes};
        continue;
      }
      plan.locs[c.getResult()] = {BufferLoc::Weight, 0, plan.weightBytes, bytes};
      plan.weights.push_back(&op);
      plan.weightBytes += alignUp(bytes);
      continue;
    }
    if (auto r = dyn_cast<tg::ReshapeOp>(op)) {
      auto it = plan.locs.find(r.getInput());
      if (it == plan.locs.end())
        return fail(r.getInput(), "reshape of a value without storage");
      BufferLoc loc = it->second;
      if (loc.kind == BufferLoc::Inline) {
        // Only reachable when an inline constant is reshaped: give it real storage instead.
        return fail(r.getInput(), "reshape of an inlined constant");
      }
      loc.bytes = tensorBytes(r.getType());
      plan.locs[r.getResult()] = loc;
      continue;
    }
    if (plan.views.count(&op)) {
      auto it = plan.locs.find(op.getOperand(0));
      if (it == plan.locs.end())
        continue; // a view nobody reads of a constant nothing else reads: no storage at all
      if (it->second.kind == BufferLoc::Inline)
        return fail(op.getOperand(0), "slice or split of an inlined constant");
      const int64_t inBytes = tensorBytes(op.getOperand(0).getType());
      const int64_t elems = op.getOperand(0).getType().cast<RankedTensorType>().getNumElements();
      const std::vector<int64_t> offsets = *viewOffsets(&op);
      for (unsigned r = 0; r < op.getNumResults(); ++r) {
        BufferLoc loc = it->second;
        loc.offset += offsets[r] * (elems > 0 ? inBytes / elems : 0);
        loc.bytes = tensorBytes(op.getResult(r).getType());
        plan.locs[op.getResult(r)] = loc;
      }
      continue;
    }
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    // A decode package's cache write (passes/decode) in place: a scatter into a state that
    // nothing else reads, returned as that state, writes the state itself (each output element
    // of the scatter reads only its own data element, so the aliasing is safe).
    if (auto sc = dyn_cast<tg::ScatterElementsOp>(op)) {
      auto arg = sc.getData().dyn_cast<BlockArgument>();
      auto k = arg ? fn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "tg.state")
                   : IntegerAttr();
      Operation *ret = body.getTerminator();
      bool returnedAsState = false;
      for (OpOperand &use : sc.getResult().getUses())
        if (use.getOwner() == ret)
          if (auto r = fn.getResultAttrOfType<IntegerAttr>(use.getOperandNumber(), "tg.state"))
            returnedAsState |= k && r.getInt() == k.getInt();
      if (k && arg.hasOneUse() && returnedAsState) {
        plan.locs[sc.getResult()] = {BufferLoc::State, k.getInt(), 0,
                                     tensorBytes(sc.getType())};
        continue;
      }
    }
    // Release buffers whose last reader ran before this op. A split's results also keep clear
    // of the operands of the op that produced its input (through views), so that producer may
    // write the split's results itself (see the header).
    int64_t releaseBefore = pos;
    if (auto sp = dyn_cast<tg::SplitOp>(op))
      if (Operation *producer = rootOf(sp.getInput()).getDefiningOp())
        releaseBefore = std::min(releaseBefore, position.lookup(producer));
    std::sort(releases.begin(), releases.end());
    size_t k = 0;
    for (; k < releases.size() && releases[k].first < releaseBefore; ++k)
      arena.release(releases[k].second);
    releases.erase(releases.begin(), releases.begin() + k);
    if (isa<tg::SplitOp>(op) && op.getNumResults() > 1) {
      int64_t total = 0, end = pos;
      for (Value res : op.getResults()) {
        int64_t bytes = tensorBytes(res.getType());
        if (bytes < 0)
          return fail(res, "cannot size result of 'tg.split'");
        total += alignUp(std::max<int64_t>(bytes, 1));
        end = std::max(end, lastUse.count(res) ? lastUse[res] : pos);
      }
      int64_t base = arena.allocate(total), off = base;
      for (Value res : op.getResults()) {
        int64_t bytes = tensorBytes(res.getType());
        plan.locs[res] = {BufferLoc::Arena, 0, off, bytes};
        plan.intervals.push_back({res, pos, end, off, bytes});
        off += alignUp(std::max<int64_t>(bytes, 1));
      }
      plan.unsharedBytes += total;
      releases.push_back({end, base});
      continue;
    }
    for (Value res : op.getResults()) {
      int64_t bytes = tensorBytes(res.getType());
      if (bytes < 0)
        return fail(res, "cannot size result of '" + op.getName().getStringRef() + "'");
      int64_t off = arena.allocate(bytes);
      int64_t end = lastUse.count(res) ? lastUse[res] : pos;
      plan.locs[res] = {BufferLoc::Arena, 0, off, bytes};
      plan.intervals.push_back({res, pos, end, off, bytes});
      plan.unsharedBytes += alignUp(std::max<int64_t>(bytes, 1));
      releases.push_back({end, off});
    }
  }
  plan.arenaBytes = arena.peak();
  return plan;
}

} // namespace tgc
