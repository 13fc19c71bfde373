#include "measure/codegen_cpu.h"

#include <array>
#include <cassert>
#include <sstream>
#include <vector>

#include "measure/source_writer.h"

namespace tcl::measure {
namespace {

using std::int64_t;
using std::to_string;

enum class LoopPragma { kNone, kSimd, kUnroll };

struct Loop {
  Loop(std::string v, int64_t e, LoopPragma p = LoopPragma::kNone) : var(std::move(v)), extent(e), pragma(p) {}
  std::string var;
  int64_t extent = 1;
  LoopPragma pragma = LoopPragma::kNone;
  std::string simd_clause;  // e.g. "reduction(+:sum)"
};

// Writes nested loops (with their pragmas) and closes them.
class Emitter : public SourceWriter {
 public:
  void open(const Loop& l) {
    if (l.pragma == LoopPragma::kSimd) line("#pragma omp simd " + l.simd_clause);
    if (l.pragma == LoopPragma::kUnroll && l.extent > 1) line("#pragma GCC unroll " + to_string(l.extent));
    open_block("for (int64_t " + l.var + " = 0; " + l.var + " < " + to_string(l.extent) + "; ++" + l.var + ") {");
  }
};

// Marks the innermost loop vectorized (when asked) and the loops inside the
// unroll budget (TVM's auto_unroll_max_step: a loop whose nest below it,
// itself included, runs at most N iterations is unrolled).
void annotate_nest(std::vector<Loop>& nest, bool vectorize, int unroll_max_step) {
  int64_t inner = 1;
  for (std::size_t i = nest.size(); i-- > 0;) {
    inner *= nest[i].extent;
    if (i + 1 == nest.size() && vectorize) {
      nest[i].pragma = LoopPragma::kSimd;
    } else if (inner <= unroll_max_step) {
      nest[i].pragma = LoopPragma::kUnroll;
    }
  }
}

std::string header(std::string_view symbol) {
  return "extern \"C\" void " + std::string(symbol) +
         "(const float* __restrict in0, const float* __restrict in1, float* __restrict out, float* __restrict ws) {\n"
         "  (void)in1; (void)ws;\n";
}

// Output element of the spatial point x0.. (natural layout).
std::string out_index(const Workload& w) {
  const LoopExtents e = loop_extents(w);
  std::string idx = "x0";
  for (std::size_t d = 1; d < e.spatial.size(); ++d)
    idx = "(" + idx + ") * " + to_string(e.spatial[d]) + " + x" + to_string(d);
  return idx;
}

// The multiply-add operand of the point (x.., k..).
std::string product(const Workload& w, const Schedule& s) {
  const auto& a = w.args;
  switch (w.kind) {
    case OpKind::kMatmul: return "in0[x0 * " + to_string(a[2]) + " + k0] * in1[k0 * " + to_string(a[1]) + " + x1]";
    case OpKind::kBatchMatmul:
      return "in0[(x0 * " + to_string(a[1]) + " + x1) * " + to_string(a[3]) + " + k0] * in1[(x0 * " + to_string(a[3]) +
             " + k0) * " + to_string(a[2]) + " + x2]";
    case OpKind::kConv2d:
    case OpKind::kDepthwiseConv2d: {
      const bool dw = w.kind == OpKind::kDepthwiseConv2d;
      const int64_t H = a[1], W = a[2], C = a[3], KW = dw ? a[5] : a[6], stride = dw ? a[6] : a[7],
                    pad = dw ? a[7] : a[8];
      const std::string ch = dw ? "x3" : "k2";
      const std::string hin = "(x1 * " + to_string(stride) + " + k0)", win = "(x2 * " + to_string(stride) + " + k1)";
      const std::string weight =
          dw ? "in1[(k0 * " + to_string(KW) + " + k1) * " + to_string(C) + " + x3]"
             : "in1[((k0 * " + to_string(KW) + " + k1) * " + to_string(C) + " + k2) * " + to_string(a[4]) + " + x3]";
      if (!s.inline_pad) {
        const int64_t HP = H + 2 * pad, WP = W + 2 * pad;
        return "ws[((x0 * " + to_string(HP) + " + " + hin + ") * " + to_string(WP) + " + " + win + ") * " +
               to_string(C) + " + " + ch + "] * " + weight;
      }
      if (pad == 0) {  // every tap is inside the input: no bounds check in the innermost loop (TVM's pad of 0 has none)
        return "in0[((x0 * " + to_string(H) + " + " + hin + ") * " + to_string(W) + " + " + win + ") * " +
               to_string(C) + " + " + ch + "] * " + weight;
      }
      const std::string h = "(" + hin + " - " + to_string(pad) + ")", ww = "(" + win + " - " + to_string(pad) + ")";
      return "((uint64_t)" + h + " < " + to_string(H) + "u && (uint64_t)" + ww + " < " + to_string(W) +
             "u ? in0[((x0 * " + to_string(H) + " + " + h + ") * " + to_string(W) + " + " + ww + ") * " + to_string(C) +
             " + " + ch + "] : 0.0f) * " + weight;
    }
    case OpKind::kSoftmax: break;
  }
  assert(false);
  return "";
}

void emit_pad_stage(const Workload& w, const Schedule& s, Emitter& em) {
  const auto& a = w.args;
  const bool dw = w.kind == OpKind::kDepthwiseConv2d;
  const int64_t N = a[0], H = a[1], W = a[2], C = a[3], pad = dw ? a[7] : a[8];
  const int64_t HP = H + 2 * pad, WP = W + 2 * pad;
  em.line("#pragma omp parallel for");
  em.open_block("for (int64_t f = 0; f < " + to_string(N * HP) + "; ++f) {");
  em.line("const int64_t n = f / " + to_string(HP) + ", h = f % " + to_string(HP) + ";");
  em.open({"w", WP});
  em.open({"c", C, s.vectorize ? LoopPragma::kSimd : LoopPragma::kNone});
  em.line("const int64_t hi = h - " + to_string(pad) + ", wi = w - " + to_string(pad) + ";");
  em.line("ws[((n * " + to_string(HP) + " + h) * " + to_string(WP) + " + w) * " + to_string(C) +
          " + c] = (uint64_t)hi < " + to_string(H) + "u && (uint64_t)wi < " + to_string(W) + "u ? in0[((n * " +
          to_string(H) + " + hi) * " + to_string(W) + " + wi) * " + to_string(C) + " + c] : 0.0f;");
  em.close(3);
}

// The tiles of a schedule's loops: e[d][level], the extents of the 4 levels
// of spatial loop d; f[q][level], of the 2 levels of reduction loop q.
struct Tiling {
  std::vector<std::array<int64_t, 4>> e;
  std::vector<std::array<int64_t, 2>> f;
};

Tiling tiling_of(const Workload& w, const Schedule& s) {
  const LoopExtents ext = loop_extents(w);
  Tiling t;
  t.e.resize(ext.spatial.size());
  for (std::size_t d = 0; d < t.e.size(); ++d) {
    const auto& tile = s.spatial_tiles[d];
    t.e[d] = {ext.spatial[d] / (tile[0] * tile[1] * tile[2]), tile[0], tile[1], tile[2]};
  }
  t.f.resize(ext.reduce.size());
  for (std::size_t q = 0; q < t.f.size(); ++q) t.f[q] = {ext.reduce[q] / s.reduce_tiles[q], s.reduce_tiles[q]};
  return t;
}

// The loop variables: level `level` of spatial loop d, of reduction loop q.
std::string spatial_var(std::size_t d, int level) { return "s" + to_string(d) + "_" + to_string(level); }
std::string reduce_var(std::size_t q, int level) { return "r" + to_string(q) + "_" + to_string(level); }

// Levels `level` of every spatial loop, in the schedule's order.
void add_spatial_level(const Tiling& t, const Schedule& s, int level, std::vector<Loop>* loops) {
  for (int p : s.spatial_order) {
    const auto d = static_cast<std::size_t>(p);
    loops->push_back({spatial_var(d, level), t.e[d][static_cast<std::size_t>(level)]});
  }
}

// Opens levels 0 and 1 of the (output) stage, the first parallel_levels · S
// fused into one parallel loop; returns the number of loops opened.
int open_outer_loops(const Tiling& t, const Schedule& s, Emitter& em) {
  std::vector<Loop> outer;
  add_spatial_level(t, s, 0, &outer);
  add_spatial_level(t, s, 1, &outer);
  const std::size_t fused = static_cast<std::size_t>(s.parallel_levels) * t.e.size();
  int open_loops = 0;
  if (fused > 0) {
    int64_t total = 1;
    for (std::size_t i = 0; i < fused; ++i) total *= outer[i].extent;
    em.line("#pragma omp parallel for");
    em.open_block("for (int64_t fused = 0; fused < " + to_string(total) + "; ++fused) {");
    ++open_loops;
    em.line("int64_t rest = fused;");
    for (std::size_t i = fused; i-- > 0;) {
      em.line("const int64_t " + outer[i].var + " = rest % " + to_string(outer[i].extent) +
              "; rest /= " + to_string(outer[i].extent) + ";");
    }
    em.line("(void)rest;");
  }
  for (std::size_t i = fused; i < outer.size(); ++i) {
    em.open(outer[i]);
    ++open_loops;
  }
  return open_loops;
}

// The compute nest under level 1: R0 S2 R1 S3, annotated.
std::vector<Loop> compute_nest(const Tiling& t, const Schedule& s) {
  std::vector<Loop> nest;
  for (int q : s.reduce_order)
    nest.push_back({reduce_var(static_cast<std::size_t>(q), 0), t.f[static_cast<std::size_t>(q)][0]});
  add_spatial_level(t, s, 2, &nest);
  for (int q : s.reduce_order)
    nest.push_back({reduce_var(static_cast<std::size_t>(q), 1), t.f[static_cast<std::size_t>(q)][1]});
  add_spatial_level(t, s, 3, &nest);
  annotate_nest(nest, s.vectorize, s.auto_unroll_max_step);
  return nest;
}

// The point's indices from the loop variables: x<d> for every spatial loop,
// and k<q> for every reduction loop when with_reduce.
void emit_indices(const Tiling& t, bool with_reduce, Emitter& em) {
  for (std::size_t d = 0; d < t.e.size(); ++d) {
    const auto& e = t.e[d];
    em.line("const int64_t x" + to_string(d) + " = ((" + spatial_var(d, 0) + " * " + to_string(e[1]) + " + " +
            spatial_var(d, 1) + ") * " + to_string(e[2]) + " + " + spatial_var(d, 2) + ") * " + to_string(e[3]) +
            " + " + spatial_var(d, 3) + ";");
  }
  if (!with_reduce) return;
  for (std::size_t q = 0; q < t.f.size(); ++q) {
    em.line("const int64_t k" + to_string(q) + " = " + reduce_var(q, 0) + " * " + to_string(t.f[q][1]) + " + " +
            reduce_var(q, 1) + ";");
  }
}

// cache_write: the (level 2 × level 3) tile accumulates in a local array,
// then is copied out (the output stage's level 2, FSP-fused).
void emit_cached_tile(const Workload& w, const Schedule& s, const Tiling& t, const std::vector<Loop>& nest,
                      Emitter& em) {
  const std::size_t S = t.e.size();
  int64_t tile = 1;
  std::string lidx, oidx;
  for (std::size_t d = 0; d < S; ++d) {
    const int64_t size = t.e[d][2] * t.e[d][3];
    tile *= size;
    const std::string l = "(" + spatial_var(d, 2) + " * " + to_string(t.e[d][3]) + " + " + spatial_var(d, 3) + ")";
    lidx = d == 0 ? l : "(" + lidx + ") * " + to_string(size) + " + " + l;
    const std::string o = "o" + to_string(d);
    oidx = d == 0 ? o : "(" + oidx + ") * " + to_string(size) + " + " + o;
  }
  em.line("float local[" + to_string(tile) + "];");
  em.open({"i", tile, s.vectorize ? LoopPragma::kSimd : LoopPragma::kNone});
  em.line("local[i] = 0.0f;");
  em.close();
  for (const Loop& l : nest) em.open(l);
  emit_indices(t, true, em);
  em.line("local[" + lidx + "] += " + product(w, s) + ";");
  em.close(static_cast<int>(nest.size()));
  std::vector<Loop> copy;
  for (int p : s.spatial_order) {
    const auto d = static_cast<std::size_t>(p);
    copy.push_back({"o" + to_string(d), t.e[d][2] * t.e[d][3]});
  }
  annotate_nest(copy, s.vectorize, 0);
  for (const Loop& l : copy) em.open(l);
  for (std::size_t d = 0; d < S; ++d) {
    em.line("const int64_t x" + to_string(d) + " = (" + spatial_var(d, 0) + " * " + to_string(t.e[d][1]) + " + " +
            spatial_var(d, 1) + ") * " + to_string(t.e[d][2] * t.e[d][3]) + " + o" + to_string(d) + ";");
  }
  em.line("out[" + out_index(w) + "] = local[" + oidx + "];");
  em.close(static_cast<int>(copy.size()));
}

// No cache: the output tile is zeroed before the reduction (TVM's init
// nest), then accumulated into in place.
void emit_direct_tile(const Workload& w, const Schedule& s, const Tiling& t, const std::vector<Loop>& nest,
                      Emitter& em) {
  std::vector<Loop> init;
  add_spatial_level(t, s, 2, &init);
  add_spatial_level(t, s, 3, &init);
  annotate_nest(init, s.vectorize, 0);
  for (const Loop& l : init) em.open(l);
  emit_indices(t, false, em);
  em.line("out[" + out_index(w) + "] = 0.0f;");
  em.close(static_cast<int>(init.size()));
  for (const Loop& l : nest) em.open(l);
  emit_indices(t, true, em);
  em.line("out[" + out_index(w) + "] += " + product(w, s) + ";");
  em.close(static_cast<int>(nest.size()));
}

std::string generate_tiled(const Workload& w, const Schedule& s, std::string_view symbol) {
  const Tiling t = tiling_of(w, s);
  Emitter em;
  if ((w.kind == OpKind::kConv2d || w.kind == OpKind::kDepthwiseConv2d) && !s.inline_pad) emit_pad_stage(w, s, em);
  const int open_loops = open_outer_loops(t, s, em);
  const std::vector<Loop> nest = compute_nest(t, s);
  if (s.cache_write) {
    emit_cached_tile(w, s, t, nest, em);
  } else {
    emit_direct_tile(w, s, t, nest, em);
  }
  em.close(open_loops);
  return header(symbol) + em.str() + "}\n";
}

std::string generate_softmax(const Workload& w, const Schedule& s, std::string_view symbol) {
  const int64_t rows = w.args[0], cols = w.args[1], v = s.vector_split, outer = cols / v;
  const std::string C = to_string(cols);
  const std::string x = "in0[r * " + C + " + c]";
  Emitter em;
  auto col_loops = [&](const std::string& clause, bool unroll) {
    std::vector<Loop> nest = {{"c0", outer}, {"c1", v}};
    annotate_nest(nest, s.vectorize, unroll ? s.auto_unroll_max_step : 0);
    if (s.vectorize) nest[1].simd_clause = clause;
    for (const Loop& l : nest) em.open(l);
    em.line("const int64_t c = c0 * " + to_string(v) + " + c1;");
  };
  auto row_loop = [&]() {
    if (s.parallel) em.line("#pragma omp parallel for");
    em.open({"r", rows});
  };
  // exp(x - max) as the consumers read it: recomputed when inlined.
  const std::string max_at = s.reduce_at_row ? "m" : "ws[r]";
  const std::string exp_buf = s.reduce_at_row ? "e[c]" : "ws[" + to_string(2 * rows) + " + r * " + C + " + c]";
  const std::string ex = s.inline_exp ? "__builtin_expf(" + x + " - " + max_at + ")" : exp_buf;
  const std::string sum_at = s.reduce_at_row ? "sum" : "ws[" + to_string(rows) + " + r]";
  if (s.reduce_at_row) {
    row_loop();
    em.line("float m = -__builtin_inff();");
    col_loops("reduction(max:m)", false);
    em.line("m = " + x + " > m ? " + x + " : m;");
    em.close(2);
    if (!s.inline_exp) {
      em.line("float e[" + C + "];");
      col_loops("", false);
      em.line("e[c] = __builtin_expf(" + x + " - m);");
      em.close(2);
    }
    em.line("float sum = 0.0f;");
    col_loops("reduction(+:sum)", false);
    em.line("sum += " + ex + ";");
    em.close(2);
    col_loops("", true);
    em.line("out[r * " + C + " + c] = " + ex + " / sum;");
    em.close(3);
  } else {
    row_loop();
    em.line("float m = -__builtin_inff();");
    col_loops("reduction(max:m)", false);
    em.line("m = " + x + " > m ? " + x + " : m;");
    em.close(2);
    em.line("ws[r] = m;");
    em.close();
    if (!s.inline_exp) {
      row_loop();
      col_loops("", false);
      em.line(exp_buf + " = __builtin_expf(" + x + " - ws[r]);");
      em.close(3);
    }
    row_loop();
    em.line("float sum = 0.0f;");
    col_loops("reduction(+:sum)", false);
    em.line("sum += " + ex + ";");
    em.close(2);
    em.line(sum_at + " = sum;");
    em.close();
    row_loop();
    col_loops("", true);
    em.line("out[r * " + C + " + c] = " + ex + " / " + sum_at + ";");
    em.close(3);
  }
  return header(symbol) + em.str() + "}\n";
}

}  // namespace

std::string generate_cpu_source(const Workload& w, const Schedule& s, std::string_view symbol) {
  return w.kind == OpKind::kSoftmax ? generate_softmax(w, s, symbol) : generate_tiled(w, s, symbol);
}

}  // namespace tcl::measure
