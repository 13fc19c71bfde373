#include "measure/codegen_cuda.h"

#include <sstream>
#include <utility>
#include <vector>

#include "measure/source_writer.h"

namespace tcl::measure {
namespace {

using std::int64_t;
using std::to_string;

using Emitter = SourceWriter;

// Row-major index of coordinates `c` in dims `d`: ((c0) * d1 + (c1)) * d2 + ...
std::string row_major(const std::vector<std::string>& c, const std::vector<int64_t>& d) {
  std::string s = "(" + c[0] + ")";
  for (std::size_t i = 1; i < c.size(); ++i) s = "(" + s + " * " + to_string(d[i]) + " + " + c[i] + ")";
  return s;
}

std::string var(const char* prefix, std::size_t i) { return prefix + to_string(i); }

// Global coordinate of a tile element: `block`-th tile of `tile` plus `local`.
std::string at(const std::string& block, int64_t tile, const std::string& local) {
  return block + " * " + to_string(tile) + " + " + local;
}

// The load of shared element (a0, a1, ...) of input `input` from global
// memory (0 outside a convolution's input: the padding).
std::string global_load(const Workload& w, const GpuShape& g, int input) {
  const auto& a = w.args;
  const auto& T = g.block_tile;
  const auto& K = g.reduce_tile;
  auto ro = [&](std::size_t r, const char* local) { return at(var("ro", r), K[r], local); };
  auto b = [&](std::size_t d, const char* local) { return at(var("b", d), T[d], local); };
  const std::string in = "in" + to_string(input);
  switch (w.kind) {
    case OpKind::kMatmul:
      if (input == 0) return in + "[" + row_major({b(0, "a0"), ro(0, "a1")}, {a[0], a[2]}) + "]";
      return in + "[" + row_major({ro(0, "a0"), b(1, "a1")}, {a[2], a[1]}) + "]";
    case OpKind::kBatchMatmul:
      if (input == 0) return in + "[" + row_major({b(0, "a0"), b(1, "a1"), ro(0, "a2")}, {a[0], a[1], a[3]}) + "]";
      return in + "[" + row_major({b(0, "a0"), ro(0, "a1"), b(2, "a2")}, {a[0], a[3], a[2]}) + "]";
    case OpKind::kConv2d:
    case OpKind::kDepthwiseConv2d: {
      const bool dw = w.kind == OpKind::kDepthwiseConv2d;
      const int64_t channels = a[3], kh = a[dw ? 4 : 5], kw = a[dw ? 5 : 6];
      if (input == 1) {
        if (dw) return in + "[" + row_major({ro(0, "a0"), ro(1, "a1"), b(3, "a2")}, {kh, kw, channels}) + "]";
        return in + "[" + row_major({ro(0, "a0"), ro(1, "a1"), ro(2, "a2"), b(3, "a3")}, {kh, kw, channels, a[4]}) +
               "]";
      }
      // h and x: the row and column of the unpadded input (cooperative_fetch).
      const std::string c = dw ? b(3, "a3") : ro(2, "a3");
      return "(0 <= h && h < " + to_string(a[1]) + " && 0 <= x && x < " + to_string(a[2]) + ") ? " + in + "[" +
             row_major({b(0, "a0"), "h", "x", c}, {a[0], a[1], a[2], channels}) + "] : 0.f";
    }
    case OpKind::kSoftmax: break;
  }
  return "0.f";
}

// The product of the shared tiles at local coordinates x* (spatial), k* (reduction).
std::string shared_product(const Workload& w, const GpuShape& g) {
  const auto& d0 = g.shared_dims[0];
  const auto& d1 = g.shared_dims[1];
  std::vector<std::string> c0, c1;
  switch (w.kind) {
    case OpKind::kMatmul:
      c0 = {"x0", "k0"};
      c1 = {"k0", "x1"};
      break;
    case OpKind::kBatchMatmul:
      c0 = {"x0", "x1", "k0"};
      c1 = {"x0", "k0", "x2"};
      break;
    case OpKind::kConv2d:
    case OpKind::kDepthwiseConv2d: {
      const bool dw = w.kind == OpKind::kDepthwiseConv2d;
      const std::string s = to_string(w.args[dw ? 6 : 7]);
      c0 = {"x0", "x1 * " + s + " + k0", "x2 * " + s + " + k1", dw ? "x3" : "k2"};
      c1 = dw ? std::vector<std::string>{"k0", "k1", "x3"} : std::vector<std::string>{"k0", "k1", "k2", "x3"};
      break;
    }
    case OpKind::kSoftmax: break;
  }
  return "in0_shared[" + row_major(c0, d0) + "] * in1_shared[" + row_major(c1, d1) + "]";
}

// `coord` = (index / stride) % extent for each loop of `extents`, the first outermost.
void decompose(Emitter& e, const std::string& index, const char* prefix, const std::vector<int64_t>& extents) {
  int64_t stride = 1;
  for (std::size_t i = extents.size(); i-- > 0;) {
    e.line("const int " + var(prefix, i) + " = (" + index + " / " + to_string(stride) + ") % " + to_string(extents[i]) +
           ";");
    stride *= extents[i];
  }
}

// Both barriers are emitted by the caller; this is the loop between them:
// each thread loads runs of `fetch_vector` consecutive elements, strided by
// the thread count (TVM's fuse + split + FFSP + threadIdx.x bind).
void cooperative_fetch(Emitter& e, const Workload& w, const GpuSchedule& s, const GpuShape& g, int input) {
  const auto i = static_cast<std::size_t>(input);
  const int64_t vec = s.fetch_vector[i], runs = g.shared_floats[input] / vec;
  const int64_t rounds = (runs + g.threads - 1) / g.threads;
  e.open_block("for (int fo = 0; fo < " + to_string(rounds) + "; ++fo) {");
  e.line("const int ft = fo * " + to_string(g.threads) + " + tx;");
  const bool guard = runs % g.threads != 0;
  if (guard) e.open_block("if (ft < " + to_string(runs) + ") {");
  if (vec > 1) e.line("#pragma unroll");
  e.open_block("for (int fv = 0; fv < " + to_string(vec) + "; ++fv) {");
  e.line("const int f = ft * " + to_string(vec) + " + fv;");
  decompose(e, "f", "a", g.shared_dims[input]);
  const std::string load = global_load(w, g, input);
  if (w.kind == OpKind::kConv2d || w.kind == OpKind::kDepthwiseConv2d) {
    if (input == 0) {
      const bool dw = w.kind == OpKind::kDepthwiseConv2d;
      const int64_t stride = w.args[dw ? 6 : 7], pad = w.args[dw ? 7 : 8];
      e.line("const int h = " + at("b1", g.block_tile[1] * stride, at("ro0", g.reduce_tile[0], "a1")) + " - " +
             to_string(pad) + ";");
      e.line("const int x = " + at("b2", g.block_tile[2] * stride, at("ro1", g.reduce_tile[1], "a2")) + " - " +
             to_string(pad) + ";");
    }
  }
  e.line("in" + to_string(input) + "_shared[f] = " + load + ";");
  e.close(guard ? 3 : 2);
}

// Index into out_local of (vt*, it*, ii*): the vthread tiles outermost.
std::string local_index(const GpuSchedule& s) {
  std::vector<std::string> c;
  std::vector<int64_t> d;
  for (int level : {0, 2, 3}) {
    for (std::size_t i = 0; i < s.spatial_tiles.size(); ++i) {
      c.push_back(var(level == 0 ? "vt" : level == 2 ? "it" : "ii", i));
      d.push_back(s.spatial_tiles[i][static_cast<std::size_t>(level)]);
    }
  }
  return row_major(c, d);
}

struct Loop {
  std::string var;
  std::string header;
  int64_t extent;
};

// R1 S1(vthread) S3 R2 S4 inside a thread, unrolled as TVM's
// auto_unroll_max_step says (a loop whose nest runs at most N iterations).
void compute_nest(Emitter& e, const Workload& w, const GpuSchedule& s, const GpuShape& g) {
  std::vector<Loop> nest;
  auto add = [&](const char* v, std::size_t i, int64_t n) {
    const std::string name = var(v, i);
    nest.push_back({name, "for (int " + name + " = 0; " + name + " < " + to_string(n) + "; ++" + name + ") {", n});
  };
  const std::size_t S = s.spatial_tiles.size(), R = s.reduce_tiles.size();
  for (std::size_t r = 0; r < R; ++r) add("rk", r, s.reduce_tiles[r][0]);
  for (std::size_t d = 0; d < S; ++d) add("vt", d, s.spatial_tiles[d][0]);
  for (std::size_t d = 0; d < S; ++d) add("it", d, s.spatial_tiles[d][2]);
  for (std::size_t r = 0; r < R; ++r) add("ri", r, s.reduce_tiles[r][1]);
  for (std::size_t d = 0; d < S; ++d) add("ii", d, s.spatial_tiles[d][3]);
  std::vector<bool> unroll(nest.size());
  int64_t inner = 1;
  for (std::size_t i = nest.size(); i-- > 0;) {
    inner *= nest[i].extent;
    unroll[i] = nest[i].extent > 1 && inner <= s.auto_unroll_max_step;
  }
  int opened = 0;
  for (std::size_t i = 0; i < nest.size(); ++i) {
    if (nest[i].extent == 1) {  // a loop of one iteration is its variable
      e.line("const int " + nest[i].var + " = 0;");
      continue;
    }
    if (unroll[i]) e.line("#pragma unroll");
    e.open_block(nest[i].header);
    ++opened;
  }
  for (std::size_t d = 0; d < S; ++d) {
    const auto& t = s.spatial_tiles[d];
    e.line("const int " + var("x", d) + " = ((vt" + to_string(d) + " * " + to_string(t[1]) + " + t" + to_string(d) +
           ") * " + to_string(t[2]) + " + it" + to_string(d) + ") * " + to_string(t[3]) + " + ii" + to_string(d) + ";");
  }
  for (std::size_t r = 0; r < R; ++r) {
    e.line("const int " + var("k", r) + " = rk" + to_string(r) + " * " + to_string(s.reduce_tiles[r][1]) + " + ri" +
           to_string(r) + ";");
  }
  e.line("out_local[" + local_index(s) + "] += " + shared_product(w, g) + ";");
  e.close(opened);
}

// The accumulators back to global memory.
void write_back(Emitter& e, const Workload& w, const GpuSchedule& s, const GpuShape& g) {
  const LoopExtents ext = loop_extents(w);
  const std::size_t S = s.spatial_tiles.size();
  int loops = 0;
  for (int level : {0, 2, 3}) {
    const char* v = level == 0 ? "vt" : level == 2 ? "it" : "ii";
    for (std::size_t d = 0; d < S; ++d) {
      const std::string name = var(v, d);
      const int64_t n = s.spatial_tiles[d][static_cast<std::size_t>(level)];
      if (n == 1) {
        e.line("const int " + name + " = 0;");
        continue;
      }
      e.open_block("for (int " + name + " = 0; " + name + " < " + to_string(n) + "; ++" + name + ") {");
      ++loops;
    }
  }
  std::vector<std::string> global;
  for (std::size_t d = 0; d < S; ++d) {
    const auto& t = s.spatial_tiles[d];
    global.push_back(at(var("b", d), g.block_tile[d],
                        "((vt" + to_string(d) + " * " + to_string(t[1]) + " + t" + to_string(d) + ") * " +
                            to_string(t[2]) + " + it" + to_string(d) + ") * " + to_string(t[3]) + " + ii" +
                            to_string(d)));
  }
  e.line("out[" + row_major(global, ext.spatial) + "] = out_local[" + local_index(s) + "];");
  e.close(loops);
}

}  // namespace

CudaLaunch cuda_launch(const Workload& w, const GpuSchedule& s) {
  const GpuShape g = gpu_shape(w, s);
  CudaLaunch launch;
  launch.grid[0] = g.blocks;
  launch.block[0] = g.threads;
  launch.static_shared_bytes = 4 * (g.shared_floats[0] + g.shared_floats[1]);
  return launch;
}

CudaKernel generate_cuda_kernel(const Workload& w, const GpuSchedule& s, std::string_view symbol) {
  const LoopExtents ext = loop_extents(w);
  const GpuShape g = gpu_shape(w, s);
  CudaKernel k;
  k.symbol = std::string(symbol);
  k.launch = cuda_launch(w, s);
  Emitter e;
  e.open_block("extern \"C\" __global__ void __launch_bounds__(" + to_string(g.threads) + ") " + k.symbol +
               "(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out) {");
  e.line("__shared__ float in0_shared[" + to_string(g.shared_floats[0]) + "];");
  e.line("__shared__ float in1_shared[" + to_string(g.shared_floats[1]) + "];");
  e.line("float out_local[" + to_string(g.local_floats) + "];");
  e.line("const int bx = blockIdx.x;");
  e.line("const int tx = threadIdx.x;");
  std::vector<int64_t> blocks, threads;
  for (std::size_t d = 0; d < ext.spatial.size(); ++d) {
    blocks.push_back(ext.spatial[d] / g.block_tile[d]);
    threads.push_back(s.spatial_tiles[d][1]);
  }
  decompose(e, "bx", "b", blocks);
  decompose(e, "tx", "t", threads);
  e.line("for (int l = 0; l < " + to_string(g.local_floats) + "; ++l) out_local[l] = 0.f;");
  for (std::size_t r = 0; r < ext.reduce.size(); ++r) {
    const std::string ro = var("ro", r);
    e.open_block("for (int " + ro + " = 0; " + ro + " < " + to_string(ext.reduce[r] / g.reduce_tile[r]) + "; ++" + ro +
                 ") {");
  }
  e.line("__syncthreads();");
  for (int input = 0; input < 2; ++input) cooperative_fetch(e, w, s, g, input);
  e.line("__syncthreads();");
  compute_nest(e, w, s, g);
  e.close(static_cast<int>(ext.reduce.size()));
  write_back(e, w, s, g);
  e.close();
  k.source = e.str();
  return k;
}

std::string cuda_module_source(std::span<const CudaKernel> kernels) {
  std::string out = "// generated by tcl-measure (measure/codegen_cuda.h)\n";
  for (const auto& k : kernels) out += "\n" + k.source;
  return out;
}

}  // namespace tcl::measure
