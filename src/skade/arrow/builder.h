// ArrayBuilder: builds small Arrow arrays value by value (metadata listings, server replies)
// as owning C Data Interface structs. A tree of builders mirrors the schema; parents record
// only their own validity / offsets / type ids and the caller appends to the children.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"

namespace skade::arrow {

class ArrayBuilder {
 public:
  // `format`: a C Data Interface format string among b, c C s S i I l L, f g, u z, +l, +s,
  // +m (one "+s" child holding key and value), +ud:<codes> (dense union, one child per code).
  ArrayBuilder(std::string name, std::string format, bool nullable, std::vector<ArrayBuilder> children = {});

  ArrayBuilder& child(size_t i) { return children_[i]; }
  const std::string& name() const { return name_; }
  int64_t length() const { return length_; }
  // Field-level key/value metadata (e.g. ARROW:FLIGHT:SQL:TYPE_NAME).
  void set_metadata(std::vector<std::pair<std::string, std::string>> kv) { metadata_ = std::move(kv); }

  void AppendNull();
  void AppendBool(bool v);
  void AppendInt(int64_t v);  // any integer format (truncated to its width)
  void AppendDouble(double v);
  void AppendString(std::string_view v);  // u or z
  // A list (or map) value made of the last `n` values appended to the child.
  void AppendList(int64_t n);
  // A valid struct row; each child gets one value appended by the caller.
  void AppendStruct();
  // A dense-union value of type `code`; append the value to that child right after.
  void AppendUnion(int8_t code);

  // Exports the schema and the array (both owning). Leaves the builder empty.
  Status Finish(ArrowSchema* schema, ArrowArray* array);

 private:
  void PushValid(bool valid);
  std::string name_;
  std::string format_;
  bool nullable_;
  std::vector<ArrayBuilder> children_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  int64_t length_ = 0;
  int64_t null_count_ = 0;
  std::vector<uint8_t> validity_;
  std::vector<uint8_t> values_;     // fixed-width values, bool bits, bytes of u/z, type ids
  std::vector<int32_t> offsets_;    // u/z/+l/+m offsets (length + 1), or dense union offsets
  std::vector<int32_t> union_codes_;
};

// A stream of one schema and the given batches (struct arrays), e.g. for a finished result.
StreamHandle MakeBatchStream(SchemaHandle schema, std::vector<ArrayHandle> batches);

// A struct ArrayBuilder named "" whose children are the columns; Finish gives one batch.
ArrayBuilder RecordBatchBuilder(std::vector<ArrayBuilder> columns);

// An independent deep copy of a schema (formats, names, metadata, flags, dictionaries).
// `child_metadata`, if given, replaces the metadata of the top-level children (one entry per
// child).
void CopySchema(const ArrowSchema& from, ArrowSchema* to,
                const std::vector<std::vector<std::pair<std::string, std::string>>>* child_metadata = nullptr);

// A byte string equal for two schemas exactly when their trees are: formats, names, flags,
// metadata (decoded; malformed metadata gives a key of its own) and dictionaries, child by
// child. For caching what is derived from a schema alone (e.g. how DuckDB types its columns).
std::string SchemaKey(const ArrowSchema& schema);

// C Data Interface metadata bytes (int32 count, then length-prefixed keys and values).
std::string EncodeMetadata(const std::vector<std::pair<std::string, std::string>>& kv);
// The key/value pairs of C Data Interface metadata (none for nullptr). kInvalidArgument for a
// negative count or length.
Result<std::vector<std::pair<std::string, std::string>>> DecodeMetadata(const char* metadata);

}  // namespace skade::arrow
