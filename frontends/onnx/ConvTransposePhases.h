// ConvTransposePhases.h — ConvTranspose by the stride-phase (sub-pixel) decomposition.
#ifndef TGC_FRONTENDS_ONNX_CONVTRANSPOSEPHASES_H
#define TGC_FRONTENDS_ONNX_CONVTRANSPOSEPHASES_H

#include "frontends/onnx/ImportContext.h"

namespace tgc::onnx_import {

/// x [N, C, n...] transposed-convolved by the constant w [C, M/group, k...] (+ bias [M]) to
/// spatial dims `out`, where `begin` is the begin padding of the full result (negative: zeros
/// added): one tg.conv of the undilated input computing all stride phases, interleaved by
/// reshape/transpose and cut to `out` by a slice. A null Value where the decomposition is not
/// taken (see ConvTransposePhases.cpp); the caller then builds the zero-insertion form.
llvm::Expected<mlir::Value> stridePhaseConv(ImportContext &c, const NodeView &n, mlir::Value x,
                                            mlir::Value w, mlir::Value bias,
                                            const Shape &strides, const Shape &dil,
                                            const Shape &begin, int64_t group, const Shape &out);

} // namespace tgc::onnx_import

#endif
