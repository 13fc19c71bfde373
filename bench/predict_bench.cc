// bench_predict — programs/s of the student's inference paths on real
// records (DESIGN §4 "Inference has its own fast path"; target ≥ 50k
// programs/s through the fast path on 2 cores).
//
//   bench_predict [PATH.jsonl[.gz]] [--records N] [--threads T] [--seconds S]
//                 [--chunk-tokens C] [--simd auto|avx512|avx2|baseline] [--fast-only]
//                 [--d-model D] [--n-layers K] [--d-state S] [--expand E]
//
// Reads the first N records (default 8192) of PATH (default
// ../shared/data/x86-24c/records.jsonl.gz), featurizes them with core's
// encoders (steps → [N, 72, kTokenDim] tokens, the first record's hardware
// descriptor shared by all), and reports programs/s for batches of 512 and
// 4096 programs through:
//   fast         StudentInference::predict (T threads; also 1 thread, and embed)
//   torch        MambaStudent::forward on the whole batch under NoGradGuard
//   facade       CostModel::predict (torch in chunks of 32)
//   attention    the TLP-style attention baseline's forward, same inputs
//   attn-tlp     the same baseline on TLP's own CPU encoding (25 × 22)
// torch paths run with torch::set_num_threads(T). Weights are randomly
// initialised (throughput does not depend on them). Each figure covers the
// same records for both batch sizes (N / batch windows per cycle) and is the
// best of cycles lasting at least S seconds in total (default 2); the torch
// paths, ~50x slower, make one cycle over the first 4096 records.
// The --d-model/... flags change the student's config (to size a default).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/lib/flags.h"
#include "bench/lib/timing.h"
#include "bench/lib/records.h"
#include "core/features.h"
#include "core/line_reader.h"
#include "core/record.h"
#include "trainer/cost_model.h"
#include "trainer/fast_inference.h"
#include "trainer/model_config.h"
#include "trainer/score_model.h"

namespace {

namespace core = tcl::core;
namespace trainer = tcl::trainer;
using Clock = std::chrono::steady_clock;
using tcl::bench::cpu_seconds;

struct Args {
  std::string path = "../shared/data/x86-24c/records.jsonl.gz";
  int64_t records = 8192;
  int32_t threads = 2;
  double seconds = 2.0;
  int32_t chunk_tokens = trainer::InferenceOptions{}.chunk_tokens;
  bool fast_only = false;
  trainer::SimdLevel simd = trainer::SimdLevel::kAuto;
  int64_t d_model = 0, n_layers = 0, d_state = 0, expand = 0;  // 0 = default
};

struct Data {
  int64_t n = 0;
  int64_t L = core::kDefaultMaxSteps;
  std::vector<float> tokens;     // [n, L, kTokenDim]
  std::vector<int32_t> lengths;  // [n]
  std::vector<float> tlp;        // [n, 25, 22]
  std::vector<int32_t> tlp_lengths;
  std::vector<float> descriptor;  // [kHardwareDim]
};

bool load(const Args& a, Data* d) {
  std::vector<core::Record> records;
  if (!tcl::bench::load_records(a.path, &records, a.records)) return false;
  if (records.empty()) {
    std::fprintf(stderr, "no records in %s\n", a.path.c_str());
    return false;
  }
  d->n = static_cast<int64_t>(records.size());
  d->tokens.resize(static_cast<size_t>(d->n * d->L * core::kTokenDim));
  d->lengths.resize(static_cast<size_t>(d->n));
  core::encode_tokens_batch(records, static_cast<int>(d->L), d->tokens.data(), nullptr, d->lengths.data());
  const core::TlpConfig& tc = core::kTlpCpu;
  d->tlp.resize(static_cast<size_t>(d->n * tc.seq_len * tc.emb_size));
  for (int64_t i = 0; i < d->n; ++i) {
    d->tlp_lengths.push_back(static_cast<int32_t>(
        core::encode_tlp(records[static_cast<size_t>(i)].steps, tc, d->tlp.data() + i * tc.seq_len * tc.emb_size)));
  }
  d->descriptor.resize(core::kHardwareDim);
  core::encode_hardware(records[0].hardware_params, records[0].target, d->descriptor.data());
  return true;
}

struct Rate {
  double wall = 0;  // programs per second of wall time, best cycle
  double cpu = 0;   // programs per CPU-second (all threads), best cycle
};

// Rates of fn(first, count) over one cycle: the n records in windows of
// `batch` (the same records for every batch size). Cycles repeat until
// `seconds` have passed (at least min_cycles); the best cycle counts (the
// machine is shared: the best cycle is the least disturbed).
Rate measure(int64_t n, int64_t batch, double seconds, int min_cycles,
             const std::function<void(int64_t, int64_t)>& fn) {
  fn(0, std::min<int64_t>(batch, 64));  // warm-up (scratch, allocator, caches)
  const int64_t windows = n / batch;
  const double programs = static_cast<double>(windows * batch);
  Rate best;
  double total = 0;
  for (int cycle = 0; total < seconds || cycle < min_cycles; ++cycle) {
    const auto t0 = Clock::now();
    const double c0 = cpu_seconds();
    for (int64_t w = 0; w < windows; ++w) fn(w * batch, batch);
    const double cpu = cpu_seconds() - c0;
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    total += s;
    best.wall = std::max(best.wall, programs / s);
    best.cpu = std::max(best.cpu, programs / cpu);
  }
  return best;
}

trainer::ModelConfig student_config(const Args& a) {
  trainer::ModelConfig c;
  c.token_dim = core::kTokenDim;
  c.descriptor_dim = core::kHardwareDim;
  c.max_len = core::kDefaultMaxSteps;
  if (a.d_model > 0) c.d_model = a.d_model;
  if (a.n_layers > 0) c.n_layers = a.n_layers;
  if (a.d_state > 0) c.d_state = a.d_state;
  if (a.expand > 0) c.expand = a.expand;
  return c;
}

void fail(const tcl::Status& s) {
  std::fprintf(stderr, "%s\n", s.to_string().c_str());
  std::exit(1);
}

// Reads the command line into *a; false, with the reason on stderr, when it does not fit.
bool parse_args(int argc, char** argv, Args* a) {
  std::vector<std::string> paths;
  tcl::bench::Flags flags;
  flags.positional("path", &paths, 1)
      .value("records", &a->records)
      .value("threads", &a->threads)
      .value("seconds", &a->seconds)
      .value("chunk-tokens", &a->chunk_tokens)
      .flag("fast-only", &a->fast_only)
      .custom("simd",
              [a](const std::string& v) {
                for (const auto level : {trainer::SimdLevel::kAuto, trainer::SimdLevel::kAvx512,
                                         trainer::SimdLevel::kAvx2, trainer::SimdLevel::kBaseline}) {
                  if (trainer::simd_level_name(level) == v) {
                    a->simd = level;
                    return true;
                  }
                }
                std::fprintf(stderr, "--simd takes auto, avx512, avx2 or baseline, not '%s'\n", v.c_str());
                return false;
              })
      .value("d-model", &a->d_model)
      .value("n-layers", &a->n_layers)
      .value("d-state", &a->d_state)
      .value("expand", &a->expand);
  if (!flags.parse(argc, argv)) return false;
  if (!paths.empty()) a->path = paths[0];
  return true;
}

// A model the bench builds, or exit(1) with the reason.
std::shared_ptr<trainer::ScoreModel> model_of(const trainer::ModelConfig& config) {
  auto m = trainer::make_score_model(config);
  if (!m) fail(m.status());
  return *m;
}

// What is timed: the student in torch, through the facade and on the fast
// path (--threads and one thread), and the two attention baselines.
struct Models {
  trainer::ModelConfig config;
  std::shared_ptr<trainer::ScoreModel> student, attention, attention_tlp;
  std::unique_ptr<trainer::CostModel> facade;
  std::unique_ptr<trainer::StudentInference> fast, fast1;
};

Models build_models(const Args& a) {
  Models m;
  m.config = student_config(a);
  m.student = model_of(m.config);
  trainer::ModelConfig att_config = m.config;
  att_config.kind = trainer::ModelKind::kAttention;
  m.attention = model_of(att_config);
  trainer::ModelConfig tlp_config = att_config;
  tlp_config.token_dim = core::kTlpCpu.emb_size;
  tlp_config.max_len = core::kTlpCpu.seq_len;
  m.attention_tlp = model_of(tlp_config);
  m.facade = trainer::CostModel::wrap(m.student);
  trainer::InferenceOptions options;
  options.threads = a.threads;
  options.chunk_tokens = a.chunk_tokens;
  options.simd = a.simd;
  auto fast = trainer::StudentInference::create(*m.student, options);
  if (!fast) fail(fast.status());
  m.fast = std::move(*fast);
  options.threads = 1;
  auto fast1 = trainer::StudentInference::create(*m.student, options);
  if (!fast1) fail(fast1.status());
  m.fast1 = std::move(*fast1);
  return m;
}

// The records' lengths, the student's shape and the fast path's settings.
void print_setup(const Args& a, const Data& data, const Models& m) {
  int64_t tokens = 0;
  for (int32_t l : data.lengths) tokens += l;
  std::vector<int32_t> sorted = data.lengths;
  std::sort(sorted.begin(), sorted.end());
  const trainer::ModelConfig& config = m.config;
  const int64_t n_params = m.student->num_parameters();
  std::printf("records: %lld from %s; steps per program: mean %.1f, median %d, max %d\n",
              static_cast<long long>(data.n), a.path.c_str(), static_cast<double>(tokens) / static_cast<double>(data.n),
              sorted[sorted.size() / 2], sorted.back());
  std::printf(
      "student: d_model %lld, n_layers %lld, d_state %lld, expand %lld, d_conv %lld, "
      "token_dim %lld, descriptor_dim %lld, max_len %lld: %lld parameters, %.3f MB fp32\n",
      static_cast<long long>(config.d_model), static_cast<long long>(config.n_layers),
      static_cast<long long>(config.d_state), static_cast<long long>(config.expand),
      static_cast<long long>(config.d_conv), static_cast<long long>(config.token_dim),
      static_cast<long long>(config.descriptor_dim), static_cast<long long>(config.max_len),
      static_cast<long long>(n_params), static_cast<double>(n_params) * 4 / 1e6);
  std::printf("fast path: %s kernels, chunk_tokens %d; threads %d (torch intra-op threads %d)\n",
              std::string(trainer::simd_level_name(m.fast->simd_level())).c_str(), a.chunk_tokens, a.threads,
              torch::get_num_threads());
}

// One table row per path: programs/s at batch 512 and 4096. Torch paths
// (`slow`) are ~50x slower: one cycle over the first 4096 records.
class Table {
 public:
  Table(const Args& a, const Data& data) : a_(a), data_(data) {
    std::printf(
        "\nprograms/s (wall clock, best cycle) [programs per CPU-second, all threads];\n"
        "torch rows: the first %lld records\n",
        static_cast<long long>(std::min<int64_t>(data.n, 4096)));
    std::printf("%-36s %24s %24s\n", "path", "batch 512", "batch 4096");
  }
  void row(const char* name, const std::function<void(int64_t, int64_t)>& fn, bool slow = false) const {
    std::printf("%-36s", name);
    const int64_t n = slow ? std::min<int64_t>(data_.n, 4096) : data_.n;
    for (int64_t batch : {int64_t{512}, int64_t{4096}}) {
      if (batch > n) {
        std::printf(" %24s", "-");
        continue;
      }
      const Rate r = measure(n, batch, slow ? 0.0 : a_.seconds, slow ? 1 : 2, fn);
      std::printf(" %12.0f [%9.0f]", r.wall, r.cpu);
      std::fflush(stdout);
    }
    std::printf("\n");
  }

 private:
  const Args& a_;
  const Data& data_;
};

// Records [first, first + count) as the fast path's and the facade's input.
trainer::FeatureBatch batch_view(const Data& data, int64_t first, int64_t count) {
  const int64_t row = data.L * core::kTokenDim;
  return trainer::FeatureBatch{count, data.L, std::span<const float>(data.tokens).subspan(first * row, count * row),
                               std::span<const int32_t>(data.lengths).subspan(first, count), data.descriptor};
}

void time_fast_paths(const Data& data, const Models& m, const Table& table) {
  std::vector<float> scores(static_cast<size_t>(std::min<int64_t>(data.n, 4096)));
  std::vector<float> emb(scores.size() * static_cast<size_t>(m.config.d_model));
  table.row("fast predict", [&](int64_t f, int64_t c) {
    if (auto s = m.fast->predict(batch_view(data, f, c), std::span<float>(scores).first(c)); !s) fail(s);
  });
  table.row("fast predict, 1 thread", [&](int64_t f, int64_t c) {
    if (auto s = m.fast1->predict(batch_view(data, f, c), std::span<float>(scores).first(c)); !s) fail(s);
  });
  table.row("fast embed", [&](int64_t f, int64_t c) {
    if (auto s = m.fast->embed(batch_view(data, f, c), std::span<float>(emb).first(c * m.config.d_model)); !s) fail(s);
  });
}

void time_torch_paths(Data& data, const Models& m, const Table& table) {
  torch::NoGradGuard no_grad;
  const int64_t kd = core::kHardwareDim;
  const int64_t row = data.L * core::kTokenDim;
  std::vector<float> scores(static_cast<size_t>(std::min<int64_t>(data.n, 4096)));
  const auto tensors = [&](int64_t f, int64_t c, int64_t L) {
    torch::Tensor t = torch::from_blob(data.tokens.data() + f * row, {c, data.L, core::kTokenDim});
    torch::Tensor l = torch::from_blob(data.lengths.data() + f, {c}, torch::kInt).to(torch::kLong);
    torch::Tensor d = torch::from_blob(data.descriptor.data(), {1, kd}).expand({c, kd});
    return std::make_tuple(t.narrow(1, 0, L), l, d);
  };
  const auto forward = [&](trainer::ScoreModel& model, int64_t f, int64_t c, int64_t L) {
    auto [t, l, d] = tensors(f, c, L);
    model.forward(t, l, d);
  };
  table.row(
      "torch forward (L = 72)", [&](int64_t f, int64_t c) { forward(*m.student, f, c, data.L); }, true);
  table.row(
      "torch forward (L = batch's longest)",
      [&](int64_t f, int64_t c) {
        const int32_t L = *std::max_element(data.lengths.begin() + f, data.lengths.begin() + f + c);
        forward(*m.student, f, c, std::max(L, 1));
      },
      true);
  table.row(
      "facade CostModel::predict",
      [&](int64_t f, int64_t c) {
        if (auto s = m.facade->predict(batch_view(data, f, c), std::span<float>(scores).first(c)); !s) fail(s);
      },
      true);
  table.row(
      "attention forward (L = 72)", [&](int64_t f, int64_t c) { forward(*m.attention, f, c, data.L); }, true);
  table.row(
      "attention forward (TLP 25 x 22)",
      [&](int64_t f, int64_t c) {
        const int64_t tl = core::kTlpCpu.seq_len, te = core::kTlpCpu.emb_size;
        torch::Tensor t = torch::from_blob(data.tlp.data() + f * tl * te, {c, tl, te});
        torch::Tensor l = torch::from_blob(data.tlp_lengths.data() + f, {c}, torch::kInt).to(torch::kLong);
        torch::Tensor d = torch::from_blob(data.descriptor.data(), {1, kd}).expand({c, kd});
        m.attention_tlp->forward(t, l, d);
      },
      true);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse_args(argc, argv, &a)) return 2;
  Data data;
  if (!load(a, &data)) return 1;
  const Models models = build_models(a);
  torch::set_num_threads(a.threads);
  print_setup(a, data, models);
  const Table table(a, data);
  time_fast_paths(data, models, table);
  if (a.fast_only) return 0;
  time_torch_paths(data, models, table);
  return 0;
}
