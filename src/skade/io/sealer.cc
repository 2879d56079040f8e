#include "skade/io/sealer.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <set>

#include "skade/base/base64.h"
#include "skade/base/clock.h"
#include "skade/base/hex.h"
#include "skade/base/random.h"

namespace skade::io {
namespace {

constexpr char kFormat = 'S';
constexpr size_t kIdBytes = 4;
constexpr size_t kExpiryBytes = 8;
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;
constexpr size_t kHeaderBytes = 1 + kIdBytes + kExpiryBytes;

std::string KeyId(const std::string& key) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(key.data(), key.size(), digest, &n, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), kIdBytes);
}

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    // The kernel's generator through the same route as every other secret of skade.
    out = *HexDecode(RandomHex(n));
  }
  return out;
}

struct CipherCtx {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  ~CipherCtx() { EVP_CIPHER_CTX_free(ctx); }
};

const unsigned char* Bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

// The associated data: the purpose, then the token's header.
std::string Aad(std::string_view purpose, std::string_view header) {
  std::string aad;
  aad.reserve(purpose.size() + 1 + header.size());
  aad.append(purpose);
  aad.push_back('\0');
  aad.append(header);
  return aad;
}

}  // namespace

Sealer::~Sealer() = default;

Result<std::shared_ptr<const Sealer>> Sealer::FromKeys(std::vector<std::string> keys) {
  if (keys.empty()) return Status::InvalidArgument("no sealing key given");
  std::vector<Key> ring;
  std::set<std::string> seen;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].size() != kKeyBytes) {
      return Status::InvalidArgument("sealing key " + std::to_string(i + 1) + " has " + std::to_string(keys[i].size()) +
                                     " bytes; keys have " + std::to_string(kKeyBytes));
    }
    if (!seen.insert(keys[i]).second) {
      return Status::InvalidArgument("sealing key " + std::to_string(i + 1) + " is given twice");
    }
    ring.push_back(Key{keys[i], KeyId(keys[i])});
  }
  return std::shared_ptr<const Sealer>(new Sealer(std::move(ring)));
}

Result<std::shared_ptr<const Sealer>> Sealer::FromText(std::string_view text) {
  std::vector<std::string> keys;
  size_t line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(",\n", start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    std::optional<std::string> key = line.size() == 2 * kKeyBytes ? HexDecode(line) : std::nullopt;
    if (!key) {
      return Status::InvalidArgument("sealing keys: entry " + std::to_string(line_no) + " is not " +
                                     std::to_string(2 * kKeyBytes) + " hex digits");
    }
    keys.push_back(std::move(*key));
  }
  return FromKeys(std::move(keys));
}

std::shared_ptr<const Sealer> Sealer::Ephemeral() {
  std::string key = RandomBytes(kKeyBytes);
  return std::shared_ptr<const Sealer>(new Sealer({Key{key, KeyId(key)}}));
}

bool Sealer::LooksSealed(std::string_view token) {
  return token.size() >= kOverheadBytes && token.front() == kFormat;
}

std::string Sealer::Seal(std::string_view purpose, std::string_view payload, std::chrono::seconds lifetime) const {
  const Key& key = keys_.front();
  const int64_t expiry = NowMillis() + lifetime.count() * 1000;
  std::string token;
  token.reserve(kOverheadBytes + payload.size());
  token.push_back(kFormat);
  token.append(key.id);
  for (int shift = 56; shift >= 0; shift -= 8) token.push_back(static_cast<char>((static_cast<uint64_t>(expiry) >> shift) & 0xff));
  const std::string aad = Aad(purpose, token);
  const std::string nonce = RandomBytes(kNonceBytes);
  token.append(nonce);
  const size_t body = token.size();
  token.resize(body + payload.size() + kTagBytes);
  auto* out = reinterpret_cast<unsigned char*>(token.data());
  CipherCtx c;
  int n = 0;
  int total = 0;
  // Each call below fails only on allocation failure or misuse; the result is then refused by
  // Open (an unreadable token), never a token that opens wrongly.
  EVP_EncryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr);
  EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kNonceBytes), nullptr);
  EVP_EncryptInit_ex(c.ctx, nullptr, nullptr, Bytes(key.bytes), Bytes(nonce));
  EVP_EncryptUpdate(c.ctx, nullptr, &n, Bytes(aad), static_cast<int>(aad.size()));
  if (!payload.empty()) {
    EVP_EncryptUpdate(c.ctx, out + body, &n, Bytes(payload), static_cast<int>(payload.size()));
    total = n;
  }
  EVP_EncryptFinal_ex(c.ctx, out + body + total, &n);
  EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagBytes), out + body + payload.size());
  return token;
}

Result<std::string> Sealer::Open(std::string_view purpose, std::string_view token, int64_t* expires_at_ms) const {
  const Status invalid = Status::NotFound("not a valid handle");
  if (!LooksSealed(token) || token.size() > (size_t{1} << 30)) return invalid;
  const std::string_view id = token.substr(1, kIdBytes);
  const Key* key = nullptr;
  for (const Key& k : keys_) {
    if (k.id == id) key = &k;
  }
  if (key == nullptr) return invalid;
  const std::string_view header = token.substr(0, kHeaderBytes);
  const std::string_view nonce = token.substr(kHeaderBytes, kNonceBytes);
  const std::string_view sealed = token.substr(kHeaderBytes + kNonceBytes, token.size() - kOverheadBytes);
  const std::string_view tag = token.substr(token.size() - kTagBytes);
  const std::string aad = Aad(purpose, header);
  std::string payload(sealed.size(), '\0');
  CipherCtx c;
  int n = 0;
  bool ok = EVP_DecryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
            EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kNonceBytes), nullptr) == 1 &&
            EVP_DecryptInit_ex(c.ctx, nullptr, nullptr, Bytes(key->bytes), Bytes(nonce)) == 1 &&
            EVP_DecryptUpdate(c.ctx, nullptr, &n, Bytes(aad), static_cast<int>(aad.size())) == 1;
  int total = 0;
  if (ok && !sealed.empty()) {
    ok = EVP_DecryptUpdate(c.ctx, reinterpret_cast<unsigned char*>(payload.data()), &n, Bytes(sealed),
                           static_cast<int>(sealed.size())) == 1;
    total = n;
  }
  std::string tag_copy(tag);
  ok = ok && EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes), tag_copy.data()) == 1;
  ok = ok && EVP_DecryptFinal_ex(c.ctx, reinterpret_cast<unsigned char*>(payload.data()) + total, &n) == 1;
  if (!ok) return invalid;
  // The expiry is authenticated (it is in the associated data), so it is checked only now.
  uint64_t expiry = 0;
  for (size_t i = 0; i < kExpiryBytes; ++i) expiry = (expiry << 8) | static_cast<uint8_t>(header[1 + kIdBytes + i]);
  if (expires_at_ms != nullptr) *expires_at_ms = static_cast<int64_t>(expiry);
  if (static_cast<int64_t>(expiry) < NowMillis()) return Status::NotFound("the handle has expired");
  return payload;
}

std::string EncodeBase64Url(std::string_view bytes) {
  std::string text = EncodeBase64(bytes);
  while (!text.empty() && text.back() == '=') text.pop_back();
  for (char& c : text) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return text;
}

bool DecodeBase64Url(std::string_view text, std::string* out) {
  if (text.size() % 4 == 1) return false;
  std::string standard;
  standard.reserve(text.size() + 3);
  for (char c : text) {
    if (c == '-') {
      standard.push_back('+');
    } else if (c == '_') {
      standard.push_back('/');
    } else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      standard.push_back(c);
    } else {
      return false;
    }
  }
  while (standard.size() % 4 != 0) standard.push_back('=');
  *out = DecodeBase64(standard);
  return !out->empty() || text.empty();
}

}  // namespace skade::io
