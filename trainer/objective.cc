// trainer/objective.cc — one batch's loss: the label loss, KD terms, EWC.
#include "trainer/objective.h"

#include "trainer/distill_loss.h"

namespace tcl::trainer {

LabelLossOptions label_loss_options(const Optimisation& opt) {
  return {.kind = opt.label_loss,
          .lambda_rank = {.sigma = opt.lambda_sigma, .ndcg_at = opt.ndcg_at, .gain_power = opt.gain_power},
          .listwise_beta = opt.listwise_beta};
}

torch::Tensor label_loss(const torch::Tensor& scores, const Batch& batch, const LabelLossOptions& options) {
  if (options.kind == LabelLoss::kListwise) {
    return listwise_kd(scores, options.listwise_beta * batch.labels.to(scores.dtype()), batch.chunk_sizes, 1.0);
  }
  return lambda_rank_loss(scores, batch.labels, batch.groups, options.lambda_rank);
}

double old_term_weight(const DistillTargets& w, const DistillLevers& levers, std::size_t j, bool old_bank) {
  if (old_bank || levers.old_weight_on_new_programs.empty()) return w.old_weight;
  return w.old_weight * levers.old_weight_on_new_programs.at(j);
}

namespace {

torch::Tensor expanded(const torch::Tensor& h, const Batch& batch) { return h.expand({batch.size(), h.size(1)}); }

// The teacher's embeddings of the batch under every old descriptor, for the
// feature term (the batch encoded once).
std::vector<torch::Tensor> teacher_embeddings(const DistillTerms& distill, const Batch& batch) {
  std::vector<torch::Tensor> descriptors;
  for (const torch::Tensor& h : distill.old_descriptors) descriptors.push_back(expanded(h, batch));
  torch::NoGradGuard no_grad;
  return distill.teacher->embed_each(batch.tokens, batch.lengths, descriptors);
}

// Old platform j's terms on a batch: weight · KD(S(x, h_j), T_j), plus the
// feature term where the teacher's embedding is given (one student forward
// serves both: the scores are the head's reading of the embedding).
torch::Tensor old_platform_terms(ScoreModel& model, const BatchSource& src, const Batch& batch,
                                 const DistillTerms& distill, std::size_t j, double weight,
                                 const torch::Tensor* teacher_embedding) {
  const DistillTargets& w = distill.weights;
  const torch::Tensor hb = expanded(distill.old_descriptors[j], batch);
  const torch::Tensor target = gather_rows(src.old_targets[j], batch, batch.tokens.device());
  if (teacher_embedding == nullptr) {
    return weight *
           listwise_kd(model.forward(batch.tokens, batch.lengths, hb), target, batch.chunk_sizes, w.temperature);
  }
  const torch::Tensor embedding = model.embed(batch.tokens, batch.lengths, hb);
  return distill.levers.feature_weight * feature_kd(embedding, *teacher_embedding) +
         weight * listwise_kd(model.score_embedding(embedding), target, batch.chunk_sizes, w.temperature);
}

}  // namespace

torch::Tensor batch_loss(ScoreModel& model, const BatchSource& src, const Batch& batch, const DistillTerms* distill,
                         const LabelLossOptions& loss_options) {
  const std::int64_t b = batch.size();
  const bool column_term = distill != nullptr && !src.column_target.empty() && distill->weights.column_weight > 0;
  // The scores under the source's own descriptor, unless no term reads them
  // (the old platforms' bank).
  torch::Tensor scores;
  if (src.labeled || column_term)
    scores = model.forward(batch.tokens, batch.lengths, src.descriptor.expand({b, src.descriptor.size(1)}));
  torch::Tensor loss = src.labeled ? label_loss(scores, batch, loss_options) : torch::zeros({}, batch.tokens.options());
  if (distill == nullptr) return loss;
  const DistillTargets& w = distill->weights;
  const torch::Device device = batch.tokens.device();
  loss = w.label_weight * loss;
  if (column_term) {
    loss = loss + w.column_weight * listwise_kd(scores, gather_rows(src.column_target, batch, device),
                                                batch.chunk_sizes, w.temperature);
  }
  const bool feature_term = src.old_bank && distill->teacher != nullptr && distill->levers.feature_weight > 0;
  const std::vector<torch::Tensor> teacher =
      feature_term ? teacher_embeddings(*distill, batch) : std::vector<torch::Tensor>{};
  for (std::size_t j = 0; j < src.old_targets.size(); ++j) {
    const double weight = old_term_weight(w, distill->levers, j, src.old_bank);
    if (!(weight > 0)) continue;  // no forward pass for a term that weighs nothing
    loss = loss + old_platform_terms(model, src, batch, *distill, j, weight, feature_term ? &teacher[j] : nullptr);
  }
  if (!distill->fisher.empty()) {
    loss = loss + w.ewc_weight * ewc_penalty(model.parameters(), distill->anchor, distill->fisher);
  }
  return loss;
}

}  // namespace tcl::trainer
