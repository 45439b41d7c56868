// ImportDeviceLoop.cpp — control flow decided at run time that runs on the device: an ONNX Loop
// that cannot be unrolled, and an If whose branches are too large to run both.
//
// Loop: when the trip count is known only at run time (or the loop runs more iterations than an
// unroll may take), the body is imported once into a private function of the module,
//   @loop_body_N(i: tensor<i64>, cond: tensor<i1>, carried..., captures...) -> (cond, carried...)
// and the node becomes `tg.loop @loop_body_N(M?, cond?, initial values..., captures...)`.
// If: each branch becomes such a function (its outputs the carried values, its carried inputs
// unused) run by a tg.loop of trip count 1 — the then-branch's under the condition, the
// else-branch's under its negation, starting from the then-loop's results — so only the chosen
// branch runs.
// A body reads names of the enclosing scopes; after its import every such value becomes a
// function argument (a capture) — except constants, which are copied in, so the body's own
// compile folds and fuses with them. The function then goes through the whole pipeline like
// @main, and the backends compile it into a package of its own that a LOOP step runs
// (docs/decisions.md, "A Loop that cannot be unrolled runs on the device").
//
// Scan outputs of such a loop are refused: their length would be the run's iteration count.
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace tgc::onnx_import {

namespace {

/// Bodies inside bodies, at most (the runtime's kMaxLoopDepth, runtime/LoopPlan.h: a package
/// it would refuse is refused here, at compile time).
constexpr int kMaxDeviceNesting = 8;
thread_local int deviceNesting = 0;

/// While a body is imported: one level deeper.
struct BodyScope {
  BodyScope() { ++deviceNesting; }
  ~BodyScope() { --deviceNesting; }
};

/// A new private function `loop_body_N` at the end of the module holding the builder's block,
/// taking (i64 [], i1 [], `carried`...), with its entry block.
llvm::Expected<func::FuncOp> newBody(ImportContext &c, const NodeView &n,
                                     const std::vector<Type> &carried) {
  if (deviceNesting >= kMaxDeviceNesting)
    return c.error(n, "Loops and Ifs that run on the device nest more than " +
                          std::to_string(kMaxDeviceNesting) + " deep");
  auto module = c.b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  if (!module)
    return c.error(n, "internal error: no module to hold the body");
  int count = 0;
  for (auto f : module.getOps<func::FuncOp>())
    count += llvm::StringRef(f.getName()).startswith("loop_body_");
  std::vector<Type> argTypes{c.type({}, c.i64()), c.type({}, c.i1())};
  argTypes.insert(argTypes.end(), carried.begin(), carried.end());
  OpBuilder::InsertionGuard guard(c.b);
  c.b.setInsertionPointToEnd(module.getBody());
  auto fn = c.b.create<func::FuncOp>(n.loc, "loop_body_" + std::to_string(count),
                                     c.b.getFunctionType(argTypes, {}));
  fn.setPrivate();
  fn.addEntryBlock();
  return fn;
}

/// Values of the enclosing scopes `fn` reads: constants are copied in, the rest become
/// arguments (captures, returned in order of first use). Sets the function's type.
std::vector<Value> captureOuterValues(ImportContext &c, func::FuncOp fn) {
  std::vector<Value> captures;
  llvm::DenseMap<Value, Value> inner;
  Block &entry = fn.getBody().front();
  fn.walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      Region *home = v.getParentRegion();
      if (home == &fn.getBody() || fn->isProperAncestor(home->getParentOp()))
        continue;
      auto it = inner.find(v);
      if (it == inner.end()) {
        Value local;
        if (auto k = v.getDefiningOp<tg::ConstantOp>()) {
          OpBuilder ib = OpBuilder::atBlockBegin(&entry);
          local = ib.clone(*k)->getResult(0);
        } else {
          local = entry.addArgument(v.getType(), v.getLoc());
          captures.push_back(v);
        }
        it = inner.try_emplace(v, local).first;
      }
      use.set(it->second);
    }
  });
  fn.setType(
      FunctionType::get(c.ctx, entry.getArgumentTypes(), entry.getTerminator()->getOperandTypes()));
  return captures;
}

/// tg.loop over `fn`: operands [trip] [cond] initial values, captures.
std::vector<Value> emitLoop(ImportContext &c, const NodeView &n, func::FuncOp fn, Value trip,
                            Value cond, const std::vector<Value> &initial,
                            const std::vector<Value> &captures) {
  std::vector<Value> operands;
  if (trip)
    operands.push_back(trip);
  if (cond)
    operands.push_back(cond);
  operands.insert(operands.end(), initial.begin(), initial.end());
  operands.insert(operands.end(), captures.begin(), captures.end());
  std::vector<Type> resultTypes;
  for (Value v : initial)
    resultTypes.push_back(v.getType());
  return c.emitAll<tg::LoopOp>(n.loc, resultTypes, operands,
                               SymbolRefAttr::get(c.ctx, fn.getName()), c.b.getBoolAttr(!!trip),
                               c.b.getBoolAttr(!!cond),
                               c.b.getI64IntegerAttr((int64_t)initial.size()));
}

bool isOneBool(ImportContext &c, Value v) {
  return numElements(c.shapeOf(v)).value_or(0) == 1 && c.elemOf(v).isInteger(1);
}

} // namespace

llvm::Expected<std::vector<Value>> importDeviceLoop(ImportContext &c, const NodeView &n,
                                                    const onnx::GraphProto &body, Value trip,
                                                    Value cond, const std::vector<Value> &initial) {
  const size_t carried = initial.size();
  const size_t scans = (size_t)body.output_size() - 1 - carried;
  for (size_t k = 0; k < scans; ++k)
    if (n.used(carried + k))
      return c.error(n, "has scan outputs and runs a number of iterations known only at run "
                        "time: the scan outputs' length would be decided at run time" +
                            (trip ? c.bindHint(trip) : std::string()));
  if (trip && (numElements(c.shapeOf(trip)).value_or(0) != 1 || !c.elemOf(trip).isInteger(64)))
    return c.error(n, "the trip count M must be one int64");
  if (cond && !isOneBool(c, cond))
    return c.error(n, "the initial condition must be one bool");

  std::vector<Type> carriedTypes;
  for (Value v : initial)
    carriedTypes.push_back(v.getType());
  TGC_ASSIGN(fn, newBody(c, n, carriedTypes));
  {
    OpBuilder::InsertionGuard guard(c.b);
    Block *entry = &fn.getBody().front();
    c.b.setInsertionPointToStart(entry);
    std::vector<Value> args(entry->getArguments().begin(), entry->getArguments().end());
    auto fail = [&](llvm::Error e) -> llvm::Error {
      fn.erase();
      return e;
    };
    BodyScope scope;
    auto imported = c.importSubgraph(body, args);
    if (!imported)
      return fail(imported.takeError());
    std::vector<Value> &outs = *imported;
    if (outs.size() != 1 + carried + scans)
      return fail(c.error(n, "the body gives " + std::to_string(outs.size()) + " outputs, not " +
                                 std::to_string(1 + carried + scans)));
    if (!isOneBool(c, outs[0]))
      return fail(c.error(n, "the body's condition must be one bool, got " +
                                 shapeToString(c.shapeOf(outs[0]))));
    for (size_t i = 0; i < carried; ++i)
      if (outs[1 + i].getType() != initial[i].getType())
        return fail(c.error(n, "loop-carried value " + std::to_string(i) +
                                   " changes shape or type between iterations (" +
                                   shapeToString(c.shapeOf(initial[i])) + " then " +
                                   shapeToString(c.shapeOf(outs[1 + i])) + ")"));
    std::vector<Value> results{c.reshape(n.loc, outs[0], {})};
    results.insert(results.end(), outs.begin() + 1, outs.begin() + 1 + carried);
    c.b.create<func::ReturnOp>(n.loc, results);
  }
  const std::vector<Value> captures = captureOuterValues(c, fn);
  std::vector<Value> result = emitLoop(c, n, fn, trip, cond, initial, captures);
  for (size_t k = 0; k < scans; ++k) // unused scan outputs (refused above when used)
    result.push_back(c.splat(n.loc, 0.0, c.i64(), {0}));
  return result;
}

/// One If branch as a body function: (i, cond, outputs' types...) -> (cond, branch outputs),
/// the carried inputs unused; `types` the outputs' types (empty: take the branch's).
static llvm::Expected<std::pair<func::FuncOp, std::vector<Value>>>
importBranchBody(ImportContext &c, const NodeView &n, const onnx::GraphProto &branch,
                 const char *name, std::vector<Type> &types) {
  TGC_ASSIGN(fn, newBody(c, n, {}));
  OpBuilder::InsertionGuard guard(c.b);
  Block *entry = &fn.getBody().front();
  c.b.setInsertionPointToStart(entry);
  auto fail = [&](llvm::Error e) -> llvm::Error {
    fn.erase();
    return e;
  };
  BodyScope scope;
  auto outs = c.importSubgraph(branch, {});
  if (!outs)
    return fail(outs.takeError());
  if (outs->size() != (size_t)n.proto.output_size())
    return fail(c.error(n, std::string(name) + " has " + std::to_string(outs->size()) +
                               " outputs; the node has " + std::to_string(n.proto.output_size())));
  for (size_t i = 0; i < outs->size(); ++i) {
    if (types.size() <= i)
      types.push_back((*outs)[i].getType());
    else if (types[i] != (*outs)[i].getType())
      return fail(c.error(n, "output " + std::to_string(i) + " differs between the branches (" +
                                 shapeToString(c.shapeOf((*outs)[i])) + " and " +
                                 shapeToString(types[i].cast<ShapedType>().getShape().vec()) +
                                 ", or the element type): with a condition known only at run "
                                 "time both must agree"));
    entry->addArgument(types[i], n.loc); // the carried input, unused
  }
  std::vector<Value> results{entry->getArgument(1)};
  results.insert(results.end(), outs->begin(), outs->end());
  c.b.create<func::ReturnOp>(n.loc, results);
  std::vector<Value> captures = captureOuterValues(c, fn);
  return std::make_pair(fn, captures);
}

llvm::Expected<std::vector<Value>> importDeviceIf(ImportContext &c, const NodeView &n,
                                                  const onnx::GraphProto &thenG,
                                                  const onnx::GraphProto &elseG, Value cond) {
  if (!isOneBool(c, cond))
    return c.error(n, "the condition must be one bool, got " + shapeToString(c.shapeOf(cond)));
  std::vector<Type> types;
  TGC_ASSIGN(thenBody, importBranchBody(c, n, thenG, "then_branch", types));
  TGC_ASSIGN(elseBody, importBranchBody(c, n, elseG, "else_branch", types));
  // then: one iteration under cond, from zeros (left as they are when it does not run); else:
  // one iteration under !cond, from the then-loop's results.
  Value one = c.splat(n.loc, 1.0, c.i64());
  Value pick = c.reshape(n.loc, cond, {});
  std::vector<Value> zeros;
  for (Type t : types) {
    auto st = t.cast<ShapedType>();
    zeros.push_back(c.splat(n.loc, 0.0, st.getElementType(), st.getShape().vec()));
  }
  std::vector<Value> afterThen = emitLoop(c, n, thenBody.first, one, pick, zeros, thenBody.second);
  Value notPick = c.unary<tg::NotOp>(n.loc, pick);
  return emitLoop(c, n, elseBody.first, one, notPick, afterThen, elseBody.second);
}

} // namespace tgc::onnx_import
