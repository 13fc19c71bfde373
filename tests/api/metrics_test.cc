// api/metrics.h: the helpers register what the builder blocks did.
#include "api/metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace tcl::api {
namespace {

const prometheus::MetricFamily* find(const std::vector<prometheus::MetricFamily>& all, const std::string& name) {
  for (const auto& f : all) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(MetricsTest, HelpersRegisterNamedFamiliesOfTheirType) {
  prometheus::Registry r;
  counter(r, "tcl_test_things_total", "Things counted.").Increment(3);
  gauge(r, "tcl_test_level", "A level.").Set(7);
  counter_family(r, "tcl_test_by_kind_total", "By kind.").Add({{"kind", "a"}}).Increment();
  histogram_family(r, "tcl_test_seconds", "Durations.")
      .Add({}, prometheus::Histogram::BucketBoundaries{1, 2})
      .Observe(1.5);
  const auto all = r.Collect();

  const auto* things = find(all, "tcl_test_things_total");
  ASSERT_NE(things, nullptr);
  EXPECT_EQ(things->help, "Things counted.");
  EXPECT_EQ(things->type, prometheus::MetricType::Counter);
  ASSERT_EQ(things->metric.size(), 1u);
  EXPECT_TRUE(things->metric[0].label.empty());
  EXPECT_EQ(things->metric[0].counter.value, 3);

  const auto* level = find(all, "tcl_test_level");
  ASSERT_NE(level, nullptr);
  EXPECT_EQ(level->type, prometheus::MetricType::Gauge);
  EXPECT_EQ(level->metric[0].gauge.value, 7);

  const auto* by_kind = find(all, "tcl_test_by_kind_total");
  ASSERT_NE(by_kind, nullptr);
  ASSERT_EQ(by_kind->metric.size(), 1u);
  ASSERT_EQ(by_kind->metric[0].label.size(), 1u);
  EXPECT_EQ(by_kind->metric[0].label[0].value, "a");

  const auto* seconds = find(all, "tcl_test_seconds");
  ASSERT_NE(seconds, nullptr);
  EXPECT_EQ(seconds->type, prometheus::MetricType::Histogram);
  EXPECT_EQ(seconds->metric[0].histogram.sample_count, 1u);
}

}  // namespace
}  // namespace tcl::api
