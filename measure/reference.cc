#include "measure/reference.h"

#include <algorithm>
#include <cmath>

#include "measure/schedule.h"

namespace tcl::measure {

std::vector<std::vector<float>> make_inputs(const Workload& w) {
  core::SplitMix64 rng(0x7c1a5eedULL);
  std::vector<std::vector<float>> inputs;
  for (std::int64_t n : input_sizes(w)) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = static_cast<float>(static_cast<double>(rng.next() >> 11) * 0x1.0p-52 - 1.0);
    inputs.push_back(std::move(v));
  }
  return inputs;
}

void reference(const Workload& w, const float* in0, const float* in1, float* out) {
  using std::int64_t;
  const auto& a = w.args;
  switch (w.kind) {
    case OpKind::kMatmul:
    case OpKind::kBatchMatmul: {
      const bool batched = w.kind == OpKind::kBatchMatmul;
      const int64_t B = batched ? a[0] : 1, M = a[batched], N = a[batched + 1], K = a[batched + 2];
      // i, k, j order with a row of double accumulators: streams B rows.
      std::vector<double> acc(static_cast<std::size_t>(N));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < M; ++i) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t k = 0; k < K; ++k) {
            const double x = in0[(b * M + i) * K + k];
            const float* row = in1 + (b * K + k) * N;
            for (int64_t j = 0; j < N; ++j) acc[static_cast<std::size_t>(j)] += x * row[j];
          }
          for (int64_t j = 0; j < N; ++j)
            out[(b * M + i) * N + j] = static_cast<float>(acc[static_cast<std::size_t>(j)]);
        }
      return;
    }
    case OpKind::kConv2d:
    case OpKind::kDepthwiseConv2d: {
      const bool dw = w.kind == OpKind::kDepthwiseConv2d;
      const int64_t N = a[0], H = a[1], W = a[2], C = a[3], CO = dw ? C : a[4];
      const int64_t KH = a[dw ? 4 : 5], KW = a[dw ? 5 : 6], S = a[dw ? 6 : 7], P = a[dw ? 7 : 8];
      const LoopExtents e = loop_extents(w);
      const int64_t OH = e.spatial[1], OW = e.spatial[2];
      std::vector<double> acc(static_cast<std::size_t>(CO));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t h = oh * S + kh - P, x = ow * S + kw - P;
                if (h < 0 || h >= H || x < 0 || x >= W) continue;
                const float* pixel = in0 + ((n * H + h) * W + x) * C;
                if (dw) {
                  for (int64_t c = 0; c < C; ++c)
                    acc[static_cast<std::size_t>(c)] += double(pixel[c]) * in1[(kh * KW + kw) * C + c];
                  continue;
                }
                for (int64_t ci = 0; ci < C; ++ci) {
                  const double v = pixel[ci];
                  const float* wrow = in1 + ((kh * KW + kw) * C + ci) * CO;
                  for (int64_t co = 0; co < CO; ++co) acc[static_cast<std::size_t>(co)] += v * wrow[co];
                }
              }
            for (int64_t co = 0; co < CO; ++co)
              out[((n * OH + oh) * OW + ow) * CO + co] = static_cast<float>(acc[static_cast<std::size_t>(co)]);
          }
      return;
    }
    case OpKind::kSoftmax: {
      const int64_t rows = a[0], cols = a[1];
      for (int64_t r = 0; r < rows; ++r) {
        const float* x = in0 + r * cols;
        double m = x[0], sum = 0;
        for (int64_t c = 1; c < cols; ++c) m = std::max(m, double(x[c]));
        for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[c] - m);
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = static_cast<float>(std::exp(x[c] - m) / sum);
      }
      return;
    }
  }
}

std::string compare_outputs(std::span<const float> got, std::span<const float> want) {
  if (got.size() != want.size())
    return "output has " + std::to_string(got.size()) + " elements, want " + std::to_string(want.size());
  double mean_abs = 0;
  for (float x : want) mean_abs += std::fabs(x);
  mean_abs /= want.empty() ? 1.0 : static_cast<double>(want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(double(got[i]) - want[i]);
    if (!(diff <= 1e-3 * (std::fabs(want[i]) + mean_abs))) {
      return "out[" + std::to_string(i) + "] = " + std::to_string(got[i]) + ", want " + std::to_string(want[i]);
    }
  }
  return "";
}

}  // namespace tcl::measure
