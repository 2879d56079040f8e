#include "skade/engine/copy_stats_internal.h"

#include <nlohmann/json.hpp>

#include "skade/engine/duck_text_internal.h"
#include "skade/iceberg/literal.h"

namespace skade::engine {
namespace {

using iceberg::Literal;
using iceberg::NestedField;
using iceberg::TypeId;
using Json = nlohmann::json;

// Spec "Metrics" truncation: a lower bound may be a prefix; an upper bound must stay above
// every value, so its last kept code point is incremented. nullopt = no valid upper bound.
std::string TruncateUtf8(const std::string& s, int length) {
  size_t i = 0;
  int count = 0;
  while (i < s.size() && count < length) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    ++count;
  }
  return s.substr(0, i);
}

std::optional<std::string> TruncateUpperUtf8(const std::string& s, int length) {
  std::string t = TruncateUtf8(s, length);
  if (t.size() == s.size()) return t;
  // Increment the last code point (skipping surrogates); drop it and carry if it overflows.
  while (!t.empty()) {
    size_t start = t.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(t[start]) & 0xC0) == 0x80) --start;
    std::string cp = t.substr(start);
    t.resize(start);
    uint32_t code = 0;
    unsigned char b0 = static_cast<unsigned char>(cp[0]);
    if (b0 < 0x80) {
      code = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      code = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      code = b0 & 0x0F;
    } else {
      code = b0 & 0x07;
    }
    for (size_t k = 1; k < cp.size(); ++k) code = (code << 6) | (static_cast<unsigned char>(cp[k]) & 0x3F);
    ++code;
    if (code >= 0xD800 && code <= 0xDFFF) code = 0xE000;
    if (code > 0x10FFFF) continue;  // carry into the previous code point
    if (code < 0x80) {
      t.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      t.push_back(static_cast<char>(0xC0 | (code >> 6)));
      t.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      t.push_back(static_cast<char>(0xE0 | (code >> 12)));
      t.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      t.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      t.push_back(static_cast<char>(0xF0 | (code >> 18)));
      t.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      t.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      t.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
    return t;
  }
  return std::nullopt;
}

// Leaf columns with metrics: DuckDB's statistics key ("\"a\".\"b\"") → field.
void CollectLeaves(const std::vector<NestedField>& fields, const std::string& prefix, bool repeated,
                   std::map<std::string, std::pair<const NestedField*, bool>>* out) {
  for (const NestedField& f : fields) {
    std::string key = (prefix.empty() ? "" : prefix + ".") + QuoteIdentifier(f.name);
    if (f.type->is_primitive()) {
      (*out)[key] = {&f, repeated};
    } else {
      bool inner_repeated = repeated || f.type->id() != TypeId::kStruct;
      CollectLeaves(f.type->fields(), key, inner_repeated, out);
    }
  }
}

// The partition column holds an encoding of the value that parses back exactly: integers for
// int-like values (days, micros, unscaled decimals), text otherwise.
// A time partition's value is its folder text (PartitionFolderTextSql) when `folder_text`.
Result<std::optional<Literal>> PartitionLiteral(const iceberg::TypePtr& type, const Json& value,
                                                std::optional<iceberg::TransformKind> folder_text) {
  if (value.is_null()) return std::optional<Literal>();
  if (!value.is_string()) return Status::Internal("unexpected partition key value");
  const std::string text = value.get<std::string>();
  std::optional<Literal> lit;
  if (folder_text) {
    if (std::optional<int64_t> ordinal = OrdinalFromPartitionFolderText(*folder_text, text)) {
      lit = LiteralFromEncodedInteger(type, std::to_string(*ordinal));
    }
  } else if (IsIntegerEncoded(type->id())) {
    lit = LiteralFromEncodedInteger(type, text);
  } else if (type->id() == TypeId::kDecimal) {
    if (auto v = ParseInt128(text)) lit = Literal::Decimal(*v, type->precision(), type->scale());
  } else {
    lit = LiteralFromDuckText(type, text);
  }
  if (!lit) return Status::Internal("cannot read partition value '" + text + "' as " + type->ToString());
  return std::optional<Literal>(std::move(*lit));
}

}  // namespace

CopyStatsReader::CopyStatsReader(const iceberg::Schema& schema, const iceberg::PartitionSpec& spec,
                                 std::vector<std::string> partition_columns,
                                 std::vector<iceberg::TypePtr> partition_types, int metrics_truncate_length)
    : spec_id_(spec.spec_id()),
      partition_columns_(std::move(partition_columns)),
      partition_types_(std::move(partition_types)),
      metrics_truncate_length_(metrics_truncate_length) {
  CollectLeaves(schema.fields(), "", false, &leaves_);
  for (const iceberg::PartitionField& pf : spec.fields()) {
    const iceberg::NestedField* source = schema.FindField(pf.source_id);
    const bool text = source != nullptr && HasPartitionFolderText(pf.transform.kind(), source->type->id());
    folder_text_.push_back(text ? std::optional<iceberg::TransformKind>(pf.transform.kind()) : std::nullopt);
  }
}

Result<iceberg::DataFile> CopyStatsReader::Read(const TextRow& r) const {
  if (r.size() < 6 || !r[0] || !r[1] || !r[2]) return Status::Internal("unexpected COPY RETURN_STATS row");
  iceberg::DataFile df;
  df.content = iceberg::DataFileContent::kData;
  df.file_path = *r[0];
  df.file_format = iceberg::FileFormat::kParquet;
  df.spec_id = spec_id_;
  auto count = ParseInt<int64_t>(*r[1]);
  auto size = ParseInt<int64_t>(*r[2]);
  if (!count || !size) return Status::Internal("unexpected COPY RETURN_STATS counts");
  df.record_count = *count;
  df.file_size_in_bytes = *size;
  if (df.record_count == 0) return df;  // the caller removes it
  // Partition values.
  Json keys = r[5] ? Json::parse(*r[5], nullptr, false) : Json::object();
  for (size_t i = 0; i < partition_columns_.size(); ++i) {
    if (partition_columns_[i].empty()) {
      df.partition.emplace_back();
      continue;
    }
    Json v = keys.is_object() && keys.contains(partition_columns_[i]) ? keys[partition_columns_[i]] : Json();
    SKADE_ASSIGN_OR_RETURN(
        auto lit, PartitionLiteral(partition_types_[i], v, i < folder_text_.size() ? folder_text_[i] : std::nullopt));
    df.partition.push_back(std::move(lit));
  }
  // Metrics (spec "Manifests": value/null/NaN counts, bounds in Appendix D binary form).
  Json stats = r[4] ? Json::parse(*r[4], nullptr, false) : Json::object();
  if (stats.is_object()) {
    for (auto it = stats.begin(); it != stats.end(); ++it) {
      auto leaf = leaves_.find(it.key());
      if (leaf == leaves_.end() || !it->is_object()) continue;
      const NestedField* f = leaf->second.first;
      const bool repeated = leaf->second.second;
      const Json& st = *it;
      auto str = [&](const char* k) -> std::optional<std::string> {
        auto s = st.find(k);
        if (s == st.end() || !s->is_string()) return std::nullopt;
        return s->get<std::string>();
      };
      if (auto v = str("column_size_bytes")) {
        if (auto n = ParseInt<int64_t>(*v)) df.column_sizes[f->id] = *n;
      }
      if (!repeated) {
        df.value_counts[f->id] = df.record_count;
        if (auto v = str("null_count")) {
          if (auto n = ParseInt<int64_t>(*v)) df.null_value_counts[f->id] = *n;
        }
      }
      bool has_nan = str("has_nan").value_or("false") == "true";
      if (f->type->id() == TypeId::kFloat || f->type->id() == TypeId::kDouble) {
        if (!has_nan && !repeated) df.nan_value_counts[f->id] = 0;
        if (has_nan) continue;  // DuckDB's min/max may then include NaN: keep no bounds
      }
      auto lo = str("min");
      auto hi = str("max");
      if (!lo || !hi) continue;
      auto lo_lit = LiteralFromDuckText(f->type, *lo);
      auto hi_lit = LiteralFromDuckText(f->type, *hi);
      if (!lo_lit || !hi_lit) continue;
      if (f->type->id() == TypeId::kString) {
        df.lower_bounds[f->id] = TruncateUtf8(*lo, metrics_truncate_length_);
        if (auto up = TruncateUpperUtf8(*hi, metrics_truncate_length_)) df.upper_bounds[f->id] = *up;
      } else if (f->type->id() == TypeId::kBinary || f->type->id() == TypeId::kFixed) {
        // Binary bounds are kept only when short enough to be exact.
        if (lo_lit->as_bytes().size() <= static_cast<size_t>(metrics_truncate_length_) &&
            hi_lit->as_bytes().size() <= static_cast<size_t>(metrics_truncate_length_)) {
          df.lower_bounds[f->id] = lo_lit->ToBinary();
          df.upper_bounds[f->id] = hi_lit->ToBinary();
        }
      } else {
        df.lower_bounds[f->id] = lo_lit->ToBinary();
        df.upper_bounds[f->id] = hi_lit->ToBinary();
      }
    }
  }
  return df;
}

}  // namespace skade::engine
