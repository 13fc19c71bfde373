#include "measure/operators.h"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <map>
#include <tuple>

namespace tcl::measure {
namespace {

struct KindInfo {
  OpKind kind;
  std::string_view name;
  std::size_t num_args;
};
constexpr KindInfo kKinds[] = {
    {OpKind::kMatmul, "matmul", 3},      {OpKind::kBatchMatmul, "batch_matmul", 4},
    {OpKind::kConv2d, "conv2d_nhwc", 9}, {OpKind::kDepthwiseConv2d, "depthwise_conv2d_nhwc", 8},
    {OpKind::kSoftmax, "softmax", 2},
};

std::int64_t conv_out(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t pad) {
  return (in + 2 * pad - k) / stride + 1;
}

}  // namespace

std::string_view op_kind_name(OpKind kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

std::string encode_workload_key(const Workload& w) {
  std::string s = "[\"tcl.";
  s += op_kind_name(w.kind);
  s += '"';
  for (std::int64_t a : w.args) {
    s += ", ";
    s += std::to_string(a);
  }
  s += ']';
  return s;
}

Result<Workload> decode_workload_key(std::string_view key) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(key, ec);
  if (ec || !v.is_array() || v.as_array().empty() || !v.as_array()[0].is_string()) {
    return Status::invalid_argument("workload key is not a [\"tcl.<kind>\", args...] array");
  }
  const auto& arr = v.as_array();
  std::string_view tag = arr[0].as_string();
  if (!tag.starts_with("tcl.")) return Status::invalid_argument("workload key is not a tcl key: " + std::string(tag));
  tag.remove_prefix(4);
  const KindInfo* info = nullptr;
  for (const auto& k : kKinds) {
    if (k.name == tag) info = &k;
  }
  if (info == nullptr) return Status::invalid_argument("unknown operator kind tcl." + std::string(tag));
  if (arr.size() != info->num_args + 1) {
    return Status::invalid_argument("tcl." + std::string(tag) + " takes " + std::to_string(info->num_args) +
                                    " arguments, got " + std::to_string(arr.size() - 1));
  }
  Workload w{info->kind, {}};
  for (std::size_t i = 1; i < arr.size(); ++i) {
    if (!arr[i].is_int64())
      return Status::invalid_argument("workload argument " + std::to_string(i) + " is not an integer");
    w.args.push_back(arr[i].as_int64());
  }
  const auto& a = w.args;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool is_pad = (w.kind == OpKind::kConv2d && i == 8) || (w.kind == OpKind::kDepthwiseConv2d && i == 7);
    if (is_pad ? a[i] < 0 : a[i] <= 0) {
      return Status::invalid_argument("workload argument " + std::to_string(i + 1) + " is out of range");
    }
    if (a[i] > (1 << 24))
      return Status::invalid_argument("workload argument " + std::to_string(i + 1) + " is too large");
  }
  if (w.kind == OpKind::kConv2d || w.kind == OpKind::kDepthwiseConv2d) {
    const bool dw = w.kind == OpKind::kDepthwiseConv2d;
    const std::int64_t kh = a[dw ? 4 : 5], kw = a[dw ? 5 : 6], s = a[dw ? 6 : 7], p = a[dw ? 7 : 8];
    if (conv_out(a[1], kh, s, p) <= 0 || conv_out(a[2], kw, s, p) <= 0 || a[1] + 2 * p < kh || a[2] + 2 * p < kw) {
      return Status::invalid_argument("convolution output would be empty");
    }
  }
  return w;
}

LoopExtents loop_extents(const Workload& w) {
  const auto& a = w.args;
  switch (w.kind) {
    case OpKind::kMatmul: return {{a[0], a[1]}, {a[2]}};
    case OpKind::kBatchMatmul: return {{a[0], a[1], a[2]}, {a[3]}};
    case OpKind::kConv2d:
      return {{a[0], conv_out(a[1], a[5], a[7], a[8]), conv_out(a[2], a[6], a[7], a[8]), a[4]}, {a[5], a[6], a[3]}};
    case OpKind::kDepthwiseConv2d:
      return {{a[0], conv_out(a[1], a[4], a[6], a[7]), conv_out(a[2], a[5], a[6], a[7]), a[3]}, {a[4], a[5]}};
    case OpKind::kSoftmax: return {{a[0], a[1]}, {a[1]}};
  }
  return {};
}

std::vector<std::int64_t> input_sizes(const Workload& w) {
  const auto& a = w.args;
  switch (w.kind) {
    case OpKind::kMatmul: return {a[0] * a[2], a[2] * a[1]};
    case OpKind::kBatchMatmul: return {a[0] * a[1] * a[3], a[0] * a[3] * a[2]};
    case OpKind::kConv2d: return {a[0] * a[1] * a[2] * a[3], a[5] * a[6] * a[3] * a[4]};
    case OpKind::kDepthwiseConv2d: return {a[0] * a[1] * a[2] * a[3], a[4] * a[5] * a[3]};
    case OpKind::kSoftmax: return {a[0] * a[1]};
  }
  return {};
}

std::int64_t output_size(const Workload& w) {
  std::int64_t n = 1;
  for (std::int64_t e : loop_extents(w).spatial) n *= e;
  return n;
}

double flop_count(const Workload& w) {
  const LoopExtents e = loop_extents(w);
  double n = 1;
  for (std::int64_t x : e.spatial) n *= static_cast<double>(x);
  if (w.kind == OpKind::kSoftmax) return 4 * n;  // max, exp, sum, divide
  for (std::int64_t x : e.reduce) n *= static_cast<double>(x);
  return 2 * n;
}

std::vector<std::string_view> model_names() { return {"resnet50", "mobilenet_v2", "bert"}; }

Result<std::vector<Task>> model_tasks(std::string_view model) {
  std::vector<Task> tasks;
  // Distinct workloads in first-seen order; repeats add to the weight.
  auto add = [&tasks](OpKind kind, std::vector<std::int64_t> args) {
    Workload w{kind, std::move(args)};
    for (auto& t : tasks) {
      if (t.workload == w) {
        ++t.weight;
        return;
      }
    }
    tasks.push_back({std::move(w), 1});
  };
  auto conv = [&add](std::int64_t hw, std::int64_t ci, std::int64_t co, std::int64_t k, std::int64_t s) {
    add(OpKind::kConv2d, {1, hw, hw, ci, co, k, k, s, k / 2});
  };
  if (model == "resnet50") {
    conv(224, 3, 64, 7, 2);
    // Bottleneck stages: (blocks, input size, mid channels, first stride).
    const std::int64_t stages[4][3] = {{3, 64, 1}, {4, 128, 2}, {6, 256, 2}, {3, 512, 2}};
    std::int64_t hw = 56, in_ch = 64;
    for (const auto& st : stages) {
      const std::int64_t blocks = st[0], mid = st[1], stride = st[2], out_ch = 4 * mid;
      for (std::int64_t b = 0; b < blocks; ++b) {
        const std::int64_t s = b == 0 ? stride : 1;
        conv(hw, in_ch, mid, 1, 1);  // 1x1 reduce (torchvision v1.5: stride on the 3x3)
        conv(hw, mid, mid, 3, s);    // 3x3
        const std::int64_t out_hw = hw / s;
        conv(out_hw, mid, out_ch, 1, 1);            // 1x1 expand
        if (b == 0) conv(hw, in_ch, out_ch, 1, s);  // projection shortcut
        hw = out_hw;
        in_ch = out_ch;
      }
    }
    add(OpKind::kMatmul, {1, 1000, 2048});
    add(OpKind::kSoftmax, {1, 1000});
  } else if (model == "mobilenet_v2") {
    conv(224, 3, 32, 3, 2);
    // Inverted residual blocks (expansion t, channels c, repeats n, stride s).
    const std::int64_t blocks[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                       {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    std::int64_t hw = 112, in_ch = 32;
    for (const auto& bl : blocks) {
      for (std::int64_t r = 0; r < bl[2]; ++r) {
        const std::int64_t s = r == 0 ? bl[3] : 1, hidden = in_ch * bl[0];
        if (bl[0] != 1) conv(hw, in_ch, hidden, 1, 1);
        add(OpKind::kDepthwiseConv2d, {1, hw, hw, hidden, 3, 3, s, 1});
        hw /= s;
        conv(hw, hidden, bl[1], 1, 1);
        in_ch = bl[1];
      }
    }
    conv(7, 320, 1280, 1, 1);
    add(OpKind::kMatmul, {1, 1000, 1280});
    add(OpKind::kSoftmax, {1, 1000});
  } else if (model == "bert") {
    // One encoder layer (x12 in the network), sequence 128, hidden 768, 12 heads.
    for (int layer = 0; layer < 12; ++layer) {
      for (int qkv = 0; qkv < 3; ++qkv) add(OpKind::kMatmul, {128, 768, 768});
      add(OpKind::kBatchMatmul, {12, 128, 128, 64});  // Q K^T
      add(OpKind::kSoftmax, {12 * 128, 128});         // attention probabilities
      add(OpKind::kBatchMatmul, {12, 128, 64, 128});  // P V
      add(OpKind::kMatmul, {128, 768, 768});          // attention output
      add(OpKind::kMatmul, {128, 3072, 768});         // FFN up
      add(OpKind::kMatmul, {128, 768, 3072});         // FFN down
    }
    add(OpKind::kMatmul, {1, 768, 768});  // pooler
  } else {
    return Status::invalid_argument("unknown model '" + std::string(model) + "' (resnet50, mobilenet_v2, bert)");
  }
  return tasks;
}

}  // namespace tcl::measure
