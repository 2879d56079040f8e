#include "skade/base/status.h"

#include <gtest/gtest.h>

namespace skade {
namespace {

Result<int> Half(int v) {
  if (v % 2) return Status::InvalidArgument("odd");
  return v / 2;
}

Result<int> Quarter(int v) {
  SKADE_ASSIGN_OR_RETURN(int h, Half(v));
  SKADE_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status Check(int v) {
  SKADE_RETURN_IF_ERROR(Half(v));
  return Status::Ok();
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = Status::NotFound("table x");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: table x");
  EXPECT_EQ(s.WithContext("load").message(), "load: table x");
  EXPECT_TRUE(Status::Ok().WithContext("ignored").ok());
  EXPECT_EQ(Status::Ok().ToString(), "OK");
}

TEST(StatusTest, MacrosPropagateErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Check(4).ok());
  EXPECT_EQ(Check(3).code(), StatusCode::kInvalidArgument);
}

TEST(StatusTest, ResultFromOkStatusIsAnError) {
  Result<int> r(Status::Ok());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_EQ(Result<int>(5).ValueOr(1), 5);
  EXPECT_EQ(Result<int>(Status::Conflict("x")).ValueOr(1), 1);
}

}  // namespace
}  // namespace skade
