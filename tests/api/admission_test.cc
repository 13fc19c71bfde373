// api/admission.h: connection caps, stream shares and the failed-token
// throttle, on their own (the e2e side is tests/daemon/abuse_e2e_test.cc).
#include "api/admission.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace tcl::api {
namespace {

using namespace std::chrono_literals;

TEST(AdmissionTest, ConnectionsAreCappedPerAddressAndInAll) {
  Admission a(AdmissionLimits{.max_connections = 5, .max_connections_per_address = 2});
  Admission::Refusal why;
  std::vector<std::unique_ptr<Admission::Ticket>> held;
  held.push_back(a.admit_connection("10.0.0.1", &why));
  held.push_back(a.admit_connection("10.0.0.1", &why));
  EXPECT_EQ(a.admit_connection("10.0.0.1", &why), nullptr);
  EXPECT_EQ(why, Admission::Refusal::kPerAddress);
  for (const char* other : {"10.0.0.2", "10.0.0.3", "10.0.0.4"}) held.push_back(a.admit_connection(other, &why));
  EXPECT_EQ(a.connections(), 5);
  EXPECT_EQ(a.admit_connection("10.0.0.9", &why), nullptr);
  EXPECT_EQ(why, Admission::Refusal::kTotal);
  held.erase(held.begin());  // a connection of 10.0.0.1 ends: its address and the total have room again
  EXPECT_NE(a.admit_connection("10.0.0.1", &why), nullptr);
  EXPECT_EQ(why, Admission::Refusal::kNone);
  EXPECT_EQ(a.connections(), 4);  // the ticket above was dropped at once
}

TEST(AdmissionTest, NoPerAddressCapWhenZero) {
  Admission a(AdmissionLimits{.max_connections = 100, .max_connections_per_address = 0});
  Admission::Refusal why;
  std::vector<std::unique_ptr<Admission::Ticket>> held;
  for (int i = 0; i < 50; ++i) held.push_back(a.admit_connection("10.0.0.1", &why));
  EXPECT_NE(held.back(), nullptr);
}

TEST(AdmissionTest, AClientHoldsAtMostItsStreamShare) {
  Admission a(AdmissionLimits{.max_streams_per_client = 2});
  auto one = a.admit_stream("token a");
  auto two = a.admit_stream("token a");
  EXPECT_NE(two, nullptr);
  EXPECT_EQ(a.admit_stream("token a"), nullptr);
  EXPECT_NE(a.admit_stream("token b"), nullptr);
  one.reset();
  EXPECT_NE(a.admit_stream("token a"), nullptr);
}

TEST(AdmissionTest, FailedTokensAreThrottledPerAddressForTheirWindow) {
  Admission a(AdmissionLimits{.auth_failures_per_window = 3, .auth_failure_window = 10s});
  const auto t0 = Admission::Clock::now();
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(a.auth_throttled("10.0.0.1", t0));
    a.auth_failed("10.0.0.1", t0);
  }
  std::chrono::milliseconds retry{};
  EXPECT_TRUE(a.auth_throttled("10.0.0.1", t0 + 4s, &retry));
  EXPECT_EQ(retry, 6000ms);
  EXPECT_FALSE(a.auth_throttled("10.0.0.2", t0 + 4s));
  EXPECT_FALSE(a.auth_throttled("10.0.0.1", t0 + 10s)) << "the window ended";
  EXPECT_FALSE(a.auth_throttled("10.0.0.1", t0 + 10s)) << "and it starts afresh";
}

TEST(AdmissionTest, ConnectionsThatFitStayUnderTheOpenFileLimit) {
  EXPECT_GE(connections_that_fit(0), 16);
  EXPECT_LE(connections_that_fit(0), 10000);
  EXPECT_EQ(connections_that_fit(20), 20);
}

}  // namespace
}  // namespace tcl::api
