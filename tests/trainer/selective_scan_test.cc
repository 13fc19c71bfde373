// tests/trainer/selective_scan_test.cc — the scan kernels against a naive
// torch-ops reference (forward, and backward through autograd on the
// reference) and against finite differences in float64; selective_scan_ops
// (the path off the CPU) against the kernels, on the CPU.
#include "trainer/selective_scan.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace tcl::trainer {
namespace {

struct ScanInputs {
  torch::Tensor u, delta, A, Bm, Cm, D;
  std::vector<torch::Tensor*> all() { return {&u, &delta, &A, &Bm, &Cm, &D}; }
};

ScanInputs make_inputs(int64_t B, int64_t L, int64_t Dm, int64_t N, torch::Dtype dtype, uint64_t seed) {
  torch::manual_seed(seed);
  const auto o = torch::TensorOptions().dtype(dtype);
  ScanInputs in;
  in.u = torch::randn({B, L, Dm}, o);
  in.delta = torch::softplus(torch::randn({B, L, Dm}, o) - 1.0);
  in.A = -torch::exp(0.5 * torch::randn({Dm, N}, o));
  in.Bm = torch::randn({B, L, N}, o);
  in.Cm = torch::randn({B, L, N}, o);
  in.D = torch::randn({Dm}, o);
  return in;
}

// The recurrence written with torch ops, one step at a time.
torch::Tensor reference_scan(const ScanInputs& in) {
  const int64_t B = in.u.size(0), L = in.u.size(1), Dm = in.u.size(2), N = in.A.size(1);
  torch::Tensor h = torch::zeros({B, Dm, N}, in.u.options());
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < L; ++t) {
    const torch::Tensor dt = in.delta.select(1, t);  // [B, Dm]
    const torch::Tensor ut = in.u.select(1, t);
    h = torch::exp(dt.unsqueeze(-1) * in.A.unsqueeze(0)) * h +
        (dt * ut).unsqueeze(-1) * in.Bm.select(1, t).unsqueeze(1);
    ys.push_back((h * in.Cm.select(1, t).unsqueeze(1)).sum(-1) + in.D * ut);
  }
  return torch::stack(ys, 1);
}

TEST(SelectiveScanTest, ForwardMatchesReferenceFloat32) {
  ScanInputs in = make_inputs(3, 17, 8, 5, torch::kFloat, 1);
  const torch::Tensor y = selective_scan_forward(in.u, in.delta, in.A, in.Bm, in.Cm, in.D);
  const torch::Tensor ref = reference_scan(in);
  EXPECT_LT((y - ref).abs().max().item<double>(), 1e-5);
}

TEST(SelectiveScanTest, ForwardMatchesReferenceFloat64) {
  ScanInputs in = make_inputs(3, 17, 8, 5, torch::kDouble, 2);
  const torch::Tensor y = selective_scan_forward(in.u, in.delta, in.A, in.Bm, in.Cm, in.D);
  EXPECT_LT((y - reference_scan(in)).abs().max().item<double>(), 1e-12);
}

TEST(SelectiveScanTest, BackwardMatchesAutogradThroughReference) {
  ScanInputs in = make_inputs(4, 11, 6, 4, torch::kDouble, 3);
  for (torch::Tensor* t : in.all()) t->requires_grad_(true);
  const torch::Tensor w = torch::randn({4, 11, 6}, torch::kDouble);

  (selective_scan(in.u, in.delta, in.A, in.Bm, in.Cm, in.D) * w).sum().backward();
  std::vector<torch::Tensor> ours;
  for (torch::Tensor* t : in.all()) {
    ours.push_back(t->grad().clone());
    t->mutable_grad().reset();
  }
  (reference_scan(in) * w).sum().backward();
  const char* names[] = {"u", "delta", "A", "Bm", "Cm", "D"};
  for (size_t i = 0; i < ours.size(); ++i) {
    const torch::Tensor ref = in.all()[i]->grad();
    EXPECT_LT((ours[i] - ref).abs().max().item<double>(), 1e-10) << names[i];
  }
}

TEST(SelectiveScanTest, GradientMatchesFiniteDifferences) {
  ScanInputs in = make_inputs(2, 6, 3, 4, torch::kDouble, 4);
  const torch::Tensor w = torch::randn({2, 6, 3}, torch::kDouble);
  const auto loss = [&] {
    return (selective_scan_forward(in.u, in.delta, in.A, in.Bm, in.Cm, in.D) * w).sum().item<double>();
  };
  const SelectiveScanGrads g = selective_scan_backward(w, in.u, in.delta, in.A, in.Bm, in.Cm, in.D);
  const torch::Tensor* grads[] = {&g.u, &g.delta, &g.A, &g.Bm, &g.Cm, &g.D};
  const char* names[] = {"u", "delta", "A", "Bm", "Cm", "D"};
  const double eps = 1e-6;
  int checked = 0;
  for (size_t k = 0; k < 6; ++k) {
    torch::Tensor x = in.all()[k]->view({-1});  // aliases the input
    const torch::Tensor analytic = grads[k]->reshape({-1});
    double* p = x.data_ptr<double>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double saved = p[i];
      p[i] = saved + eps;
      const double up = loss();
      p[i] = saved - eps;
      const double down = loss();
      p[i] = saved;
      const double numeric = (up - down) / (2 * eps);
      const double a = analytic[i].item<double>();
      EXPECT_NEAR(a, numeric, 1e-7 + 1e-6 * std::abs(numeric)) << names[k] << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * 6 * 3 * 2 + 3 * 4 + 2 * 6 * 4 * 2 + 3);
}

TEST(SelectiveScanTest, ResultsDoNotDependOnThreadCount) {
  ScanInputs in = make_inputs(9, 13, 16, 8, torch::kFloat, 5);
  const torch::Tensor w = torch::randn({9, 13, 16});
  const int before = torch::get_num_threads();
  torch::set_num_threads(1);
  const torch::Tensor y1 = selective_scan_forward(in.u, in.delta, in.A, in.Bm, in.Cm, in.D);
  const SelectiveScanGrads g1 = selective_scan_backward(w, in.u, in.delta, in.A, in.Bm, in.Cm, in.D);
  torch::set_num_threads(2);
  const torch::Tensor y2 = selective_scan_forward(in.u, in.delta, in.A, in.Bm, in.Cm, in.D);
  const SelectiveScanGrads g2 = selective_scan_backward(w, in.u, in.delta, in.A, in.Bm, in.Cm, in.D);
  torch::set_num_threads(before);
  EXPECT_TRUE(torch::equal(y1, y2));
  EXPECT_TRUE(torch::equal(g1.u, g2.u));
  EXPECT_TRUE(torch::equal(g1.delta, g2.delta));
  EXPECT_TRUE(torch::equal(g1.A, g2.A));
  EXPECT_TRUE(torch::equal(g1.Bm, g2.Bm));
  EXPECT_TRUE(torch::equal(g1.Cm, g2.Cm));
  EXPECT_TRUE(torch::equal(g1.D, g2.D));
}

TEST(SelectiveScanTest, AcceptsStridedInputs) {
  ScanInputs in = make_inputs(2, 7, 4, 3, torch::kFloat, 6);
  // B and C as views into one projection, as the Mamba block produces them.
  const torch::Tensor bc = torch::cat({in.Bm, in.Cm}, -1);
  const torch::Tensor Bm = bc.narrow(-1, 0, 3), Cm = bc.narrow(-1, 3, 3);
  ASSERT_FALSE(Bm.is_contiguous());
  const torch::Tensor u_t = in.u.transpose(0, 1).contiguous().transpose(0, 1);
  ASSERT_FALSE(u_t.is_contiguous());
  const torch::Tensor y = selective_scan(u_t, in.delta, in.A, Bm, Cm, in.D);
  EXPECT_LT((y - reference_scan(in)).abs().max().item<double>(), 1e-5);
}

TEST(SelectiveScanTest, RejectsBadShapesAndDtypes) {
  ScanInputs in = make_inputs(2, 5, 4, 3, torch::kFloat, 7);
  EXPECT_THROW(selective_scan(in.u, in.delta.narrow(1, 0, 4), in.A, in.Bm, in.Cm, in.D), c10::Error);
  EXPECT_THROW(selective_scan(in.u, in.delta, in.A.t(), in.Bm, in.Cm, in.D), c10::Error);
  EXPECT_THROW(selective_scan(in.u, in.delta, in.A, in.Bm, in.Cm.narrow(2, 0, 2), in.D), c10::Error);
  EXPECT_THROW(selective_scan(in.u, in.delta, in.A, in.Bm, in.Cm, in.D.to(torch::kDouble)), c10::Error);
}

TEST(SelectiveScanTest, EmptyBatchAndSingleStep) {
  ScanInputs empty = make_inputs(0, 4, 3, 2, torch::kFloat, 8);
  EXPECT_EQ(selective_scan_forward(empty.u, empty.delta, empty.A, empty.Bm, empty.Cm, empty.D).sizes(),
            torch::IntArrayRef({0, 4, 3}));
  ScanInputs one = make_inputs(2, 1, 3, 2, torch::kDouble, 9);
  EXPECT_LT((selective_scan_forward(one.u, one.delta, one.A, one.Bm, one.Cm, one.D) - reference_scan(one))
                .abs()
                .max()
                .item<double>(),
            1e-12);
}

// What CUDA runs, checked here on the CPU: the same outputs and gradients
// as the kernels, to float64 rounding.
TEST(SelectiveScanTest, OpsMatchKernelsForwardAndBackward) {
  ScanInputs in = make_inputs(4, 13, 6, 4, torch::kDouble, 10);
  for (torch::Tensor* t : in.all()) t->requires_grad_(true);
  const torch::Tensor w = torch::randn({4, 13, 6}, torch::kDouble);

  const torch::Tensor y_kernel = selective_scan(in.u, in.delta, in.A, in.Bm, in.Cm, in.D);
  (y_kernel * w).sum().backward();
  std::vector<torch::Tensor> kernel_grads;
  for (torch::Tensor* t : in.all()) {
    kernel_grads.push_back(t->grad().clone());
    t->mutable_grad().reset();
  }
  const torch::Tensor y_ops = selective_scan_ops(in.u, in.delta, in.A, in.Bm, in.Cm, in.D);
  EXPECT_LT((y_ops - y_kernel).abs().max().item<double>(), 1e-12);
  (y_ops * w).sum().backward();
  const char* names[] = {"u", "delta", "A", "Bm", "Cm", "D"};
  for (size_t i = 0; i < kernel_grads.size(); ++i) {
    EXPECT_LT((in.all()[i]->grad() - kernel_grads[i]).abs().max().item<double>(), 1e-10) << names[i];
  }
}

TEST(SelectiveScanTest, OpsFloat32SingleStepAndEmpty) {
  ScanInputs in = make_inputs(3, 17, 8, 5, torch::kFloat, 11);
  const torch::Tensor y = selective_scan_ops(in.u, in.delta, in.A, in.Bm, in.Cm, in.D);
  EXPECT_LT((y - selective_scan_forward(in.u, in.delta, in.A, in.Bm, in.Cm, in.D)).abs().max().item<double>(), 1e-5);
  ScanInputs one = make_inputs(2, 1, 3, 2, torch::kDouble, 12);
  EXPECT_LT((selective_scan_ops(one.u, one.delta, one.A, one.Bm, one.Cm, one.D) - reference_scan(one))
                .abs()
                .max()
                .item<double>(),
            1e-12);
  ScanInputs none = make_inputs(2, 0, 3, 2, torch::kFloat, 13);
  EXPECT_EQ(selective_scan_ops(none.u, none.delta, none.A, none.Bm, none.Cm, none.D).sizes(),
            torch::IntArrayRef({2, 0, 3}));
  EXPECT_THROW(selective_scan_ops(in.u, in.delta, in.A.t(), in.Bm, in.Cm, in.D), c10::Error);
}

}  // namespace
}  // namespace tcl::trainer
