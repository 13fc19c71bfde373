// trainer/fisher.cc — squared gradients over batches, scaled to mean 1.
#include "trainer/fisher.h"

#include <algorithm>
#include <cstring>

namespace tcl::trainer {

std::vector<torch::Tensor> diagonal_fisher(ScoreModel& model, const SplitTensors& split,
                                           const torch::Tensor& descriptor, const std::vector<ChunkBatch>& batches,
                                           const LabelLossOptions& loss_options,
                                           const std::function<void(std::size_t done)>& done) {
  if (batches.empty()) return {};
  std::vector<torch::Tensor> sum;
  for (const torch::Tensor& p : model.parameters()) sum.push_back(torch::zeros_like(p));
  std::size_t batches_done = 0;
  for (const ChunkBatch& chunks : batches) {
    const Batch batch = gather_batch(chunks, split);
    const torch::Tensor scores =
        model.forward(batch.tokens, batch.lengths, descriptor.expand({batch.size(), descriptor.size(1)}));
    const torch::Tensor loss = label_loss(scores, batch, loss_options);
    model.zero_grad();
    loss.backward();
    std::size_t i = 0;
    for (const torch::Tensor& p : model.parameters()) {
      if (p.grad().defined()) sum[i] += p.grad().detach().pow(2);
      ++i;
    }
    if (done) done(++batches_done);
  }
  model.zero_grad();
  double total = 0;
  std::int64_t count = 0;
  for (const torch::Tensor& f : sum) {
    total += f.sum().item<double>();
    count += f.numel();
  }
  const double mean = total / static_cast<double>(std::max<std::int64_t>(count, 1));
  for (torch::Tensor& f : sum) f.div_(mean > 0 ? mean : 1.0);
  return sum;
}

std::string fisher_bytes(const std::vector<torch::Tensor>& fisher) {
  std::string out;
  for (const torch::Tensor& f : fisher) {
    const torch::Tensor c = f.to(torch::kCPU, torch::kFloat).contiguous();
    out.append(reinterpret_cast<const char*>(c.data_ptr<float>()), static_cast<std::size_t>(c.numel()) * sizeof(float));
  }
  return out;
}

Result<std::vector<torch::Tensor>> fisher_tensors(std::string_view bytes, ScoreModel& model) {
  std::vector<torch::Tensor> out;
  std::size_t offset = 0;
  for (const torch::Tensor& p : model.parameters()) {
    const std::size_t n = static_cast<std::size_t>(p.numel()) * sizeof(float);
    if (offset + n > bytes.size()) break;
    torch::Tensor f = torch::empty(p.sizes(), torch::kFloat);
    std::memcpy(f.data_ptr<float>(), bytes.data() + offset, n);
    out.push_back(f.to(p.device()));
    offset += n;
  }
  if (offset != bytes.size() || out.size() != model.parameters().size()) {
    return Status::invalid_argument("train: teacher_fisher holds " + std::to_string(bytes.size()) +
                                    " bytes; the teacher has " + std::to_string(model.num_parameters()) +
                                    " parameters (" + std::to_string(4 * model.num_parameters()) + " bytes)");
  }
  return out;
}

}  // namespace tcl::trainer
