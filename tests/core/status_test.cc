// core/status.h: the structured field detail.
#include "core/status.h"

#include <gtest/gtest.h>

namespace tcl {
namespace {

TEST(StatusTest, InvalidFieldNamesTheFieldInMessageAndDetail) {
  const Status s = Status::invalid_field("hardware_params", "must be an array of 8 integers");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "field 'hardware_params' must be an array of 8 integers");
  EXPECT_EQ(s.field(), "hardware_params");
  // A name with a quote is kept whole (no parsing of the message).
  EXPECT_EQ(Status::invalid_field("it's", "is unknown").field(), "it's");
}

TEST(StatusTest, FieldSurvivesContextAndIsEmptyOtherwise) {
  const Status s = Status::invalid_field("seed", "must be >= 0").with_context("sample request");
  EXPECT_EQ(s.message(), "sample request: field 'seed' must be >= 0");
  EXPECT_EQ(s.field(), "seed");
  EXPECT_EQ(Status::invalid_argument("field 'x' looks like one").field(), "");
  const Status w = Status::not_found("no such platform").with_field("platform");
  EXPECT_EQ(w.field(), "platform");
  EXPECT_EQ(w.message(), "no such platform");
  EXPECT_EQ(w.code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tcl
