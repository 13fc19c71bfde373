// trainer/distill_loss.cc — listwise KD and EWC as torch ops.
#include "trainer/distill_loss.h"

namespace tcl::trainer {

torch::Tensor listwise_kd(const torch::Tensor& scores, const torch::Tensor& target,
                          const std::vector<std::int64_t>& chunk_sizes, double temperature) {
  torch::Tensor total = torch::zeros({}, scores.options());
  std::int64_t offset = 0, used = 0;
  for (std::int64_t n : chunk_sizes) {
    if (n >= 2) {
      const torch::Tensor s = scores.narrow(0, offset, n) / temperature;
      const torch::Tensor t = target.narrow(0, offset, n) / temperature;
      const torch::Tensor p = torch::softmax(t, 0);
      total = total + (p * (torch::log_softmax(t, 0) - torch::log_softmax(s, 0))).sum();
      ++used;
    }
    offset += n;
  }
  return used > 0 ? total / static_cast<double>(used) : total;
}

torch::Tensor feature_kd(const torch::Tensor& embedding, const torch::Tensor& target) {
  TORCH_CHECK(embedding.sizes() == target.sizes(), "feature_kd: embedding and target shapes differ");
  const torch::Tensor t = target.detach();
  const torch::Tensor size = t.pow(2).sum();
  // No .item() here: on a GPU it would wait for the device at every batch.
  const torch::Tensor nonzero = size > 0;
  const torch::Tensor safe_size = torch::where(nonzero, size, torch::ones_like(size));
  return torch::where(nonzero, (embedding - t).pow(2).sum() / safe_size, torch::zeros_like(size));
}

torch::Tensor ewc_penalty(const std::vector<torch::Tensor>& parameters, const std::vector<torch::Tensor>& anchor,
                          const std::vector<torch::Tensor>& fisher) {
  torch::Tensor ewc = torch::zeros({}, parameters.empty() ? torch::TensorOptions() : parameters[0].options());
  for (std::size_t i = 0; i < parameters.size(); ++i)
    ewc = ewc + (fisher[i] * (parameters[i] - anchor[i]).pow(2)).sum();
  return ewc;
}

}  // namespace tcl::trainer
