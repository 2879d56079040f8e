// Helpers shared by the manifest-list code (manifest.cc) and the manifest entry decoder
// (manifest_reader.cc): finding fields of a writer's Avro schema, and Iceberg values from
// Avro ones (spec Appendix A, read direction).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/iceberg/avro.h"
#include "skade/iceberg/literal.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/types.h"

namespace skade::iceberg::manifest_internal {

// A record field by any of `names`, then by field id; -1 when absent.
int FindField(const avro::AvroNode& record, std::initializer_list<std::string_view> names, int field_id);
// The node of a field with a ["null", T] union unwrapped to T.
const avro::AvroNode* UnwrapOptional(const avro::AvroNode& node);
// kCorruption naming `file` unless `node` is a record.
Status RequireRecord(const std::string& file, const avro::AvroNode& node, std::string_view what);
// A "format-version" header value, or nullopt when absent or not a small number.
std::optional<int> ParseFormatVersion(const std::optional<std::string>& text);
// The Iceberg type of a partition field from its Avro type.
Result<TypePtr> PartitionFieldType(const avro::AvroNode& node);
// One partition value as a Literal of `type` (nullopt for null).
Result<std::optional<Literal>> PartitionLiteral(const TypePtr& type, const avro::AvroValue& value);
// "PARQUET", "avro", … in any case.
Result<FileFormat> ParseFileFormat(std::string_view text);

}  // namespace skade::iceberg::manifest_internal
