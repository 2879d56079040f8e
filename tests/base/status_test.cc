#include "skade/base/status.h"

#include <string>
#include <type_traits>

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

// A long message lives on the heap, so reading it after its Result died is what ASan reports.
Result<std::string> FailLong() { return Status::InvalidArgument(std::string(200, 'x') + " bad predicate"); }

Status ReturnStatusOfTemporary() {
  SKADE_RETURN_IF_ERROR(FailLong().status());
  return Status::Ok();
}

TEST(StatusTest, StatusOfATemporaryResultIsAValue) {
  // status() and value() on a temporary return values, so nothing can refer into the dead
  // temporary (the macro binds `auto&&` to its argument).
  static_assert(std::is_same_v<decltype(FailLong().status()), Status>);
  static_assert(std::is_same_v<decltype(Result<std::string>("v").value()), std::string>);
  static_assert(std::is_same_v<decltype(*Result<std::string>("v")), std::string>);
  Status s = ReturnStatusOfTemporary();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), std::string(200, 'x') + " bad predicate");
  auto&& bound = FailLong().status();
  EXPECT_EQ(bound.message().size(), 214u);
  EXPECT_EQ(Result<std::string>("value").value(), "value");
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
