// LoopOp.cpp — the verifier of tg.loop (a Loop run on the device; TgOps.td describes it).
//
// The body is a private function in the same module, found by symbol; its signature must be
// (iteration i64 [], condition i1 [], carried..., captures...) -> (condition i1 [], carried...)
// with the carried types equal to the op's results, so that each iteration's outputs can be fed
// back as the next one's inputs, and the backends and the interpreter may rely on it.
#include "compiler/dialect/TgDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/FunctionInterfaces.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace tgc::tg;

namespace {

/// A one-element tensor of `elem` (any rank: ONNX scalars come as [] or [1]).
bool isScalarOf(Type t, Type elem) {
  auto r = t.dyn_cast<RankedTensorType>();
  return r && r.hasStaticShape() && r.getNumElements() == 1 && r.getElementType() == elem;
}

} // namespace

LogicalResult LoopOp::verify() {
  Builder b(getContext());
  const int64_t carried = getNumCarried();
  const int64_t lead = (getHasTripCount() ? 1 : 0) + (getHasCond() ? 1 : 0);
  if (carried < 0 || (int64_t)getOperands().size() < lead + carried)
    return emitOpError("needs the trip count and condition it declares, then num_carried "
                       "initial values");
  if ((int64_t)getResults().size() != carried)
    return emitOpError("has one result per loop-carried value");
  size_t k = 0;
  if (getHasTripCount() && !isScalarOf(getOperands()[k++].getType(), b.getI64Type()))
    return emitOpError("trip count must be one i64");
  if (getHasCond() && !isScalarOf(getOperands()[k++].getType(), b.getI1Type()))
    return emitOpError("condition must be one i1");
  for (int64_t i = 0; i < carried; ++i)
    if (getOperands()[lead + i].getType() != getResults()[i].getType())
      return emitOpError("loop-carried value ") << i << " and its result differ in type";
  Operation *fn = SymbolTable::lookupNearestSymbolFrom(*this, getBodyAttr());
  auto iface = dyn_cast_or_null<FunctionOpInterface>(fn);
  if (!iface)
    return emitOpError("body '") << getBody() << "' is not a function of this module";
  if (iface.isExternal())
    return emitOpError("body '") << getBody() << "' has no body";
  ArrayRef<Type> args = iface.getArgumentTypes(), res = iface.getResultTypes();
  const size_t captures = getOperands().size() - lead - carried;
  if (args.size() != 2 + carried + captures || res.size() != 1 + (size_t)carried)
    return emitOpError("body must take (i, cond, carried, captures) and return (cond, carried)");
  auto scalar = [&](Type elem) { return RankedTensorType::get({}, elem); };
  if (args[0] != scalar(b.getI64Type()) || args[1] != scalar(b.getI1Type()) ||
      res[0] != scalar(b.getI1Type()))
    return emitOpError("body's iteration number must be tensor<i64> and its conditions "
                       "tensor<i1>");
  for (int64_t i = 0; i < carried; ++i)
    if (args[2 + i] != getResults()[i].getType() || res[1 + i] != getResults()[i].getType())
      return emitOpError("body's loop-carried value ") << i << " changes type";
  for (size_t j = 0; j < captures; ++j)
    if (args[2 + carried + j] != getOperands()[lead + carried + j].getType())
      return emitOpError("body's capture ") << j << " differs in type from the operand";
  return success();
}
