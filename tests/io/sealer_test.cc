#include "skade/io/sealer.h"

#include <gtest/gtest.h>

#include <string>

namespace skade::io {
namespace {

using std::chrono::seconds;

const std::string kKeyA(64, 'a');
const std::string kKeyB(64, 'b');

std::shared_ptr<const Sealer> Ring(const std::string& text) {
  auto sealer = Sealer::FromText(text);
  EXPECT_TRUE(sealer.ok()) << sealer.status().ToString();
  return *sealer;
}

TEST(Sealer, OpensWhatItSealedAndHidesThePayload) {
  auto sealer = Ring(kKeyA);
  const std::string payload = "SELECT secret_column FROM t";
  std::string token = sealer->Seal("test", payload, seconds(60));
  EXPECT_EQ(token.size(), payload.size() + Sealer::kOverheadBytes);
  EXPECT_EQ(token.find("secret_column"), std::string::npos);
  auto opened = sealer->Open("test", token);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(*opened, payload);
  // Two seals of one payload differ (a fresh nonce each).
  EXPECT_NE(sealer->Seal("test", payload, seconds(60)), token);
  // An empty payload seals too.
  auto empty = sealer->Open("test", sealer->Seal("test", "", seconds(60)));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "");
}

TEST(Sealer, RefusesEveryChangedByteAnotherPurposeAndAnotherKey) {
  auto sealer = Ring(kKeyA);
  std::string token = sealer->Seal("ticket", "payload", seconds(60));
  for (size_t i = 0; i < token.size(); ++i) {
    std::string changed = token;
    changed[i] = static_cast<char>(changed[i] ^ 0x01);
    auto opened = sealer->Open("ticket", changed);
    ASSERT_FALSE(opened.ok()) << "byte " << i;
    EXPECT_EQ(opened.status().code(), StatusCode::kNotFound);
  }
  EXPECT_FALSE(sealer->Open("ticket", token.substr(0, token.size() - 1)).ok());
  EXPECT_FALSE(sealer->Open("ticket", token + "x").ok());
  EXPECT_FALSE(sealer->Open("prepared", token).ok());
  EXPECT_FALSE(Ring(kKeyB)->Open("ticket", token).ok());
  EXPECT_FALSE(sealer->Open("ticket", "").ok());
  EXPECT_FALSE(sealer->Open("ticket", "S").ok());
  EXPECT_FALSE(Sealer::Ephemeral()->Open("ticket", token).ok());
}

TEST(Sealer, ExpiredTokensAreRefused) {
  auto sealer = Ring(kKeyA);
  int64_t expiry = 0;
  auto opened = sealer->Open("t", sealer->Seal("t", "p", seconds(-10)), &expiry);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("expired"), std::string::npos);
  EXPECT_GT(expiry, 0) << "an authenticated token that ran out reports its expiry";
  // A forged token reports none: the caller tells the two apart.
  std::string forged = sealer->Seal("t", "p", seconds(60));
  forged.back() = static_cast<char>(forged.back() ^ 1);
  int64_t none = 0;
  EXPECT_FALSE(sealer->Open("t", forged, &none).ok());
  EXPECT_EQ(none, 0);
  int64_t live = 0;
  ASSERT_TRUE(sealer->Open("t", sealer->Seal("t", "p", seconds(60)), &live).ok());
  EXPECT_GT(live, expiry);
}

TEST(Sealer, RotationAcceptsBothKeysAndSealsWithTheFirst) {
  auto old_ring = Ring(kKeyA);
  auto during = Ring(kKeyB + "\n" + kKeyA);
  auto after = Ring("# rotated\n" + kKeyB + "\n");
  std::string old_token = old_ring->Seal("t", "old", seconds(60));
  std::string new_token = during->Seal("t", "new", seconds(60));
  EXPECT_EQ(*during->Open("t", old_token), "old");
  EXPECT_EQ(*during->Open("t", new_token), "new");
  EXPECT_EQ(*after->Open("t", new_token), "new");
  EXPECT_FALSE(after->Open("t", old_token).ok());
  EXPECT_FALSE(old_ring->Open("t", new_token).ok());
  // Comma-separated (an environment variable) parses the same.
  EXPECT_EQ(*Ring(kKeyB + "," + kKeyA)->Open("t", old_token), "old");
}

TEST(Sealer, BadKeysAreRefusedWithoutShowingThem) {
  for (const std::string& text : {std::string(), std::string("# only a comment\n"), std::string(63, 'a'),
                                  std::string(64, 'g'), kKeyA + "\n" + kKeyA}) {
    auto sealer = Sealer::FromText(text);
    ASSERT_FALSE(sealer.ok()) << text;
    EXPECT_EQ(sealer.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(sealer.status().message().find("aaaa"), std::string::npos);
  }
  EXPECT_FALSE(Sealer::FromKeys({std::string(16, 'k')}).ok());
}

TEST(Sealer, Base64UrlRoundTrips) {
  for (const std::string& bytes : {std::string(), std::string("\xfb\xff\xfe", 3), std::string("ab"), std::string("abcd")}) {
    std::string text = EncodeBase64Url(bytes);
    EXPECT_EQ(text.find_first_of("+/="), std::string::npos);
    std::string back;
    ASSERT_TRUE(DecodeBase64Url(text, &back));
    EXPECT_EQ(back, bytes);
  }
  std::string out;
  EXPECT_FALSE(DecodeBase64Url("ab+c", &out));
  EXPECT_FALSE(DecodeBase64Url("a", &out));
}

}  // namespace
}  // namespace skade::io
