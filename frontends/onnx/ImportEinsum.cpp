// ImportEinsum.cpp — ONNX Einsum (opset 12+) by decomposition into ops tg already has, so both
// backends run it without a new op.
//
// The equation is parsed into one label list per operand (letters; `...` becomes one label per
// broadcast dim, right-aligned across operands) and an output list (given after `->`, or in
// implicit form the ellipsis dims then the letters used once, in ASCII order). Then:
//   1. per operand: size-1 ellipsis dims are broadcast (Expand); a letter repeated in one operand
//      takes the diagonal (Transpose the two dims last, Reshape to n*n, Gather every (n+1)-th:
//      exact, no mask multiply that would turn an inf off the diagonal into NaN); letters no other
//      operand and not the output use are summed (ReduceSum);
//   2. left to right, the running result and the next operand are contracted with Transpose +
//      Reshape + MatMul: [batch, free, contracted] x [batch, contracted, free], where batch
//      letters are in both and still needed (output or a later operand), contracted in both and
//      no longer needed;
//   3. a final Transpose puts the dims in the output's order.
// A malformed equation, a letter whose sizes differ, or integer operands are refused with the
// node and the equation named.
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;
using Labels = std::vector<int>; ///< a letter's ASCII code, or kEllipsis + j for broadcast dim j

constexpr int kEllipsis = 256;

/// One side of a term: its letters, and where its `...` sits (npos when it has none).
struct Term {
  std::string letters;
  size_t ellipsisAt = std::string::npos;
};

/// Parses "ab...c" into a Term; an error string when malformed.
std::optional<std::string> parseTerm(const std::string &s, Term &t) {
  for (size_t i = 0; i < s.size();) {
    char ch = s[i];
    if (ch == '.') {
      if (s.compare(i, 3, "...") != 0)
        return std::string("a '.' that is not part of '...'");
      if (t.ellipsisAt != std::string::npos)
        return std::string("two '...' in one term");
      t.ellipsisAt = t.letters.size();
      i += 3;
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      t.letters += ch;
      ++i;
    } else {
      return std::string("character '") + ch + "' is not a letter, ',', '->' or '...'";
    }
  }
  return std::nullopt;
}

/// The labels of a term with e ellipsis dims, right-aligned in E broadcast labels.
Labels labelsOf(const Term &t, int64_t e, int64_t E) {
  Labels l;
  for (size_t i = 0; i <= t.letters.size(); ++i) {
    if (i == t.ellipsisAt)
      for (int64_t j = E - e; j < E; ++j)
        l.push_back(kEllipsis + (int)j);
    if (i < t.letters.size())
      l.push_back((unsigned char)t.letters[i]);
  }
  return l;
}

bool has(const Labels &l, int x) { return std::find(l.begin(), l.end(), x) != l.end(); }

std::string labelName(int l) {
  return l >= kEllipsis ? "... dim " + std::to_string(l - kEllipsis)
                        : "letter '" + std::string(1, (char)l) + "'";
}

/// Sums the dims of `v` whose labels fail `keep` (ReduceSum, dims dropped).
Value sumOut(ImportContext &c, Location loc, Value v, Labels &labels,
             const std::function<bool(int)> &keep) {
  std::vector<int64_t> axes;
  Labels kept;
  Shape s = c.shapeOf(v), out;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (keep(labels[i])) {
      kept.push_back(labels[i]);
      out.push_back(s[i]);
    } else {
      axes.push_back((int64_t)i);
    }
  }
  if (axes.empty())
    return v;
  labels = kept;
  return c.emit<tg::ReduceSumOp>(loc, c.type(out, c.elemOf(v)), v, c.b.getI64ArrayAttr(axes),
                                 false);
}

/// Transposes `v` (labelled `labels`) to the label order `want`.
Value permute(ImportContext &c, Location loc, Value v, const Labels &labels, const Labels &want) {
  std::vector<int64_t> perm;
  for (int l : want)
    perm.push_back(std::find(labels.begin(), labels.end(), l) - labels.begin());
  return c.transpose(loc, v, perm);
}

/// Takes the diagonal of every letter repeated in `v`'s labels (each kept once, last).
Value diagonals(ImportContext &c, Location loc, Value v, Labels &labels) {
  for (;;) {
    size_t p1 = 0, p2 = 0;
    for (size_t i = 0; i < labels.size() && !p2; ++i)
      for (size_t j = i + 1; j < labels.size() && !p2; ++j)
        if (labels[i] == labels[j])
          p1 = i, p2 = j;
    if (!p2)
      return v;
    const int64_t n = c.shapeOf(v)[p1];
    Labels others;
    for (size_t i = 0; i < labels.size(); ++i)
      if (i != p1 && i != p2)
        others.push_back(labels[i]);
    std::vector<int64_t> perm;
    for (size_t i = 0; i < labels.size(); ++i)
      if (i != p1 && i != p2)
        perm.push_back((int64_t)i);
    perm.push_back((int64_t)p1);
    perm.push_back((int64_t)p2);
    v = c.transpose(loc, v, perm);
    Shape s = c.shapeOf(v);
    s.resize(s.size() - 2);
    Shape sq = s;
    sq.push_back(n * n);
    std::vector<int64_t> at(n);
    for (int64_t k = 0; k < n; ++k)
      at[k] = k * (n + 1);
    Shape out = s;
    out.push_back(n);
    v = c.emit<tg::GatherOp>(loc, c.type(out, c.elemOf(v)), c.reshape(loc, v, sq),
                             c.constI64(loc, at), (uint64_t)s.size());
    others.push_back(labels[p1]);
    labels = others;
  }
}

/// acc x v over their shared labels: batch (shared, still needed) first, then acc's free
/// labels, then v's; the contracted ones (shared, no longer needed) go through one MatMul.
Value contract(ImportContext &c, Location loc, Value a, Labels &la, Value b, Labels lb,
               const std::function<bool(int)> &neededLater) {
  a = sumOut(c, loc, a, la, [&](int l) { return has(lb, l) || neededLater(l); });
  b = sumOut(c, loc, b, lb, [&](int l) { return has(la, l) || neededLater(l); });
  Labels batch, freeA, freeB, con;
  for (int l : la)
    (has(lb, l) ? (neededLater(l) ? batch : con) : freeA).push_back(l);
  for (int l : lb)
    if (!has(la, l))
      freeB.push_back(l);
  Shape as = c.shapeOf(a), bs = c.shapeOf(b);
  auto sizeIn = [](const Labels &ls, const Shape &s, int l) {
    return s[std::find(ls.begin(), ls.end(), l) - ls.begin()];
  };
  int64_t Bt = 1, M = 1, N = 1, K = 1;
  Shape out;
  for (int l : batch)
    Bt *= sizeIn(la, as, l), out.push_back(sizeIn(la, as, l));
  for (int l : freeA)
    M *= sizeIn(la, as, l), out.push_back(sizeIn(la, as, l));
  for (int l : freeB)
    N *= sizeIn(lb, bs, l), out.push_back(sizeIn(lb, bs, l));
  for (int l : con)
    K *= sizeIn(la, as, l);
  auto cat = [](Labels x, const Labels &y, const Labels &z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  Shape am{M, K}, bm{K, N}, mm{M, N};
  if (!batch.empty()) {
    am.insert(am.begin(), Bt), bm.insert(bm.begin(), Bt), mm.insert(mm.begin(), Bt);
  }
  Value a2 = c.reshape(loc, permute(c, loc, a, la, cat(batch, freeA, con)), am);
  Value b2 = c.reshape(loc, permute(c, loc, b, lb, cat(batch, con, freeB)), bm);
  Value m = c.emit<tg::MatmulOp>(loc, c.type(mm, c.elemOf(a)), a2, b2);
  la = cat(batch, freeA, freeB);
  return c.reshape(loc, m, out);
}

Result importEinsum(ImportContext &c, const NodeView &n) {
  std::string eq;
  for (char ch : n.attrString("equation", ""))
    if (ch != ' ')
      eq += ch;
  const std::string what = "equation '" + n.attrString("equation", "") + "'";
  auto bad = [&](const std::string &why) { return c.error(n, what + ": " + why); };
  if (n.opset < 12)
    return c.error(n, "Einsum needs opset 12 or later (the model imports opset " +
                          std::to_string(n.opset) + ")");
  if (n.inputs.empty())
    return c.error(n, "Einsum needs at least one input");
  // Terms.
  const size_t arrow = eq.find("->");
  if (arrow != std::string::npos && eq.find("->", arrow + 1) != std::string::npos)
    return bad("two '->'");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms(1);
  for (size_t i = 0, from = 0; i <= lhs.size(); ++i)
    if (i == lhs.size() || lhs[i] == ',') {
      if (auto e = parseTerm(lhs.substr(from, i - from), terms.back()))
        return bad(*e);
      if (i < lhs.size())
        terms.emplace_back();
      from = i + 1;
    }
  if (terms.size() != n.inputs.size())
    return bad(std::to_string(terms.size()) + " input terms for " +
               std::to_string(n.inputs.size()) + " inputs");
  // Operands: same float type, ranks matching their terms.
  std::vector<Value> xs;
  int64_t E = 0;
  std::vector<int64_t> es;
  for (size_t k = 0; k < terms.size(); ++k) {
    TGC_ASSIGN(x, c.need(n, k));
    if (c.elemOf(x) != c.elemOf(n.inputs[0]))
      return c.error(n, "inputs have different element types");
    const int64_t r = c.rankOf(x), nl = (int64_t)terms[k].letters.size();
    const bool ell = terms[k].ellipsisAt != std::string::npos;
    if (ell ? r < nl : r != nl)
      return bad("term " + std::to_string(k) + " names " + std::to_string(nl) + " dims" +
                 (ell ? " and '...'" : "") + " but input " + std::to_string(k) + " has rank " +
                 std::to_string(r));
    es.push_back(ell ? r - nl : 0);
    E = std::max(E, es.back());
    xs.push_back(x);
  }
  if (!ImportContext::isFloat(c.elemOf(xs[0])))
    return c.error(n, what + ": only float inputs are supported");
  std::vector<Labels> labels;
  std::map<int, int> uses;
  for (size_t k = 0; k < terms.size(); ++k) {
    labels.push_back(labelsOf(terms[k], es[k], E));
    for (char ch : terms[k].letters)
      ++uses[(unsigned char)ch];
  }
  // Output labels.
  Labels out;
  if (arrow != std::string::npos) {
    Term t;
    if (auto e = parseTerm(eq.substr(arrow + 2), t))
      return bad("output: " + *e);
    out = labelsOf(t, E, E);
    for (char ch : t.letters) {
      if (!uses.count((unsigned char)ch))
        return bad("output letter '" + std::string(1, ch) + "' is in no input");
      if (std::count(t.letters.begin(), t.letters.end(), ch) > 1)
        return bad("output letter '" + std::string(1, ch) + "' repeated");
    }
  } else {
    for (int64_t j = 0; j < E; ++j)
      out.push_back(kEllipsis + (int)j);
    for (auto &[l, count] : uses) // std::map: ASCII order
      if (count == 1)
        out.push_back(l);
  }
  // Sizes: a letter's are equal everywhere; a broadcast dim's are equal or 1.
  std::map<int, int64_t> size;
  for (size_t k = 0; k < xs.size(); ++k) {
    Shape s = c.shapeOf(xs[k]);
    for (size_t i = 0; i < s.size(); ++i) {
      auto [it, fresh] = size.emplace(labels[k][i], s[i]);
      if (fresh || it->second == s[i])
        continue;
      if (labels[k][i] >= kEllipsis && (it->second == 1 || s[i] == 1)) {
        it->second = std::max(it->second, s[i]);
        continue;
      }
      return bad(labelName(labels[k][i]) + " has sizes " + std::to_string(it->second) + " and " +
                 std::to_string(s[i]) + " (input " + std::to_string(k) + ")");
    }
  }
  Location loc = n.loc;
  // 1. Per operand: broadcast, diagonals, private sums.
  for (size_t k = 0; k < xs.size(); ++k) {
    Shape s = c.shapeOf(xs[k]);
    for (size_t i = 0; i < s.size(); ++i)
      s[i] = size[labels[k][i]];
    xs[k] = c.expand(loc, xs[k], s);
    xs[k] = diagonals(c, loc, xs[k], labels[k]);
    xs[k] = sumOut(c, loc, xs[k], labels[k], [&](int l) {
      if (has(out, l))
        return true;
      for (size_t j = 0; j < xs.size(); ++j)
        if (j != k && has(labels[j], l))
          return true;
      return false;
    });
  }
  // 2. Contractions, left to right.
  Value acc = xs[0];
  Labels la = labels[0];
  for (size_t k = 1; k < xs.size(); ++k)
    acc = contract(c, loc, acc, la, xs[k], labels[k], [&](int l) {
      if (has(out, l))
        return true;
      for (size_t j = k + 1; j < xs.size(); ++j)
        if (has(labels[j], l))
          return true;
      return false;
    });
  // 3. The output's order.
  acc = sumOut(c, loc, acc, la, [&](int l) { return has(out, l); });
  return Values{permute(c, loc, acc, la, out)};
}

} // namespace

void registerEinsumOps(OpTable &t) { t["Einsum"] = importEinsum; }

} // namespace tgc::onnx_import
