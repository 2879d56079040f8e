// A small Avro implementation for Iceberg manifests: schemas parsed with every attribute kept
// (field-id, element-id, logicalType…), generic values, binary encoding, and the object
// container file format (header metadata, sync markers, null and deflate codecs). avro-c is
// not used because it drops field ids and cannot write file metadata (TOOLCHAIN.md §6).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "skade/base/status.h"

namespace skade::iceberg::avro {

enum class AvroKind {
  kNull, kBoolean, kInt, kLong, kFloat, kDouble, kBytes, kString,
  kRecord, kEnum, kArray, kMap, kUnion, kFixed,
};

struct AvroNode;
using AvroNodePtr = std::shared_ptr<const AvroNode>;

struct AvroField {
  std::string name;
  AvroNodePtr type;
  std::optional<int> field_id;  // the "field-id" attribute
  bool has_default = false;     // a "default" attribute is present
  std::vector<std::string> aliases;
  std::string doc;
  // Any other attribute, as (key, raw JSON text) in document order.
  std::vector<std::pair<std::string, std::string>> attributes;
};

// One node of a parsed schema. Named types referenced by name share the node.
struct AvroNode {
  AvroKind kind = AvroKind::kNull;
  std::string name;                 // record/enum/fixed full name
  std::string logical_type;         // e.g. "map", "decimal", "uuid"
  std::vector<AvroField> fields;    // record
  std::vector<std::string> symbols; // enum
  AvroNodePtr items;                // array
  AvroNodePtr values;               // map
  std::vector<AvroNodePtr> branches;  // union
  int size = 0;                     // fixed
  std::optional<int> element_id;    // array "element-id"
  std::optional<int> key_id;        // "key-id" (maps and map-like arrays)
  std::optional<int> value_id;      // "value-id"
  int precision = 0;                // decimal "precision"
  int scale = 0;                    // decimal "scale"
  std::optional<bool> adjust_to_utc;  // Iceberg's "adjust-to-utc" on timestamps
  std::vector<std::string> aliases;   // named types
  // Any other attribute, as (key, raw JSON text) in document order.
  std::vector<std::pair<std::string, std::string>> attributes;

  // Index of a record field by name, or -1.
  int FieldIndex(std::string_view field_name) const;
  // Index of the first non-null union branch, or -1.
  int NonNullBranch() const;
};

// Parses a schema JSON document. kInvalidArgument on malformed schemas.
Result<AvroNodePtr> ParseSchema(std::string_view json);

// A decoded value. Records and arrays hold their elements in `items` (record: one per field
// in schema order); maps hold (key, value) in `entries`; a union holds the chosen branch's
// value directly (null → kNull). Strings, bytes and fixed are raw bytes in `bytes`; enums the
// symbol index in `long_value`.
struct AvroValue {
  enum class Tag { kNull, kBool, kLong, kFloat, kDouble, kBytes, kList, kMap };
  Tag tag = Tag::kNull;
  bool bool_value = false;
  int64_t long_value = 0;  // int, long, enum index
  float float_value = 0;
  double double_value = 0;
  std::string bytes;
  std::vector<AvroValue> items;
  std::vector<std::pair<std::string, AvroValue>> entries;
  // For unions while encoding: the branch to write; -1 picks the first branch whose kind
  // matches the value's tag (null → the null branch).
  int branch = -1;

  static AvroValue Null() { return AvroValue(); }
  static AvroValue Bool(bool v);
  static AvroValue Long(int64_t v);
  static AvroValue Float(float v);
  static AvroValue Double(double v);
  static AvroValue Bytes(std::string v);
  static AvroValue List(std::vector<AvroValue> items);
  static AvroValue Map(std::vector<std::pair<std::string, AvroValue>> entries);

  bool is_null() const { return tag == Tag::kNull; }
};

// Binary decoding/encoding of one value against a schema. Decoding fails with kCorruption on
// truncated or invalid input (never reads out of bounds).
Result<AvroValue> DecodeValue(const AvroNode& schema, std::string_view* input);
Status EncodeValue(const AvroNode& schema, const AvroValue& value, std::string* out);

// Decoding straight from the bytes, for schema-specialised decoders (manifests) that fill
// their own structs instead of building AvroValues. Each primitive advances the cursor and
// fails with kCorruption on truncated or invalid input, never reading out of bounds.
Result<int64_t> ReadLong(std::string_view* in);  // int and long: a zig-zag varint
Result<int32_t> ReadInt(std::string_view* in);   // kCorruption outside 32 bits
// bytes and string: a view into the input.
Result<std::string_view> ReadBytes(std::string_view* in);
// Upper bound for items of zero-byte types (null, empty records) in one array, map or block,
// so that a garbled count cannot make a reader loop for ever.
inline constexpr int64_t kMaxZeroSizeItems = int64_t{1} << 20;
// The fewest bytes one value of `node` takes (0 only for null and records of such).
size_t MinEncodedSize(const AvroNode& node);
// Arrays and maps come in blocks. Reads one block header and returns its item count (0 at the
// end), checked against the input left for items of at least `min_item_size` bytes (zero-size
// items are capped in number, counted in `*total` across blocks). `byte_size` receives the
// block's size in bytes when the writer gave it, else -1.
Result<int64_t> ReadBlockCount(size_t min_item_size, std::string_view* in, int64_t* total,
                               int64_t* byte_size = nullptr);
// Steps over one value of `schema` without building it (blocks with a byte size in one step).
Status SkipValue(const AvroNode& schema, std::string_view* in);

enum class Codec { kNull, kDeflate };

// Reads an object container file held in memory. Not thread-safe.
class FileReader {
 public:
  // Parses the header. `name` is used in error messages. kCorruption for a bad magic,
  // header or sync marker, kNotImplemented for codecs other than null/deflate.
  static Result<std::unique_ptr<FileReader>> Open(std::string data, std::string name);

  const AvroNodePtr& schema() const { return schema_; }
  const std::string& schema_json() const { return schema_json_; }
  // Header metadata including "avro.schema" and "avro.codec".
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  std::optional<std::string> Metadata(std::string_view key) const;

  // The next record, or nullopt at the end. kCorruption for a bad block or sync marker.
  Result<std::optional<AvroValue>> Next();

  // For decoders that read records straight from the bytes (do not mix with Next): loads the
  // next block and returns its record count, 0 at the end, with `*records` pointing at a
  // cursor over its bytes (valid until the next call). The decoder reads that many records
  // from the cursor; bytes left after them are reported by the next call as corruption.
  Result<int64_t> NextBlock(std::string_view** records);

 private:
  FileReader() = default;
  Status LoadBlock();
  Status CheckBlockEnd() const;

  std::string name_;
  std::string data_;
  size_t pos_ = 0;
  std::string sync_;
  Codec codec_ = Codec::kNull;
  AvroNodePtr schema_;
  std::string schema_json_;
  std::map<std::string, std::string> metadata_;
  // The inflated block: room kept between blocks, never cleared (inflating overwrites it).
  std::unique_ptr<char[]> block_;
  size_t block_capacity_ = 0;
  std::string_view block_rest_;
  int64_t block_remaining_ = 0;
};

// Writes an object container file into memory. The schema JSON is written verbatim (so
// field-id attributes survive); `metadata` adds header keys. Not thread-safe.
class FileWriter {
 public:
  static Result<std::unique_ptr<FileWriter>> Create(
      std::string schema_json, std::vector<std::pair<std::string, std::string>> metadata,
      Codec codec);

  // Encodes one record (kInvalidArgument if it does not match the schema).
  Status Append(const AvroValue& record);
  // Flushes and returns the whole file; the writer is then spent.
  Result<std::string> Finish();

 private:
  FileWriter() = default;
  Status FlushBlock();

  AvroNodePtr schema_;
  Codec codec_ = Codec::kNull;
  std::string out_;
  std::string sync_;
  std::string block_;
  int64_t block_count_ = 0;
  bool finished_ = false;
};

}  // namespace skade::iceberg::avro
