// Basic credentials and bearer tokens: sealed, shared by servers holding the same key, expiring.
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
  EXPECT_EQ(token.find("bob"), std::string::npos);
  EXPECT_NE(token, auth.IssueToken("bob"));
  EXPECT_EQ(*auth.Check("Bearer " + token), "bob");
  EXPECT_EQ(auth.Check("Bearer " + token + "x").status().code(), StatusCode::kUnauthorized);
}

TEST(AuthTest, TokensExpireAndServersSharingTheKeyAcceptEachOthers) {
  AuthOptions o = Users();
  o.token_lifetime = std::chrono::seconds(2);
  auto key = io::Sealer::FromText(std::string(64, 'c'));
  ASSERT_TRUE(key.ok());
  o.sealer = *key;
  Authenticator one(o);
  Authenticator two(o);
  Authenticator stranger(Users());  // its own key
  AuthOptions fewer = o;
  fewer.users.erase("bob");
  Authenticator without_bob(fewer);
  std::string bobs = one.IssueToken("bob");
  EXPECT_EQ(*two.Check("Bearer " + bobs), "bob");
  EXPECT_EQ(stranger.Check("Bearer " + bobs).status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(without_bob.Check("Bearer " + bobs).status().code(), StatusCode::kUnauthorized);
  // A token of principal "bob" does not open as anything else (another purpose's seal).
  EXPECT_EQ(two.Check("Bearer " + io::EncodeBase64Url((*key)->Seal("flightsql.ticket", "bob", std::chrono::seconds(60))))
                .status()
                .code(),
            StatusCode::kUnauthorized);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  EXPECT_EQ(one.Check("Bearer " + bobs).status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(two.Check("Bearer " + bobs).status().code(), StatusCode::kUnauthorized);
}

}  // namespace
}  // namespace skade::flightsql
