// api/scoring.h — the one place a loaded model version scores programs, for
// POST /v1/predict (records in, tokens made here) and the v2 infer route
// (tokens as the client sent them):
//
//   featurized batch (trainer::FeatureBatch: tokens, lengths, and the
//   platform's descriptor)
//     → the version's fast path when it has one (a Mamba student,
//       trainer::StudentInference), else the CostModel facade
//     → one score per program, higher = faster
//     → check_scores(): every score finite, or a 500 in our words
//
// Which model a platform gets (its adapter folded in) is ModelCache's
// (api/model_cache.h); its descriptor is DescriptorCache's.
//
// Thread-safety: free functions over a const LoadedModel; concurrent calls
// are safe (the model's predict is const).
#pragma once

#include <span>
#include <string_view>

#include "api/model_cache.h"
#include "core/status.h"
#include "trainer/cost_model.h"

namespace tcl::api {

// scores[i] = the score of program i; scores.size() == batch.count. An empty
// batch scores nothing. kInvalidArgument (trainer::check_batch's words) when
// the batch does not fit the model's config; other errors from the model.
Status score_batch(const LoadedModel& model, const trainer::FeatureBatch& batch, std::span<float> scores);

// OK when every score is finite; else kInternal naming the version and the
// first program with a non-finite score (a 500: our bug, not the client's).
Status check_scores(const LoadedModel& model, std::span<const float> scores);

// Whether the version was trained on `platform` (otherwise its scores are a
// zero-shot guess from the hardware descriptor).
bool platform_covered(const LoadedModel& model, std::string_view platform);

}  // namespace tcl::api
