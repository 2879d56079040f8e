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

// The form in which two writers' names for one file compare equal: the normal form, where a
// file system's authority (hdfs://namenode:8020, viewfs://cluster, a file: host) is dropped —
// Hive, Impala and Spark on HDFS write "hdfs://nn:8020/w/f" where manifests say "/w/f" — while
// object stores keep theirs (the bucket is part of the name): "s3a://b/k" → "s3://b/k".
// For matching position deletes to data files, never for deciding what to delete.
std::string ComparableLocation(std::string_view location);

// Whether `location` is `root` or lies below it, comparing whole path components of the
// normal forms ("/w/a" is within "/w", "/w/ab" is not).
bool IsWithin(std::string_view location, std::string_view root);

// IsWithin ignoring ASCII case: on a case-insensitive file system "/w/Sales" and "/w/sales"
// are one folder, so the safety rules treat them as one.
bool IsWithinIgnoringCase(std::string_view location, std::string_view root);

// Whether one of the two is within the other, ignoring ASCII case.
bool Overlaps(std::string_view a, std::string_view b);

// The scheme of a location in lower case: "s3" for "S3://b/k", "file" for "file:/a" and
// "file:///a", "" for a plain path ("/a", "a/b", "c:d" — a scheme needs "://", except file:).
std::string LocationScheme(std::string_view location);

// Whether `location` names an object in an S3-compatible store (s3://, s3a://, s3n://, any
// case). Every module decides "object store or file system" with this one function.
bool IsObjectStoreLocation(std::string_view location);

}  // namespace skade::io
