// trainer/objective.cc — one batch's loss: LambdaRank, KD terms, EWC.
#include "trainer/objective.h"

#include "trainer/distill_loss.h"

namespace tcl::trainer {

torch::Tensor batch_loss(ScoreModel& model, const BatchSource& src, const Batch& batch, const DistillTerms* distill,
                         const LambdaRankOptions& loss_options) {
  const std::int64_t b = batch.size();
  const bool column_term = distill != nullptr && !src.column_target.empty() && distill->weights.column_weight > 0;
  // The scores under the source's own descriptor, unless no term reads them
  // (the old platforms' bank).
  torch::Tensor scores;
  if (src.labeled || column_term)
    scores = model.forward(batch.tokens, batch.lengths, src.descriptor.expand({b, src.descriptor.size(1)}));
  torch::Tensor loss = src.labeled ? lambda_rank_loss(scores, batch.labels, batch.groups, loss_options)
                                   : torch::zeros({}, batch.tokens.options());
  if (distill == nullptr) return loss;
  const DistillTargets& w = distill->weights;
  const torch::Device device = batch.tokens.device();
  loss = w.label_weight * loss;
  if (column_term) {
    loss = loss + w.column_weight * listwise_kd(scores, gather_rows(src.column_target, batch, device),
                                                batch.chunk_sizes, w.temperature);
  }
  for (std::size_t j = 0; j < src.old_targets.size() && w.old_weight > 0; ++j) {
    const torch::Tensor& h = distill->old_descriptors[j];
    const torch::Tensor old_scores = model.forward(batch.tokens, batch.lengths, h.expand({b, h.size(1)}));
    loss = loss + w.old_weight * listwise_kd(old_scores, gather_rows(src.old_targets[j], batch, device),
                                             batch.chunk_sizes, w.temperature);
  }
  if (!distill->fisher.empty()) {
    loss = loss + w.ewc_weight * ewc_penalty(model.parameters(), distill->anchor, distill->fisher);
  }
  return loss;
}

}  // namespace tcl::trainer
