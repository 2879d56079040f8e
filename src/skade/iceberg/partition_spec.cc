#include "skade/iceberg/partition_spec.h"

#include <algorithm>
#include <cctype>

#include "skade/base/ascii.h"

namespace skade::iceberg {

bool PartitionSpec::is_unpartitioned() const {
  return std::all_of(fields_.begin(), fields_.end(), [](const PartitionField& f) {
    return f.transform.kind() == TransformKind::kVoid;
  });
}

int PartitionSpec::last_assigned_field_id() const {
  int highest = 999;
  for (const PartitionField& f : fields_) highest = std::max(highest, f.field_id);
  return highest;
}

Result<TypePtr> PartitionSpec::PartitionType(const Schema& schema) const {
  std::vector<NestedField> out;
  out.reserve(fields_.size());
  for (const PartitionField& f : fields_) {
    const NestedField* source = schema.FindField(f.source_id);
    NestedField pf;
    pf.id = f.field_id;
    pf.name = f.name;
    pf.required = false;
    if (source == nullptr) {
      // A void transform of a dropped column still has a (null) value; spec v2 keeps such
      // fields. Its type is not knowable from the schema; use int as a harmless placeholder.
      if (f.transform.kind() == TransformKind::kVoid) {
        pf.type = Type::Primitive(TypeId::kInt);
        out.push_back(std::move(pf));
        continue;
      }
      return Status::InvalidArgument("partition field '" + f.name + "' refers to missing column id " +
                                     std::to_string(f.source_id));
    }
    SKADE_ASSIGN_OR_RETURN(pf.type, f.transform.ResultType(source->type));
    out.push_back(std::move(pf));
  }
  return Type::Struct(std::move(out));
}

namespace {

std::string TrimSpace(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// Splits on commas outside parentheses.
std::vector<std::string> SplitTopLevel(std::string_view text) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      out.push_back(TrimSpace(text.substr(start, i - start)));
      start = i + 1;
    } else if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      --depth;
    }
  }
  return out;
}

std::string Unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

Result<PartitionSpecPtr> ParsePartitionSpec(std::string_view text, const Schema& schema, int spec_id,
                                            int last_partition_id) {
  std::vector<PartitionField> fields;
  if (TrimSpace(text).empty()) return std::make_shared<const PartitionSpec>(spec_id, std::move(fields));
  int next_id = last_partition_id + 1;
  for (const std::string& item : SplitTopLevel(text)) {
    if (item.empty()) return Status::InvalidArgument("empty partition field in '" + std::string(text) + "'");
    std::string fn, column;
    std::optional<int> param;
    size_t open = item.find('(');
    if (open == std::string::npos) {
      fn = "identity";
      column = Unquote(item);
    } else {
      if (item.back() != ')') return Status::InvalidArgument("malformed partition field '" + item + "'");
      fn = AsciiLower(TrimSpace(item.substr(0, open)));
      std::vector<std::string> args = SplitTopLevel(std::string_view(item).substr(open + 1, item.size() - open - 2));
      if (fn == "bucket" || fn == "truncate") {
        if (args.size() != 2) return Status::InvalidArgument(fn + " takes (width, column): '" + item + "'");
        // Accept both (N, col) and (col, N).
        std::string a = args[0], b = args[1];
        bool a_num = !a.empty() && a.find_first_not_of("0123456789") == std::string::npos;
        bool b_num = !b.empty() && b.find_first_not_of("0123456789") == std::string::npos;
        if (a_num == b_num) return Status::InvalidArgument(fn + " needs a width and a column: '" + item + "'");
        std::string num = a_num ? a : b;
        column = Unquote(a_num ? b : a);
        if (num.size() > 9) return Status::InvalidArgument("width too large in '" + item + "'");
        param = std::stoi(num);
      } else {
        if (args.size() != 1) return Status::InvalidArgument(fn + " takes one column: '" + item + "'");
        column = Unquote(args[0]);
      }
    }
    const NestedField* source = schema.FindFieldByName(column);
    if (source == nullptr) source = schema.FindFieldByName(column, /*case_sensitive=*/false);
    if (source == nullptr) return Status::InvalidArgument("partition column '" + column + "' is not in the schema");
    std::string transform_text = fn;
    std::string name = schema.FindColumnName(source->id);
    if (fn == "bucket") {
      transform_text = "bucket[" + std::to_string(*param) + "]";
      name += "_bucket";
    } else if (fn == "truncate") {
      transform_text = "truncate[" + std::to_string(*param) + "]";
      name += "_trunc";
    } else if (fn == "year" || fn == "years") {
      transform_text = "year";
      name += "_year";
    } else if (fn == "month" || fn == "months") {
      transform_text = "month";
      name += "_month";
    } else if (fn == "day" || fn == "days") {
      transform_text = "day";
      name += "_day";
    } else if (fn == "hour" || fn == "hours") {
      transform_text = "hour";
      name += "_hour";
    } else if (fn == "void") {
      name += "_null";
    } else if (fn != "identity") {
      return Status::InvalidArgument("unknown partition transform '" + fn + "'");
    }
    SKADE_ASSIGN_OR_RETURN(Transform t, Transform::Parse(transform_text));
    if (t.kind() == TransformKind::kUnknown) {
      return Status::InvalidArgument("unknown partition transform '" + fn + "'");
    }
    if (!t.ResultType(source->type).ok()) {
      return Status::InvalidArgument("transform " + t.ToString() + " does not apply to column '" + column +
                                     "' of type " + source->type->ToString());
    }
    for (const PartitionField& existing : fields) {
      if (existing.name == name || (existing.source_id == source->id && existing.transform == t)) {
        return Status::InvalidArgument("duplicate partition field '" + name + "'");
      }
    }
    PartitionField pf;
    pf.source_id = source->id;
    pf.field_id = next_id++;
    pf.name = name;
    pf.transform = t;
    fields.push_back(std::move(pf));
  }
  return std::make_shared<const PartitionSpec>(spec_id, std::move(fields));
}

}  // namespace skade::iceberg
