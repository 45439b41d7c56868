// plan_buffers_test.cpp — buffer planning: arena reuse, no overlap of live buffers, views, weights.
#include "codegen/planning/PlanBuffers.h"

#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

namespace {

struct Parsed {
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp main;
};

std::unique_ptr<Parsed> parse(const std::string &ir) {
  auto p = std::make_unique<Parsed>();
  p->ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>();
  p->module = mlir::parseSourceString<mlir::ModuleOp>(ir, &p->ctx);
  if (p->module)
    p->main = p->module->lookupSymbol<mlir::func::FuncOp>("main");
  return p;
}

void expectNoOverlap(const tgc::BufferPlan &plan) {
  const auto &iv = plan.intervals;
  for (size_t i = 0; i < iv.size(); ++i) {
    EXPECT_EQ(iv[i].offset % tgc::kBufferAlignment, 0);
    EXPECT_LE(iv[i].offset + iv[i].bytes, plan.arenaBytes);
    for (size_t j = i + 1; j < iv.size(); ++j) {
      bool liveTogether = iv[i].begin <= iv[j].end && iv[j].begin <= iv[i].end;
      bool bytesOverlap = iv[i].offset < iv[j].offset + iv[j].bytes &&
                          iv[j].offset < iv[i].offset + iv[i].bytes;
      EXPECT_FALSE(liveTogether && bytesOverlap)
          << "buffers " << i << " [" << iv[i].begin << "," << iv[i].end << "] @" << iv[i].offset
          << " and " << j << " [" << iv[j].begin << "," << iv[j].end << "] @" << iv[j].offset;
    }
  }
}

TEST(PlanBuffers, ChainReusesArena) {
  auto p = parse(R"(
func.func @main(%x: tensor<256xf32> {tg.name = "x"}) -> tensor<256xf32> {
  %0 = tg.exp %x : tensor<256xf32>
  %1 = tg.tanh %0 : tensor<256xf32>
  %2 = tg.exp %1 : tensor<256xf32>
  %3 = tg.tanh %2 : tensor<256xf32>
  %4 = tg.exp %3 : tensor<256xf32>
  %5 = tg.add %4, %0 : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32>
  return %5 : tensor<256xf32>
}
)");
  ASSERT_TRUE(p->main);
  auto plan = tgc::planBuffers(p->main);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->intervals.size(), 6u);
  EXPECT_EQ(plan->unsharedBytes, 6 * 1024);
  EXPECT_LT(plan->arenaBytes, plan->unsharedBytes) << "no reuse happened";
  EXPECT_EQ(plan->arenaBytes, 3 * 1024); // %0 lives to the end; two more alternate
  expectNoOverlap(*plan);
  EXPECT_EQ(plan->locs[p->main.getArgument(0)].kind, tgc::BufferLoc::Input);
}

TEST(PlanBuffers, BranchyGraphNoOverlap) {
  auto p = parse(R"(
func.func @main(%x: tensor<4x100xf32>, %y: tensor<100xf32>) -> (tensor<4x100xf32>, tensor<4x1xf32>) {
  %0 = tg.add %x, %y : tensor<4x100xf32>, tensor<100xf32> -> tensor<4x100xf32>
  %1 = tg.mul %0, %0 : tensor<4x100xf32>, tensor<4x100xf32> -> tensor<4x100xf32>
  %2 = tg.reduce_sum %1 {axes = [1], keepdims = true} : tensor<4x100xf32> -> tensor<4x1xf32>
  %3 = tg.sub %0, %2 : tensor<4x100xf32>, tensor<4x1xf32> -> tensor<4x100xf32>
  %4 = tg.reshape %3 : tensor<4x100xf32> -> tensor<400xf32>
  %5 = tg.exp %4 : tensor<400xf32>
  %6 = tg.reshape %5 : tensor<400xf32> -> tensor<4x100xf32>
  %7 = tg.relu %6 : tensor<4x100xf32>
  %8 = tg.add %7, %3 : tensor<4x100xf32>, tensor<4x100xf32> -> tensor<4x100xf32>
  return %8, %2 : tensor<4x100xf32>, tensor<4x1xf32>
}
)");
  ASSERT_TRUE(p->main);
  auto plan = tgc::planBuffers(p->main);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  expectNoOverlap(*plan);
  EXPECT_LT(plan->arenaBytes, plan->unsharedBytes);
  // Reshape results are views: same storage as their input, no allocation of their own.
  mlir::Operation *ops[16];
  int n = 0;
  for (mlir::Operation &op : p->main.getBody().front())
    ops[n++] = &op;
  auto loc = [&](int i) { return plan->locs[ops[i]->getResult(0)]; };
  EXPECT_EQ(loc(4).kind, tgc::BufferLoc::Arena);
  EXPECT_EQ(loc(4).offset, loc(3).offset);
  EXPECT_EQ(loc(6).offset, loc(5).offset);
  // %3 is read through its own uses (pos 8) — its storage must outlive %5's and %7's writes.
  for (const auto &iv : plan->intervals)
    if (iv.value == ops[3]->getResult(0))
      EXPECT_EQ(iv.end, 8);
  // The output %2 lives to the end.
  for (const auto &iv : plan->intervals)
    if (iv.value == ops[2]->getResult(0))
      EXPECT_EQ(iv.end, n - 1 + 1);
}

TEST(PlanBuffers, WeightsAndInlineConstants) {
  auto p = parse(R"(
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %w = tg.constant dense<1.0> : tensor<4x3xf32>
  %s = tg.constant dense<2.0> : tensor<f32>
  %v = tg.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %unused = tg.constant dense<0.0> : tensor<8xf32>
  %0 = tg.linear %x, %w : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<2x4xf32>
  %1 = tg.mul %0, %s : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %2 = tg.fused "pointwise" (%1, %v) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<4xf32>):
    %t = tg.add %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    tg.yield %t : tensor<2x4xf32>
  }
  return %2 : tensor<2x4xf32>
}
)");
  ASSERT_TRUE(p->main);
  auto plan = tgc::planBuffers(p->main);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  auto it = p->main.getBody().front().begin();
  mlir::Value w = it->getResult(0), s = (++it)->getResult(0), v = (++it)->getResult(0),
              unused = (++it)->getResult(0);
  EXPECT_EQ(plan->locs[w].kind, tgc::BufferLoc::Weight); // read by a GEMM
  EXPECT_EQ(plan->locs[s].kind, tgc::BufferLoc::Inline); // splat read by elementwise code
  EXPECT_EQ(plan->locs[v].kind, tgc::BufferLoc::Inline); // small, read inside a pointwise kernel
  EXPECT_EQ(plan->locs.count(unused), 0u);
  EXPECT_EQ(plan->weights.size(), 1u);
  EXPECT_EQ(plan->weightBytes, 64);
  expectNoOverlap(*plan);
}

} // namespace

namespace {
// A split's results lie back to back (one stride apart) and clear of the operands of the op that
// produced the split's input, through a view, even though that op's operands are dead by then:
// the CUDA backend's QKV GEMM writes the split results directly.
TEST(PlanBuffers, SplitResultsContiguousAndClearOfProducerOperands) {
  auto p = parse(R"(
func.func @main(%x: tensor<8x16xf32> {tg.name = "x"}) -> (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>) {
  %w = tg.constant dense<1.0> : tensor<48x16xf32>
  %a = tg.exp %x : tensor<8x16xf32>
  %y = tg.linear %a, %w : tensor<8x16xf32>, tensor<48x16xf32> -> tensor<8x48xf32>
  %r = tg.reshape %y : tensor<8x48xf32> -> tensor<1x8x48xf32>
  %q, %k, %v = tg.split %r {axis = 2 : i64} : tensor<1x8x48xf32> -> tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>
  return %q, %k, %v : tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>
}
)");
  ASSERT_TRUE(p->main);
  auto plan = tgc::planBuffers(p->main);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  expectNoOverlap(*plan);
  mlir::Operation *split = nullptr, *exp = nullptr;
  p->main.walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef() == "tg.split")
      split = op;
    if (op->getName().getStringRef() == "tg.exp")
      exp = op;
  });
  ASSERT_TRUE(split && exp);
  const tgc::BufferLoc q = plan->locs[split->getResult(0)];
  const int64_t stride = plan->locs[split->getResult(1)].offset - q.offset;
  EXPECT_EQ(stride, 512); // 8·16 floats, 64-byte aligned
  EXPECT_EQ(plan->locs[split->getResult(2)].offset - q.offset, 2 * stride);
  const tgc::BufferLoc a = plan->locs[exp->getResult(0)]; // the linear's input, dead at the split
  EXPECT_TRUE(a.offset + a.bytes <= q.offset || q.offset + 3 * stride <= a.offset)
      << "split results at " << q.offset << " overlap the linear's input at " << a.offset;
}
// A rotary reading a split's result may be applied by the split's kernel (CUDA backend), which
// writes the rotary's result while it reads the split's input: the input stays live until the
// last such rotary, so no rotary result lands on it (first-fit would put it there otherwise).
TEST(PlanBuffers, SplitInputLiveUntilItsRotaries) {
  auto p = parse(R"(
func.func @main(%x: tensor<4x16xf32>, %c: tensor<4x8xf32>, %s: tensor<4x8xf32>, %c2: tensor<4x1x4xf32>, %s2: tensor<4x1x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = tg.exp %x : tensor<4x16xf32>
  %1, %2 = tg.split %0 {axis = 1 : i64} : tensor<4x16xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  %3 = tg.reshape %2 : tensor<4x8xf32> -> tensor<4x2x4xf32>
  %4 = tg.rotary %1, %c, %s : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %5 = tg.rotary %3, %c2, %s2 : tensor<4x2x4xf32>, tensor<4x1x4xf32>, tensor<4x1x4xf32> -> tensor<4x2x4xf32>
  %6 = tg.reshape %5 : tensor<4x2x4xf32> -> tensor<4x8xf32>
  return %4, %6 : tensor<4x8xf32>, tensor<4x8xf32>
}
)");
  ASSERT_TRUE(p->main);
  auto plan = tgc::planBuffers(p->main);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  expectNoOverlap(*plan);
  mlir::Block &body = p->main.getBody().front();
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : body)
    ops.push_back(&op);
  const tgc::BufferLoc in = plan->locs.lookup(ops[0]->getResult(0));
  for (int r : {3, 4}) {
    const tgc::BufferLoc out = plan->locs.lookup(ops[r]->getResult(0));
    EXPECT_TRUE(out.offset >= in.offset + in.bytes || in.offset >= out.offset + out.bytes)
        << "rotary " << r << " result @" << out.offset << " over the split input @" << in.offset;
  }
}

// A norm right after the op that writes its input, cast to f32 right after: the cast's result
// lands clear of the norm's input and of that op's operands (here the residual %r, free after
// the add otherwise), so a kernel finishing that op may write it while it reads them (the CUDA
// backend's split-K sum kernel). Negative: with no cast after the norm, the norm's result reuses
// the residual's buffer as before.
TEST(PlanBuffers, NormCastClearOfItsInputAndItsProducersOperands) {
  for (const bool cast : {true, false}) {
    SCOPED_TRACE(cast ? "norm + cast" : "norm only");
    const std::string tail = cast ? "  %4 = tg.cast %3 : tensor<16x64xf16> -> tensor<16x64xf32>\n"
                                    "  return %4 : tensor<16x64xf32>\n}\n"
                                  : "  return %3 : tensor<16x64xf16>\n}\n";
    auto p = parse(std::string(R"(
func.func @main(%x: tensor<16x64xf16>, %w: tensor<64x64xf16>) -> )") +
                   (cast ? "tensor<16x64xf32>" : "tensor<16x64xf16>") + R"( {
  %r = tg.exp %x : tensor<16x64xf16>
  %1 = tg.linear %r, %w : tensor<16x64xf16>, tensor<64x64xf16> -> tensor<16x64xf16>
  %2 = tg.add %1, %r : tensor<16x64xf16>, tensor<16x64xf16> -> tensor<16x64xf16>
  %3 = tg.layer_norm %2 {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<16x64xf16> -> tensor<16x64xf16>
)" + tail);
    ASSERT_TRUE(p->main);
    auto plan = tgc::planBuffers(p->main);
    ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
    expectNoOverlap(*plan);
    std::vector<mlir::Operation *> ops;
    for (mlir::Operation &op : p->main.getBody().front())
      ops.push_back(&op);
    auto clear = [](const tgc::BufferLoc &a, const tgc::BufferLoc &b) {
      return a.offset >= b.offset + b.bytes || b.offset >= a.offset + a.bytes;
    };
    const tgc::BufferLoc r = plan->locs.lookup(ops[0]->getResult(0));
    const tgc::BufferLoc in = plan->locs.lookup(ops[2]->getResult(0));
    const tgc::BufferLoc out = plan->locs.lookup(ops[cast ? 4 : 3]->getResult(0));
    EXPECT_EQ(clear(out, r), cast) << "result @" << out.offset << ", residual @" << r.offset;
    if (cast)
      EXPECT_TRUE(clear(out, in)) << "result @" << out.offset << ", norm input @" << in.offset;
  }
}

// On the CPU (cpuViews) a slice that is one contiguous range of its input is a view at an
// offset into the input's storage, and the input stays live until the view's last reader; a
// strided slice, or one whose rows are not contiguous, is computed; without cpuViews (CUDA)
// every slice is. A split along the first dim of extent > 1 is views too (a GRU's gates), one
// along a later dim is not.
TEST(PlanBuffers, ContiguousSlicesAreViewsOnTheCpu) {
  const std::string ir = R"(
func.func @main(%x: tensor<3x1x160xf32>) -> (tensor<1x40xf32>, tensor<1x1x80xf32>, tensor<3x1x40xf32>, tensor<1x120xf32>, tensor<3x1x100xf32>) {
  %0 = tg.exp %x : tensor<3x1x160xf32>
  %1 = tg.slice %0 {starts = [2, 0, 0], steps = [1, 1, 1]} : tensor<3x1x160xf32> -> tensor<1x1x160xf32>
  %2 = tg.reshape %1 : tensor<1x1x160xf32> -> tensor<1x160xf32>
  %3 = tg.slice %2 {starts = [0, 40], steps = [1, 1]} : tensor<1x160xf32> -> tensor<1x40xf32>
  %4 = tg.slice %0 {starts = [1, 0, 0], steps = [1, 1, 2]} : tensor<3x1x160xf32> -> tensor<1x1x80xf32>
  %5 = tg.slice %0 {starts = [0, 0, 40], steps = [1, 1, 1]} : tensor<3x1x160xf32> -> tensor<3x1x40xf32>
  %6 = tg.exp %x : tensor<3x1x160xf32>
  %7 = tg.tanh %3 : tensor<1x40xf32>
  %8:2 = tg.split %2 {axis = 1 : i64} : tensor<1x160xf32> -> tensor<1x40xf32>, tensor<1x120xf32>
  %9:2 = tg.split %0 {axis = 2 : i64} : tensor<3x1x160xf32> -> tensor<3x1x60xf32>, tensor<3x1x100xf32>
  return %7, %4, %5, %8#1, %9#1 : tensor<1x40xf32>, tensor<1x1x80xf32>, tensor<3x1x40xf32>, tensor<1x120xf32>, tensor<3x1x100xf32>
}
)";
  auto p = parse(ir);
  ASSERT_TRUE(p->main);
  auto plan = tgc::planBuffers(p->main, /*cpuViews=*/true);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  mlir::Block &body = p->main.getBody().front();
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : body)
    ops.push_back(&op);
  const tgc::BufferLoc &base = plan->locs[ops[0]->getResult(0)];
  const tgc::BufferLoc &row = plan->locs[ops[1]->getResult(0)],
                       &gate = plan->locs[ops[3]->getResult(0)];
  EXPECT_TRUE(plan->views.count(ops[1]));
  EXPECT_TRUE(plan->views.count(ops[3]));
  EXPECT_EQ(row.kind, base.kind);
  EXPECT_EQ(row.offset, base.offset + 2 * 160 * 4);
  EXPECT_EQ(row.bytes, 160 * 4);
  EXPECT_EQ(gate.offset, base.offset + (2 * 160 + 40) * 4); // a view of a view
  EXPECT_EQ(gate.bytes, 40 * 4);
  EXPECT_FALSE(plan->views.count(ops[4])) << "a strided slice is computed";
  EXPECT_FALSE(plan->views.count(ops[5])) << "rows 160 apart are not one range";
  EXPECT_TRUE(plan->views.count(ops[8]));
  EXPECT_EQ(plan->locs[ops[8]->getResult(0)].offset, base.offset + 2 * 160 * 4);
  EXPECT_EQ(plan->locs[ops[8]->getResult(1)].offset, base.offset + (2 * 160 + 40) * 4);
  EXPECT_EQ(plan->locs[ops[8]->getResult(1)].bytes, 120 * 4);
  EXPECT_FALSE(plan->views.count(ops[9])) << "a split of rows is computed";
  // %0 is read through its views until the end: %6, written before that, may not land on it.
  const tgc::BufferLoc &late = plan->locs[ops[6]->getResult(0)];
  EXPECT_TRUE(late.offset >= base.offset + base.bytes || late.offset + late.bytes <= base.offset);
  expectNoOverlap(*plan);

  auto cuda = tgc::planBuffers(p->main);
  ASSERT_TRUE(bool(cuda)) << llvm::toString(cuda.takeError());
  EXPECT_TRUE(cuda->views.empty());
}

} // namespace
