// Basic credentials and bearer tokens: expiry, bounded token table.
#include "skade/flightsql/auth.h"

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "skade/base/base64.h"

namespace skade::flightsql {
namespace {

AuthOptions Users() {
  AuthOptions o;
  o.users = {{"alice", "s3cret"}, {"bob", "hunter2"}};
  return o;
}

TEST(AuthTest, WithoutUsersEveryCallIsTheAnonymousPrincipal) {
  Authenticator auth(AuthOptions{});
  EXPECT_FALSE(auth.enabled());
  auto who = auth.Check("");
  ASSERT_TRUE(who.ok());
  EXPECT_EQ(*who, "");
}

TEST(AuthTest, BasicCredentialsAndBearerTokens) {
  Authenticator auth(Users());
  EXPECT_EQ(auth.Check("").status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(*auth.Check("Basic " + EncodeBase64("alice:s3cret")), "alice");
  EXPECT_EQ(auth.Check("Basic " + EncodeBase64("alice:wrong")).status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(auth.Check("Basic " + EncodeBase64("mallory:s3cret")).status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(auth.Check("Basic " + EncodeBase64("alice:")).status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(auth.Check("Basic !!!").status().code(), StatusCode::kUnauthorized);
  std::string token = auth.IssueToken("bob");
  EXPECT_EQ(token.size(), 64u);
  EXPECT_NE(token, auth.IssueToken("bob"));
  EXPECT_EQ(*auth.Check("Bearer " + token), "bob");
  EXPECT_EQ(auth.Check("Bearer " + token + "x").status().code(), StatusCode::kUnauthorized);
}

TEST(AuthTest, TokensExpireAndTheTableIsBounded) {
  AuthOptions o = Users();
  o.token_lifetime = std::chrono::seconds(2);
  o.max_tokens_per_user = 3;
  Authenticator auth(o);
  std::string first = auth.IssueToken("alice");
  for (int i = 0; i < 10; ++i) auth.IssueToken("alice");
  std::string bobs = auth.IssueToken("bob");
  EXPECT_EQ(auth.token_count(), 4u);  // alice's newest 3, bob's 1
  EXPECT_EQ(auth.Check("Bearer " + first).status().code(), StatusCode::kUnauthorized);
  EXPECT_TRUE(auth.Check("Bearer " + bobs).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  EXPECT_EQ(auth.Check("Bearer " + bobs).status().code(), StatusCode::kUnauthorized);
  auth.DropExpired();
  EXPECT_EQ(auth.token_count(), 0u);
}

}  // namespace
}  // namespace skade::flightsql
