// tests/onboarding/platform_data_test.cc — a platform as the evaluation
// protocol sees it (onboarding/platform_data.h) on real records (x86-16c):
// the platform of the first record naming a target, its descriptor, the
// split SplitBuilder makes of the same records, kNotFound without a target.
#include "onboarding/platform_data.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/program_id.h"
#include "tests/lib/shared_data.h"
#include "trainer/dataset.h"

namespace tcl::onboarding {
namespace {

std::vector<core::Record> records(std::size_t n) {
  core::RecordParser parser;
  std::vector<core::Record> out;
  for (const std::string& line : tcl::testing::shared_data_lines("x86-16c", n)) {
    core::Record r;
    if (!core::is_skippable_line(line) && parser.parse(line, &r).is_ok()) out.push_back(std::move(r));
  }
  return out;
}

TEST(PlatformDataTest, PlatformDescriptorAndTheSplitOfItsRecords) {
  const std::vector<core::Record> all = records(4000);
  ASSERT_GT(all.size(), 1000u);
  auto platform = trainer::platform_of(all);
  ASSERT_TRUE(platform.is_ok());

  // The first record carries no target: the platform comes from a later one.
  std::vector<core::Record> given = all;
  given.front().target.clear();
  given.front().hardware_params.reset();
  std::vector<core::Record> same = given;
  PlatformDataBuilder b("x86-16c", 0.3, 5);
  for (core::Record& r : given) b.add(r);
  auto p = b.take();
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->name, "x86-16c");
  EXPECT_EQ(p->platform, *platform);
  const core::HardwareDescriptor d = core::descriptor_of(*platform);
  EXPECT_EQ(p->descriptor, std::vector<float>(d.begin(), d.end()));
  EXPECT_EQ(p->descriptor, descriptor_vector(*platform));
  EXPECT_EQ(p->records, static_cast<std::int64_t>(same.size()));

  SplitBuilder split(0.3, 5);
  for (core::Record& r : same) split.add(r);
  const PlatformSplit want = split.take();
  ASSERT_FALSE(want.pool.empty());
  ASSERT_FALSE(want.holdout.empty());
  EXPECT_EQ(p->split.measured, want.measured);
  EXPECT_EQ(p->split.task, want.task);
  EXPECT_EQ(p->split.task_keys, want.task_keys);
  EXPECT_EQ(p->split.holdout_tasks, want.holdout_tasks);
  EXPECT_EQ(p->split.pool_duplicates, want.pool_duplicates);
  ASSERT_EQ(p->split.pool.size(), want.pool.size());
  for (std::size_t i = 0; i < want.pool.size(); ++i) {
    EXPECT_EQ(core::program_id(p->split.pool[i]), core::program_id(want.pool[i]));
  }
  ASSERT_EQ(p->split.holdout.size(), want.holdout.size());

  // take() starts the builder empty: nothing added, no target.
  auto empty = b.take();
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);
}

TEST(PlatformDataTest, NoRecordNamingATargetIsNotFound) {
  std::vector<core::Record> all = records(200);
  ASSERT_FALSE(all.empty());
  PlatformDataBuilder b("anonymous", 0.3, 5, /*keep_pool=*/false);
  for (core::Record& r : all) {
    r.target.clear();
    b.add(r);
  }
  auto p = b.take();
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_NE(p.status().message().find("anonymous"), std::string::npos);
}

}  // namespace
}  // namespace tcl::onboarding
