#include "skade/arrow/builder.h"

#include <cstring>
#include <memory>

#include "skade/arrow/stream_of.h"

namespace skade::arrow {
namespace {

int IntWidth(char f) {
  switch (f) {
    case 'c': case 'C': return 1;
    case 's': case 'S': return 2;
    case 'i': case 'I': return 4;
    default: return 8;
  }
}

struct SchemaPrivate {
  std::string format, name, metadata;
  std::vector<ArrowSchema> children;
  std::vector<ArrowSchema*> child_ptrs;
  std::vector<ArrowSchema> dictionary;  // zero or one
};

void ReleaseSchema(ArrowSchema* s) {
  std::unique_ptr<SchemaPrivate> p(static_cast<SchemaPrivate*>(s->private_data));  // C handoff ends here
  for (auto& c : p->children) {
    if (c.release) c.release(&c);
  }
  for (auto& d : p->dictionary) {
    if (d.release) d.release(&d);
  }
  s->release = nullptr;
}

struct ArrayPrivate {
  std::vector<uint8_t> validity, values;
  std::vector<int32_t> offsets;
  std::vector<const void*> buffers;
  std::vector<ArrowArray> children;
  std::vector<ArrowArray*> child_ptrs;
};

void ReleaseArray(ArrowArray* a) {
  std::unique_ptr<ArrayPrivate> p(static_cast<ArrayPrivate*>(a->private_data));  // C handoff ends here
  for (auto& c : p->children) {
    if (c.release) c.release(&c);
  }
  a->release = nullptr;
}

// The batches of MakeBatchStream, handed out in order.
class BatchStream {
 public:
  BatchStream(SchemaHandle schema, std::vector<ArrayHandle> batches)
      : schema_(std::move(schema)), batches_(std::move(batches)) {}
  int GetSchema(ArrowSchema* out);
  int GetNext(ArrowArray* out) {
    if (next_ >= batches_.size()) {
      out->release = nullptr;
      return 0;
    }
    batches_[next_++].MoveTo(out);
    return 0;
  }
  const char* LastError() const { return nullptr; }

 private:
  SchemaHandle schema_;
  std::vector<ArrayHandle> batches_;
  size_t next_ = 0;
};

}  // namespace

std::string EncodeMetadata(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string out;
  auto put = [&out](int32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  put(static_cast<int32_t>(kv.size()));
  for (const auto& [k, v] : kv) {
    put(static_cast<int32_t>(k.size()));
    out += k;
    put(static_cast<int32_t>(v.size()));
    out += v;
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> DecodeMetadata(const char* metadata) {
  std::vector<std::pair<std::string, std::string>> out;
  if (metadata == nullptr) return out;
  auto read_i32 = [&metadata]() {
    int32_t v;
    std::memcpy(&v, metadata, 4);
    metadata += 4;
    return v;
  };
  int32_t n = read_i32();
  if (n < 0) return Status::InvalidArgument("negative metadata count");
  for (int32_t i = 0; i < n; ++i) {
    int32_t kl = read_i32();
    if (kl < 0) return Status::InvalidArgument("negative metadata key length");
    std::string key(metadata, kl);
    metadata += kl;
    int32_t vl = read_i32();
    if (vl < 0) return Status::InvalidArgument("negative metadata value length");
    std::string value(metadata, vl);
    metadata += vl;
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}


ArrayBuilder::ArrayBuilder(std::string name, std::string format, bool nullable, std::vector<ArrayBuilder> children)
    : name_(std::move(name)), format_(std::move(format)), nullable_(nullable), children_(std::move(children)) {
  if (format_ == "u" || format_ == "z" || format_ == "+l" || format_ == "+m") offsets_.push_back(0);
  if (format_.rfind("+ud:", 0) == 0) {
    std::string codes = format_.substr(4);
    size_t pos = 0;
    while (pos <= codes.size() && !codes.empty()) {
      size_t comma = codes.find(',', pos);
      union_codes_.push_back(std::stoi(codes.substr(pos, comma - pos)));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
}

void ArrayBuilder::PushValid(bool valid) {
  if (validity_.size() * 8 < static_cast<size_t>(length_ + 1)) validity_.push_back(0);
  if (valid) {
    validity_[length_ >> 3] |= static_cast<uint8_t>(1u << (length_ & 7));
  } else {
    ++null_count_;
  }
  ++length_;
}

void ArrayBuilder::AppendNull() {
  const char f = format_[0];
  if (format_ == "b") {
    if (values_.size() * 8 < static_cast<size_t>(length_ + 1)) values_.push_back(0);
  } else if (format_ == "u" || format_ == "z" || format_ == "+l" || format_ == "+m") {
    offsets_.push_back(offsets_.back());
  } else if (format_ == "+s") {
    for (auto& c : children_) c.AppendNull();
  } else if (format_ == "f") {
    values_.resize(values_.size() + 4);
  } else if (format_ == "g") {
    values_.resize(values_.size() + 8);
  } else if (f != '+') {
    values_.resize(values_.size() + IntWidth(f));
  }
  PushValid(false);
}

void ArrayBuilder::AppendBool(bool v) {
  if (values_.size() * 8 < static_cast<size_t>(length_ + 1)) values_.push_back(0);
  if (v) values_[length_ >> 3] |= static_cast<uint8_t>(1u << (length_ & 7));
  PushValid(true);
}

void ArrayBuilder::AppendInt(int64_t v) {
  int w = IntWidth(format_[0]);
  size_t at = values_.size();
  values_.resize(at + w);
  std::memcpy(values_.data() + at, &v, w);  // little-endian: the low bytes
  PushValid(true);
}

void ArrayBuilder::AppendDouble(double v) {
  size_t at = values_.size();
  if (format_ == "f") {
    float x = static_cast<float>(v);
    values_.resize(at + 4);
    std::memcpy(values_.data() + at, &x, 4);
  } else {
    values_.resize(at + 8);
    std::memcpy(values_.data() + at, &v, 8);
  }
  PushValid(true);
}

void ArrayBuilder::AppendString(std::string_view v) {
  values_.insert(values_.end(), v.begin(), v.end());
  offsets_.push_back(static_cast<int32_t>(values_.size()));
  PushValid(true);
}

void ArrayBuilder::AppendList(int64_t n) {
  offsets_.push_back(offsets_.back() + static_cast<int32_t>(n));
  PushValid(true);
}

void ArrayBuilder::AppendStruct() { PushValid(true); }

void ArrayBuilder::AppendUnion(int8_t code) {
  size_t child = 0;
  while (child < union_codes_.size() && union_codes_[child] != code) ++child;
  values_.push_back(static_cast<uint8_t>(code));
  offsets_.push_back(static_cast<int32_t>(children_[child].length()));
  ++length_;
}

Status ArrayBuilder::Finish(ArrowSchema* schema, ArrowArray* array) {
  bool is_union = format_.rfind("+ud:", 0) == 0;
  if (is_union && children_.size() != union_codes_.size()) {
    return Status::InvalidArgument("union builder " + name_ + " needs one child per type code");
  }
  auto sp_owner = std::make_unique<SchemaPrivate>(
      SchemaPrivate{format_, name_, metadata_.empty() ? "" : EncodeMetadata(metadata_), {}, {}, {}});
  auto ap_owner = std::make_unique<ArrayPrivate>();
  SchemaPrivate* sp = sp_owner.get();
  ArrayPrivate* ap = ap_owner.get();
  sp->children.resize(children_.size());
  ap->children.resize(children_.size());
  for (size_t i = 0; i < children_.size(); ++i) {
    Status st = children_[i].Finish(&sp->children[i], &ap->children[i]);
    if (!st.ok()) {
      for (size_t j = 0; j < i; ++j) {
        sp->children[j].release(&sp->children[j]);
        ap->children[j].release(&ap->children[j]);
      }
      return st;
    }
  }
  for (auto& c : sp->children) sp->child_ptrs.push_back(&c);
  for (auto& c : ap->children) ap->child_ptrs.push_back(&c);
  schema->format = sp->format.c_str();
  schema->name = sp->name.c_str();
  schema->metadata = sp->metadata.empty() ? nullptr : sp->metadata.data();
  schema->flags = nullable_ ? ARROW_FLAG_NULLABLE : 0;
  schema->n_children = static_cast<int64_t>(sp->children.size());
  schema->children = sp->child_ptrs.data();
  schema->dictionary = nullptr;
  schema->release = ReleaseSchema;
  schema->private_data = sp_owner.release();  // owned by the C struct from here

  ap->validity = std::move(validity_);
  ap->values = std::move(values_);
  ap->offsets = std::move(offsets_);
  if (is_union) {
    ap->buffers = {ap->values.data(), ap->offsets.data()};
  } else {
    ap->buffers.push_back(null_count_ > 0 ? ap->validity.data() : nullptr);
    if (format_ == "u" || format_ == "z") {
      ap->buffers.push_back(ap->offsets.data());
      ap->buffers.push_back(ap->values.data());
    } else if (format_ == "+l" || format_ == "+m") {
      ap->buffers.push_back(ap->offsets.data());
    } else if (format_ != "+s") {
      ap->buffers.push_back(ap->values.data());
    }
  }
  array->length = length_;
  array->null_count = null_count_;
  array->offset = 0;
  array->n_buffers = static_cast<int64_t>(ap->buffers.size());
  array->n_children = static_cast<int64_t>(ap->children.size());
  array->buffers = ap->buffers.data();
  array->children = ap->child_ptrs.data();
  array->dictionary = nullptr;
  array->release = ReleaseArray;
  array->private_data = ap_owner.release();  // owned by the C struct from here

  length_ = 0;
  null_count_ = 0;
  validity_.clear();
  values_.clear();
  offsets_.clear();
  if (format_ == "u" || format_ == "z" || format_ == "+l" || format_ == "+m") offsets_.push_back(0);
  return Status::Ok();
}

ArrayBuilder RecordBatchBuilder(std::vector<ArrayBuilder> columns) {
  return ArrayBuilder("", "+s", false, std::move(columns));
}

namespace {

int BatchStream::GetSchema(ArrowSchema* out) {
  // Every call hands out an independent deep copy.
  CopySchema(*schema_.get(), out);
  return 0;
}

void AppendSchemaKey(const ArrowSchema& s, std::string& key) {
  auto put_size = [&key](uint64_t n) { key.append(reinterpret_cast<const char*>(&n), sizeof n); };
  auto put = [&](std::string_view text) {
    put_size(text.size());
    key.append(text);
  };
  put(s.format ? s.format : "");
  put(s.name ? s.name : "");
  put_size(static_cast<uint64_t>(s.flags));
  auto metadata = DecodeMetadata(s.metadata);
  if (!metadata.ok()) {
    key.push_back('!');
  } else {
    key.push_back('m');
    put_size(metadata->size());
    for (const auto& [k, v] : *metadata) {
      put(k);
      put(v);
    }
  }
  put_size(static_cast<uint64_t>(s.n_children));
  for (int64_t i = 0; i < s.n_children; ++i) AppendSchemaKey(*s.children[i], key);
  key.push_back(s.dictionary != nullptr ? 'd' : '-');
  if (s.dictionary != nullptr) AppendSchemaKey(*s.dictionary, key);
}

}  // namespace

std::string SchemaKey(const ArrowSchema& schema) {
  std::string key;
  AppendSchemaKey(schema, key);
  return key;
}

void CopySchema(const ArrowSchema& from, ArrowSchema* to,
                const std::vector<std::vector<std::pair<std::string, std::string>>>* child_metadata) {
  auto owner = std::make_unique<SchemaPrivate>(
      SchemaPrivate{from.format ? from.format : "", from.name ? from.name : "", "", {}, {}, {}});
  SchemaPrivate* p = owner.get();
  if (from.dictionary != nullptr) {
    p->dictionary.resize(1);
    CopySchema(*from.dictionary, &p->dictionary[0]);
  }
  // Malformed metadata is not copied (a copy must not read past what the lengths promise).
  auto own = DecodeMetadata(from.metadata);
  if (own.ok() && !own->empty()) p->metadata = EncodeMetadata(*own);
  p->children.resize(from.n_children);
  for (int64_t i = 0; i < from.n_children; ++i) {
    CopySchema(*from.children[i], &p->children[i]);
    if (child_metadata != nullptr && static_cast<size_t>(i) < child_metadata->size()) {
      auto* cp = static_cast<SchemaPrivate*>(p->children[i].private_data);
      const auto& kv = (*child_metadata)[i];
      cp->metadata = kv.empty() ? "" : EncodeMetadata(kv);
      p->children[i].metadata = cp->metadata.empty() ? nullptr : cp->metadata.data();
    }
  }
  for (auto& c : p->children) p->child_ptrs.push_back(&c);
  to->format = p->format.c_str();
  to->name = p->name.c_str();
  to->metadata = p->metadata.empty() ? nullptr : p->metadata.data();
  to->flags = from.flags;
  to->n_children = from.n_children;
  to->children = p->child_ptrs.data();
  to->dictionary = p->dictionary.empty() ? nullptr : &p->dictionary[0];
  to->release = ReleaseSchema;
  to->private_data = owner.release();  // owned by the C struct from here
}

StreamHandle MakeBatchStream(SchemaHandle schema, std::vector<ArrayHandle> batches) {
  return StreamOf(std::make_unique<BatchStream>(std::move(schema), std::move(batches)));
}

}  // namespace skade::arrow
