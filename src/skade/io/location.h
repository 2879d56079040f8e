// Location strings compared after one normalisation (DESIGN §11): `file:` forms become local
// paths, local paths are absolute and lexically normal, s3a:/s3n: are s3:, duplicate and
// trailing '/' go away. Every comparison of locations goes through these functions.
#pragma once

#include <string>
#include <string_view>

namespace skade::io {

// The normal form of a location:
//   "file:///a/./b/", "file:/a/b", "file://localhost/a/b", "/a//b/" → "/a/b";
//   a relative path → absolute against the working directory;
//   "s3a://bucket/k//x/" → "s3://bucket/k/x"; other schemes keep scheme and authority and get
//   their path collapsed the same way.
std::string NormalizeLocation(std::string_view location);

// Whether `location` is `root` or lies below it, comparing whole path components of the
// normal forms ("/w/a" is within "/w", "/w/ab" is not).
bool IsWithin(std::string_view location, std::string_view root);

// IsWithin ignoring ASCII case: on a case-insensitive file system "/w/Sales" and "/w/sales"
// are one folder, so the safety rules treat them as one.
bool IsWithinIgnoringCase(std::string_view location, std::string_view root);

// Whether one of the two is within the other, ignoring ASCII case.
bool Overlaps(std::string_view a, std::string_view b);

}  // namespace skade::io
