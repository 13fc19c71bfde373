#include "measure/operators.h"

#include <gtest/gtest.h>

#include <set>

namespace tcl::measure {
namespace {

TEST(OperatorsTest, WorkloadKeysRoundTrip) {
  const Workload ws[] = {{OpKind::kMatmul, {128, 768, 3072}},
                         {OpKind::kBatchMatmul, {12, 128, 128, 64}},
                         {OpKind::kConv2d, {1, 56, 56, 64, 64, 3, 3, 1, 1}},
                         {OpKind::kDepthwiseConv2d, {1, 112, 112, 96, 3, 3, 2, 1}},
                         {OpKind::kSoftmax, {1536, 128}}};
  for (const auto& w : ws) {
    const std::string key = encode_workload_key(w);
    auto back = decode_workload_key(key);
    ASSERT_TRUE(back) << key << ": " << back.status().message();
    EXPECT_EQ(*back, w) << key;
  }
  EXPECT_EQ(encode_workload_key(ws[0]), R"(["tcl.matmul", 128, 768, 3072])");
}

TEST(OperatorsTest, BadKeysAreRejectedWithAReason) {
  for (const char* key : {"", "[]", R"(["tcl.matmul", 1, 2])", R"(["tcl.nope", 1])", R"(["tcl.matmul", 1, 0, 2])",
                          R"(["011385bbf27c1331dfbf54ddc846ab29", [1, 64]])", R"(["tcl.matmul", 1, 2, 2.5])",
                          R"(["tcl.conv2d_nhwc", 1, 2, 2, 3, 4, 5, 5, 1, 0])"}) {
    auto w = decode_workload_key(key);
    ASSERT_FALSE(w) << key;
    EXPECT_FALSE(w.status().message().empty()) << key;
  }
}

TEST(OperatorsTest, LoopExtentsFollowTheShapes) {
  // ResNet-50's first convolution: 224 -> 112 with a 7x7 kernel, stride 2, pad 3.
  const LoopExtents e = loop_extents({OpKind::kConv2d, {1, 224, 224, 3, 64, 7, 7, 2, 3}});
  EXPECT_EQ(e.spatial, (std::vector<std::int64_t>{1, 112, 112, 64}));
  EXPECT_EQ(e.reduce, (std::vector<std::int64_t>{7, 7, 3}));
  const LoopExtents d = loop_extents({OpKind::kDepthwiseConv2d, {1, 112, 112, 96, 3, 3, 2, 1}});
  EXPECT_EQ(d.spatial, (std::vector<std::int64_t>{1, 56, 56, 96}));
  EXPECT_EQ(d.reduce, (std::vector<std::int64_t>{3, 3}));
}

TEST(OperatorsTest, ModelsHaveTheirRealOperators) {
  auto resnet = model_tasks("resnet50");
  ASSERT_TRUE(resnet);
  std::set<std::string> keys;
  int weight = 0;
  for (const auto& t : *resnet) {
    keys.insert(encode_workload_key(t.workload));
    weight += t.weight;
  }
  EXPECT_EQ(keys.size(), resnet->size());  // distinct
  EXPECT_TRUE(keys.count(R"(["tcl.conv2d_nhwc", 1, 224, 224, 3, 64, 7, 7, 2, 3])"));
  EXPECT_TRUE(keys.count(R"(["tcl.conv2d_nhwc", 1, 14, 14, 256, 256, 3, 3, 1, 1])"));
  EXPECT_TRUE(keys.count(R"(["tcl.matmul", 1, 1000, 2048])"));
  EXPECT_EQ(weight, 53 + 2);  // 53 convolutions (incl. 4 projections), fc, softmax

  auto mobilenet = model_tasks("mobilenet_v2");
  ASSERT_TRUE(mobilenet);
  int depthwise = 0;
  for (const auto& t : *mobilenet) depthwise += t.weight * (t.workload.kind == OpKind::kDepthwiseConv2d);
  EXPECT_EQ(depthwise, 17);

  auto bert = model_tasks("bert");
  ASSERT_TRUE(bert);
  std::set<OpKind> kinds;
  for (const auto& t : *bert) kinds.insert(t.workload.kind);
  EXPECT_EQ(kinds, (std::set<OpKind>{OpKind::kMatmul, OpKind::kBatchMatmul, OpKind::kSoftmax}));
  EXPECT_EQ(bert->front().weight, 48);  // Q, K, V, attention output in 12 layers

  EXPECT_FALSE(model_tasks("vgg"));
}

}  // namespace
}  // namespace tcl::measure
