// The agent's output uploads cleanly: candidates and measurements made on
// this machine (failed ones included) go to a real tcld over a real
// PostgreSQL with no rejected line.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "measure/candidates.h"
#include "measure/hardware.h"
#include "measure/measurer.h"
#include "tests/lib/http_client.h"
#include "tests/lib/pg_cluster.h"
#include "tests/lib/tcld_env.h"
#include "tests/lib/tcld_process.h"

namespace tcl::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

std::string join(const std::vector<core::Record>& records) {
  std::string body;
  for (const auto& r : records) {
    core::write_record(r, &body);
    body += '\n';
  }
  return body;
}

class MeasureUploadTest : public TcldEnvTest {};

TEST_F(MeasureUploadTest, MeasuredRecordsUploadWithNoRejectedLine) {
  ASSERT_NO_FATAL_FAILURE(start_tcld());
  TcldProcess& tcld = *tcld_;
  const std::string token = tcld.create_token("lab", "write");
  auto post = [&](const std::string& target, const std::string& body,
                  const std::string& type = "application/x-ndjson") {
    return http_call(tcld.port(), HttpCall{"POST", target, body, token, {{"Content-Type", type}}, 60s});
  };

  // The platform as the agent describes this machine.
  const measure::HardwareInfo hw = measure::local_hardware();
  json::object platform{{"name", "local-cpu"}, {"target", hw.target}};
  platform["hardware_params"] =
      json::array{hw.params.num_cores, hw.params.vector_unit_bytes, hw.params.cache_line_bytes, 0, 0, 0, 0, 0};
  auto created = post("/v1/platforms", json::serialize(platform), "application/json");
  ASSERT_EQ(created.status, 201) << created.body;

  std::vector<core::Record> pool;
  for (const measure::Workload& w : {measure::Workload{measure::OpKind::kMatmul, {8, 16, 8}},
                                     measure::Workload{measure::OpKind::kConv2d, {1, 6, 6, 4, 8, 3, 3, 1, 1}},
                                     measure::Workload{measure::OpKind::kSoftmax, {4, 32}}}) {
    auto c = measure::workload_candidates(w, 4, 5, hw);
    pool.insert(pool.end(), c.begin(), c.end());
  }
  auto cand = post("/v1/platforms/local-cpu/candidates", join(pool));
  ASSERT_EQ(cand.status / 100, 2) << cand.body;
  EXPECT_EQ(cand.json().at("accepted").as_int64(), static_cast<std::int64_t>(pool.size())) << cand.body;
  EXPECT_EQ(cand.json().at("rejected").as_array().size(), 0u) << cand.body;

  // Measure the pool plus one record the agent cannot instantiate (a failed
  // measurement is data too).
  std::vector<core::Record> to_measure = pool;
  core::Record bad = pool.front();
  bad.steps.pop_back();
  to_measure.push_back(bad);
  measure::MeasureOptions options;
  options.programs_per_unit = 64;
  options.runner.timing.repeat = 3;
  options.runner.timing.min_repeat_seconds = 0;
  measure::Measurer measurer(options);
  const auto measured = measurer.measure(to_measure);
  int failed = 0;
  for (const auto& r : measured) failed += r.error_no != 0;
  EXPECT_EQ(failed, 1);

  auto up = post("/v1/platforms/local-cpu/measurements", join(measured));
  ASSERT_EQ(up.status, 201) << up.body;
  const json::value rep = up.json();
  EXPECT_EQ(rep.at("lines").as_int64(), static_cast<std::int64_t>(measured.size())) << up.body;
  EXPECT_EQ(rep.at("rejected_count").as_int64(), 0) << up.body;
  EXPECT_EQ(rep.at("accepted").as_int64(), static_cast<std::int64_t>(measured.size())) << up.body;

  const json::object counts = http_get(tcld.port(), "/v1/platforms/local-cpu", token).json().at("counts").as_object();
  // Successful measurements and failed ones are counted apart.
  EXPECT_EQ(counts.at("measurements").as_int64(), static_cast<std::int64_t>(measured.size()) - 1)
      << json::serialize(counts);
  EXPECT_EQ(counts.at("failed").as_int64(), 1) << json::serialize(counts);
}

}  // namespace
}  // namespace tcl::testing
