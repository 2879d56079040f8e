// Partition transforms (spec "Partition Transforms"): identity, bucket[N] (32-bit Murmur3),
// truncate[W], year, month, day, hour, void; result types, application to values, and the
// order properties used by inclusive projection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/iceberg/literal.h"
#include "skade/iceberg/types.h"

namespace skade::iceberg {

enum class TransformKind { kIdentity, kBucket, kTruncate, kYear, kMonth, kDay, kHour, kVoid, kUnknown };

class Transform {
 public:
  static Transform Identity() { return Transform(TransformKind::kIdentity, 0); }
  static Transform Bucket(int n) { return Transform(TransformKind::kBucket, n); }
  static Transform Truncate(int w) { return Transform(TransformKind::kTruncate, w); }
  static Transform Year() { return Transform(TransformKind::kYear, 0); }
  static Transform Month() { return Transform(TransformKind::kMonth, 0); }
  static Transform Day() { return Transform(TransformKind::kDay, 0); }
  static Transform Hour() { return Transform(TransformKind::kHour, 0); }
  static Transform Void() { return Transform(TransformKind::kVoid, 0); }

  // Parses "identity", "bucket[16]", "truncate[4]", "year", …, "void". A name the spec does not
  // define parses as kUnknown (kept verbatim so metadata round-trips; it can't be applied).
  // kInvalidArgument for a malformed parameter (bucket[0], truncate[x]).
  static Result<Transform> Parse(std::string_view text);

  TransformKind kind() const { return kind_; }
  int param() const { return param_; }  // N for bucket, W for truncate
  std::string ToString() const;

  // Whether the transform applies to `source` (e.g. hour needs a timestamp).
  bool CanTransform(const Type& source) const;
  // The partition value type for a source type (bucket → int, year/month/day/hour → int,
  // identity/truncate → source type). kInvalidArgument if it can't apply.
  Result<TypePtr> ResultType(const TypePtr& source) const;
  // Applies the transform; null in gives null out (void always gives null).
  // kInvalidArgument for an unsupported source type.
  Result<std::optional<Literal>> Apply(const std::optional<Literal>& value) const;

  // A partition value as people read it (Iceberg's human string): year "2024", month
  // "2024-01", day "2024-01-01", hour "2024-01-01-10", identity/truncate the value's own
  // rendering (Literal::ToString), bucket the number; "null" for a null.
  std::string HumanString(const std::optional<Literal>& value) const;

  // Whether the transform preserves order (v1 ≤ v2 ⇒ t(v1) ≤ t(v2)): all but bucket/void.
  bool PreservesOrder() const;

  friend bool operator==(const Transform& a, const Transform& b) {
    return a.kind_ == b.kind_ && a.param_ == b.param_ && a.unknown_text_ == b.unknown_text_;
  }

 private:
  Transform(TransformKind kind, int param) : kind_(kind), param_(param) {}
  TransformKind kind_;
  int param_;
  std::string unknown_text_;
};

// The spec's 32-bit Murmur3 (x86 variant, seed 0) of a byte string.
int32_t Murmur3Hash32(std::string_view bytes);
// The spec's bucket hash of a value (ints and longs hashed as 8-byte longs, dates as ints,
// times/timestamps as longs, strings as UTF-8, decimals as minimal big-endian unscaled bytes,
// uuids as 16 big-endian bytes, floats/doubles as the double's bits with -0 → 0 and a
// canonical NaN).
int32_t BucketHash(const Literal& value);
// (hash & INT_MAX) % n.
int32_t BucketOf(const Literal& value, int n);

}  // namespace skade::iceberg
