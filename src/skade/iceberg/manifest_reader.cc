// The manifest entry decoder (spec "Manifests": manifest_entry and data_file with their field
// ids; "Sequence Number Inheritance", "Snapshot ID Inheritance", "First Row ID Inheritance").
// The file's own Avro schema is compiled once into a list of steps, one per field in the
// writer's order, each naming the ManifestEntry member it fills (or none: the value is
// stepped over). Records are then decoded straight from the block bytes, with no generic
// Avro value in between: column metrics the caller did not ask for are never built.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/avro.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/manifest_fields_internal.h"
#include "skade/iceberg/manifest_internal.h"

namespace skade::iceberg {
namespace {

using avro::AvroKind;
using avro::AvroNode;
using manifest_fields::Branch;
using manifest_fields::IdFilter;
using manifest_fields::MapLayout;
using manifest_fields::ReadByteString;
using manifest_fields::ReadInt32;
using manifest_fields::ReadInteger;
using manifest_fields::ReadIntegerList;
using manifest_fields::ReadMetricMap;
using manifest_fields::ReadSimpleMap;
using manifest_fields::SimpleMapLayout;
using manifest_internal::FindField;
using manifest_internal::ParseFileFormat;
using manifest_internal::ParseFormatVersion;
using manifest_internal::PartitionFieldType;
using manifest_internal::PartitionLiteral;
using manifest_internal::RequireRecord;
using manifest_internal::UnwrapOptional;

// The ManifestEntry member a field of the writer's schema fills.
enum class Target : uint8_t {
  kSkip,
  // manifest_entry
  kStatus, kSnapshotId, kSequenceNumber, kFileSequenceNumber, kDataFile,
  // data_file
  kContent, kFilePath, kFileFormat, kPartition, kRecordCount, kFileSize,
  kColumnSizes, kValueCounts, kNullValueCounts, kNanValueCounts, kLowerBounds, kUpperBounds,
  kKeyMetadata, kSplitOffsets, kEqualityIds, kSortOrderId, kFirstRowId, kReferencedDataFile,
  kContentOffset, kContentSize,
};

struct Step {
  Target target = Target::kSkip;
  const AvroNode* type = nullptr;  // the field's type as written
  const std::string* name = nullptr;
  std::optional<MapLayout> map_layout;  // metric maps in the common layout
};

// A partition tuple's value of field `field`, written as `written` (a union if optional),
// by PartitionLiteral's rules. Integers and strings (identity, date, hour and bucket
// partitions) are read straight from the bytes into the value those rules take, instead of
// through the generic decoder.
Result<std::optional<Literal>> PartitionValue(const AvroNode& written, const NestedField& field, std::string_view* in) {
  SKADE_ASSIGN_OR_RETURN(const AvroNode* b, Branch(written, in));
  if (b == nullptr) return std::optional<Literal>();
  avro::AvroValue value;
  if (b->kind == AvroKind::kInt || b->kind == AvroKind::kLong) {
    int64_t v = 0;
    Status error = Status::Ok();
    if (!manifest_fields::Varint(in, &v, &error)) return Status::Corruption(field.name + ": " + error.message());
    if (b->kind == AvroKind::kInt && (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())) {
      return Status::Corruption(field.name + ": int value out of 32-bit range");
    }
    value = avro::AvroValue::Long(v);
  } else if (b->kind == AvroKind::kString || b->kind == AvroKind::kBytes) {
    SKADE_ASSIGN_OR_RETURN(std::string_view bytes, avro::ReadBytes(in));
    value = avro::AvroValue::Bytes(std::string(bytes));
  } else {
    SKADE_ASSIGN_OR_RETURN(value, avro::DecodeValue(*b, in));
  }
  auto lit = PartitionLiteral(field.type, value);
  if (!lit.ok()) return Status::Corruption(field.name + ": " + lit.status().message());
  return lit;
}

// Marks an error as being about one field.
Status FieldError(const Step& step, std::string_view what) {
  return Status::Corruption("field '" + *step.name + "': " + std::string(what));
}

}  // namespace

struct ManifestReader::Impl {
  std::string name;
  std::unique_ptr<avro::FileReader> file;
  ManifestFile manifest;
  int format_version = 1;
  TypePtr partition_type;
  const AvroNode* data_file_schema = nullptr;
  const AvroNode* partition_schema = nullptr;
  std::vector<Step> entry_steps;      // one per manifest_entry field, in the writer's order
  std::vector<Step> data_file_steps;  // one per data_file field
  IdFilter metrics{std::nullopt};
  bool split_offsets = true;
  // First Row ID Inheritance: the next id handed to a data file with a null first_row_id.
  std::optional<int64_t> next_row_id;
  // The current block.
  std::string_view* cursor = nullptr;
  int64_t left = 0;
  Status failed;

  Status Init();
  template <typename V>
  Status ReadMetrics(const Step& step, std::string_view* in, std::map<int, V>* out);
  // The required values an entry had.
  struct Present {
    bool data_file = false, path = false, format = false, count = false, size = false;
  };
  Status DecodeDataFile(std::string_view* in, DataFile* f, Present* present);
  // Overwrites `*out` with the entry at `*in`.
  Status Decode(std::string_view* in, ManifestEntry* out);
};

namespace {

// Steps for `record`: each field found by (names, id) gets its target; the rest are skipped.
struct Wanted {
  Target target;
  std::initializer_list<std::string_view> names;
  int field_id;
};

std::vector<Step> Compile(const AvroNode& record, std::initializer_list<Wanted> wanted, std::vector<int>* found) {
  std::vector<Step> steps(record.fields.size());
  for (size_t i = 0; i < record.fields.size(); ++i) {
    steps[i].type = record.fields[i].type.get();
    steps[i].name = &record.fields[i].name;
  }
  for (const Wanted& w : wanted) {
    const int i = FindField(record, w.names, w.field_id);
    found->push_back(i);
    if (i >= 0) steps[static_cast<size_t>(i)].target = w.target;
  }
  return steps;
}

}  // namespace

Status ManifestReader::Impl::Init() {
  const AvroNode& schema = *file->schema();
  SKADE_RETURN_IF_ERROR(RequireRecord(name, schema, "manifest entry"));
  std::vector<int> entry_found;
  entry_steps = Compile(schema,
                        {{Target::kStatus, {"status"}, 0},
                         {Target::kSnapshotId, {"snapshot_id"}, 1},
                         {Target::kSequenceNumber, {"sequence_number"}, 3},
                         {Target::kFileSequenceNumber, {"file_sequence_number"}, 4},
                         {Target::kDataFile, {"data_file"}, 2}},
                        &entry_found);
  const int status = entry_found[0], sequence_number = entry_found[2], data_file = entry_found[4];
  if (status < 0 || data_file < 0) return Status::Corruption(name + ": manifest entry schema lacks status/data_file");
  data_file_schema = UnwrapOptional(*schema.fields[static_cast<size_t>(data_file)].type);
  SKADE_RETURN_IF_ERROR(RequireRecord(name, *data_file_schema, "data_file"));
  const AvroNode& df = *data_file_schema;
  std::vector<int> df_found;
  data_file_steps = Compile(df,
                            {{Target::kContent, {"content"}, 134},
                             {Target::kFilePath, {"file_path"}, 100},
                             {Target::kFileFormat, {"file_format"}, 101},
                             {Target::kPartition, {"partition"}, 102},
                             {Target::kRecordCount, {"record_count"}, 103},
                             {Target::kFileSize, {"file_size_in_bytes"}, 104},
                             {Target::kColumnSizes, {"column_sizes"}, 108},
                             {Target::kValueCounts, {"value_counts"}, 109},
                             {Target::kNullValueCounts, {"null_value_counts"}, 110},
                             {Target::kNanValueCounts, {"nan_value_counts"}, 137},
                             {Target::kLowerBounds, {"lower_bounds"}, 125},
                             {Target::kUpperBounds, {"upper_bounds"}, 128},
                             {Target::kKeyMetadata, {"key_metadata"}, 131},
                             {Target::kSplitOffsets, {"split_offsets"}, 132},
                             {Target::kEqualityIds, {"equality_ids"}, 135},
                             {Target::kSortOrderId, {"sort_order_id"}, 140},
                             {Target::kFirstRowId, {"first_row_id"}, 142},
                             {Target::kReferencedDataFile, {"referenced_data_file"}, 143},
                             {Target::kContentOffset, {"content_offset"}, 144},
                             {Target::kContentSize, {"content_size_in_bytes"}, 145}},
                            &df_found);
  const int content = df_found[0], file_path = df_found[1], partition = df_found[3], record_count = df_found[4];
  for (Step& step : data_file_steps) {
    if (step.target < Target::kColumnSizes || step.target > Target::kUpperBounds) continue;
    step.map_layout = SimpleMapLayout(*step.type);
  }
  if (file_path < 0 || record_count < 0) {
    return Status::Corruption(name + ": data_file schema lacks file_path/record_count");
  }

  // Format version: the header key, else inferred from the layout (v1 has no sequence
  // numbers and no content column).
  if (auto v = ParseFormatVersion(file->Metadata("format-version"))) {
    format_version = *v;
  } else {
    format_version = (sequence_number >= 0 || content >= 0) ? 2 : 1;
  }

  std::vector<NestedField> fields;
  if (partition >= 0) {
    partition_schema = UnwrapOptional(*df.fields[static_cast<size_t>(partition)].type);
    SKADE_RETURN_IF_ERROR(RequireRecord(name, *partition_schema, "partition"));
    for (size_t i = 0; i < partition_schema->fields.size(); ++i) {
      const avro::AvroField& f = partition_schema->fields[i];
      auto type = PartitionFieldType(*UnwrapOptional(*f.type));
      if (!type.ok()) {
        return Status::Corruption(name + ": partition field '" + f.name + "': " + type.status().message());
      }
      NestedField nf;
      // v1 writers assigned partition field ids from 1000 when they were not tracked.
      nf.id = f.field_id.value_or(1000 + static_cast<int>(i));
      nf.name = f.name;
      nf.required = false;
      nf.type = std::move(type).value();
      fields.push_back(std::move(nf));
    }
  }
  partition_type = Type::Struct(std::move(fields));
  if (manifest.first_row_id && manifest.content == ManifestContent::kData) next_row_id = manifest.first_row_id;
  return Status::Ok();
}

template <typename V>
Status ManifestReader::Impl::ReadMetrics(const Step& step, std::string_view* in, std::map<int, V>* out) {
  if (step.map_layout) {
    const MapLayout& layout = *step.map_layout;
    std::string_view after_branch = *in;
    SKADE_ASSIGN_OR_RETURN(const AvroNode* b, Branch(*step.type, &after_branch));
    if (b == nullptr || b == layout.array) {
      *in = after_branch;
      return b == nullptr ? Status::Ok() : ReadSimpleMap(layout, in, metrics, out);
    }
  }
  return ReadMetricMap(*step.type, in, metrics, out);
}

Status ManifestReader::Impl::DecodeDataFile(std::string_view* in, DataFile* f, Present* present) {
  for (const Step& step : data_file_steps) {
    auto run = [&]() -> Status {
      switch (step.target) {
        case Target::kSkip:
          return avro::SkipValue(*step.type, in);
        case Target::kContent: {
          SKADE_ASSIGN_OR_RETURN(std::optional<int> code, ReadInt32(*step.type, in));
          if (code && (*code < 0 || *code > 2)) return Status::Corruption("unknown content type");
          f->content = static_cast<DataFileContent>(code.value_or(0));
          return Status::Ok();
        }
        case Target::kFilePath: {
          SKADE_ASSIGN_OR_RETURN(std::optional<std::string_view> v, ReadByteString(*step.type, in));
          if (v) f->file_path.assign(*v);
          present->path = v.has_value();
          return Status::Ok();
        }
        case Target::kFileFormat: {
          SKADE_ASSIGN_OR_RETURN(std::optional<std::string_view> v, ReadByteString(*step.type, in));
          if (!v) return Status::Ok();
          SKADE_ASSIGN_OR_RETURN(f->file_format, ParseFileFormat(*v));
          present->format = true;
          return Status::Ok();
        }
        case Target::kPartition: {
          SKADE_ASSIGN_OR_RETURN(const AvroNode* b, Branch(*step.type, in));
          if (b == nullptr) return Status::Ok();
          if (b != partition_schema) return Status::Corruption("partition tuple does not match its schema");
          const auto& types = partition_type->fields();
          f->partition.reserve(types.size());
          for (size_t i = 0; i < types.size(); ++i) {
            SKADE_ASSIGN_OR_RETURN(std::optional<Literal> lit, PartitionValue(*b->fields[i].type, types[i], in));
            f->partition.push_back(std::move(lit));
          }
          return Status::Ok();
        }
        case Target::kRecordCount: {
          SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> v, ReadInteger(*step.type, in));
          f->record_count = v.value_or(0);
          present->count = v.has_value();
          return Status::Ok();
        }
        case Target::kFileSize: {
          SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> v, ReadInteger(*step.type, in));
          f->file_size_in_bytes = v.value_or(0);
          present->size = v.has_value();
          return Status::Ok();
        }
        case Target::kColumnSizes:
          return ReadMetrics(step, in, &f->column_sizes);
        case Target::kValueCounts:
          return ReadMetrics(step, in, &f->value_counts);
        case Target::kNullValueCounts:
          return ReadMetrics(step, in, &f->null_value_counts);
        case Target::kNanValueCounts:
          return ReadMetrics(step, in, &f->nan_value_counts);
        case Target::kLowerBounds:
          return ReadMetrics(step, in, &f->lower_bounds);
        case Target::kUpperBounds:
          return ReadMetrics(step, in, &f->upper_bounds);
        case Target::kKeyMetadata:
        case Target::kReferencedDataFile: {
          SKADE_ASSIGN_OR_RETURN(std::optional<std::string_view> v, ReadByteString(*step.type, in));
          if (v) (step.target == Target::kKeyMetadata ? f->key_metadata : f->referenced_data_file) = std::string(*v);
          return Status::Ok();
        }
        case Target::kSplitOffsets:
          if (!split_offsets) return avro::SkipValue(*step.type, in);
          return ReadIntegerList(*step.type, in, &f->split_offsets);
        case Target::kEqualityIds:
          return ReadIntegerList(*step.type, in, &f->equality_ids);
        case Target::kSortOrderId: {
          SKADE_ASSIGN_OR_RETURN(f->sort_order_id, ReadInt32(*step.type, in));
          return Status::Ok();
        }
        case Target::kFirstRowId: {
          SKADE_ASSIGN_OR_RETURN(f->first_row_id, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        case Target::kContentOffset: {
          SKADE_ASSIGN_OR_RETURN(f->content_offset, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        case Target::kContentSize: {
          SKADE_ASSIGN_OR_RETURN(f->content_size_in_bytes, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        default:
          return Status::Internal("manifest entry target in a data_file");
      }
    };
    Status st = run();
    if (!st.ok()) return step.target == Target::kSkip ? st : FieldError(step, st.message());
  }
  return Status::Ok();
}

Status ManifestReader::Impl::Decode(std::string_view* in, ManifestEntry* out) {
  ManifestEntry& entry = *out;
  entry = ManifestEntry();
  std::optional<int> status;
  Present present;
  for (const Step& step : entry_steps) {
    auto run = [&]() -> Status {
      switch (step.target) {
        case Target::kSkip:
          return avro::SkipValue(*step.type, in);
        case Target::kStatus: {
          SKADE_ASSIGN_OR_RETURN(status, ReadInt32(*step.type, in));
          return Status::Ok();
        }
        case Target::kSnapshotId: {
          SKADE_ASSIGN_OR_RETURN(entry.snapshot_id, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        case Target::kSequenceNumber: {
          SKADE_ASSIGN_OR_RETURN(entry.sequence_number, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        case Target::kFileSequenceNumber: {
          SKADE_ASSIGN_OR_RETURN(entry.file_sequence_number, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        case Target::kDataFile: {
          SKADE_ASSIGN_OR_RETURN(const AvroNode* b, Branch(*step.type, in));
          if (b == nullptr) return Status::Ok();
          if (b != data_file_schema) return Status::Corruption("data_file is not a record");
          present.data_file = true;
          return DecodeDataFile(in, &entry.data_file, &present);
        }
        default:
          return Status::Internal("data_file target in a manifest entry");
      }
    };
    Status st = run();
    if (!st.ok()) {
      if (step.target == Target::kSkip || step.target == Target::kDataFile) return st;
      return FieldError(step, st.message());
    }
  }
  auto missing = [&](Target target, const char* what) {
    for (const auto* steps : {&entry_steps, &data_file_steps}) {
      for (const Step& s : *steps) {
        if (s.target == target) return FieldError(s, what);
      }
    }
    return Status::Corruption(what);
  };
  if (!status) return missing(Target::kStatus, "required value is missing");
  if (*status < 0 || *status > 2) return missing(Target::kStatus, "unknown entry status");
  if (!present.data_file) return missing(Target::kDataFile, "missing data_file");
  if (!present.path) return missing(Target::kFilePath, "required value is missing");
  if (!present.format) return missing(Target::kFileFormat, "required value is missing");
  if (!present.count) return missing(Target::kRecordCount, "required value is missing");
  if (!present.size) return missing(Target::kFileSize, "required value is missing");
  entry.status = static_cast<ManifestEntryStatus>(*status);
  entry.data_file.spec_id = manifest.partition_spec_id;

  // Spec "Sequence Number Inheritance" / "Snapshot ID Inheritance".
  if (!entry.snapshot_id) entry.snapshot_id = manifest.added_snapshot_id;
  if (format_version == 1) {
    entry.sequence_number = 0;
    entry.file_sequence_number = 0;
  } else {
    // A manifest listed with sequence number 0 was written before sequence numbers existed;
    // everything in it inherits 0.
    const bool inherit = entry.status == ManifestEntryStatus::kAdded || manifest.sequence_number == 0;
    if (!entry.sequence_number) {
      if (!inherit) return missing(Target::kSequenceNumber, "null sequence number on a non-ADDED entry");
      entry.sequence_number = manifest.sequence_number;
    }
    if (!entry.file_sequence_number) {
      if (!inherit) return missing(Target::kFileSequenceNumber, "null file sequence number on a non-ADDED entry");
      entry.file_sequence_number = manifest.sequence_number;
    }
  }
  // Spec "First Row ID Inheritance": null ids of live data files follow the manifest's
  // first_row_id (a manifest list reserves added + existing rows for them; DELETED entries
  // take none, or the live ones after them would pass the reserved range).
  DataFile& f = entry.data_file;
  if (next_row_id && f.content == DataFileContent::kData && !f.first_row_id &&
      entry.status != ManifestEntryStatus::kDeleted) {
    f.first_row_id = *next_row_id;
    *next_row_id += f.record_count;
  }
  return Status::Ok();
}

ManifestReader::ManifestReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ManifestReader::~ManifestReader() = default;

Result<std::unique_ptr<ManifestReader>> ManifestReader::Open(io::FileIO& io, std::string_view location,
                                                             const ManifestFile& manifest,
                                                             ManifestReadOptions options) {
  SKADE_ASSIGN_OR_RETURN(std::string data, io.Read(location));
  return FromBytes(std::move(data), std::string(location), manifest, std::move(options));
}

Result<std::unique_ptr<ManifestReader>> ManifestReader::FromBytes(std::string data, std::string name,
                                                                  const ManifestFile& manifest,
                                                                  ManifestReadOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  impl->manifest = manifest;
  impl->metrics = IdFilter(options.metric_field_ids);
  impl->split_offsets = options.split_offsets;
  SKADE_ASSIGN_OR_RETURN(impl->file, avro::FileReader::Open(std::move(data), std::move(name)));
  SKADE_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<ManifestReader>(new ManifestReader(std::move(impl)));
}

std::optional<std::string> ManifestReader::Metadata(std::string_view key) const { return impl_->file->Metadata(key); }

int ManifestReader::format_version() const { return impl_->format_version; }

const TypePtr& ManifestReader::partition_type() const { return impl_->partition_type; }

Result<bool> ManifestReader::NextInto(ManifestEntry* entry) {
  Impl& r = *impl_;
  if (!r.failed.ok()) return r.failed;
  if (r.left == 0) {
    auto count = r.file->NextBlock(&r.cursor);
    if (!count.ok()) {
      r.failed = count.status();
      return r.failed;
    }
    if (*count == 0) return false;
    r.left = *count;
  }
  Status decoded = r.Decode(r.cursor, entry);
  if (!decoded.ok()) {
    r.failed = Status::Corruption(r.name + ": " + decoded.message());
    return r.failed;
  }
  --r.left;
  return true;
}

Result<std::optional<ManifestEntry>> ManifestReader::Next() {
  std::optional<ManifestEntry> entry(std::in_place);
  SKADE_ASSIGN_OR_RETURN(bool more, NextInto(&*entry));
  if (!more) entry.reset();
  return entry;
}

Status ForEachLiveEntry(io::FileIO& io, const ManifestFile& manifest,
                        const std::function<Status(ManifestEntry&)>& fn, const ManifestReadOptions& options) {
  SKADE_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(io, manifest.manifest_path, manifest, options));
  ManifestEntry entry;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(bool more, reader->NextInto(&entry));
    if (!more) return Status::Ok();
    if (entry.status == ManifestEntryStatus::kDeleted) continue;
    SKADE_RETURN_IF_ERROR(fn(entry));
  }
}

}  // namespace skade::iceberg
