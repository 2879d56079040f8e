// Server-side scan planning (REST spec planTableScan): the request's predicate — the current
// form (left/right, Reference objects, typed literals) and the deprecated one (term/value) —
// bound to the table's schema and planned by skade's own planner (manifest, partition and
// column-metrics pruning, delete files attached by sequence number), answered synchronously
// with every file scan task and the delete files they reference. Parts of a predicate skade
// cannot evaluate (transforms, function applications) prune nothing: the client applies the
// whole filter to the rows, as the spec's missing residual tells it to.
#include <algorithm>
#include <map>
#include <set>

#include "skade/base/ascii.h"
#include "skade/base/uuid.h"
#include "skade/iceberg/expression.h"
#include "skade/iceberg/scan.h"
#include "skade/rest/api_internal.h"
#include "skade/base/json_parse_internal.h"

namespace skade::rest {
namespace {

using iceberg::ExprPtr;
using iceberg::Operation;

// The column a value expression names: a bare string (deprecated Term), {"type": "reference",
// "name": …} or {"type": "reference", "id": …}. nullopt for transforms and applications, which
// planning cannot evaluate.
Result<std::optional<const iceberg::NestedField*>> ReferencedField(const Json& term, const iceberg::Schema& schema,
                                                                   bool case_sensitive) {
  auto by_name = [&](const std::string& name) -> Result<std::optional<const iceberg::NestedField*>> {
    for (const auto& f : schema.fields()) {
      if (f.name == name) return std::optional<const iceberg::NestedField*>(&f);
    }
    if (!case_sensitive) {
      for (const auto& f : schema.fields()) {
        if (EqualsIgnoreAsciiCase(f.name, name)) {
          return std::optional<const iceberg::NestedField*>(&f);
        }
      }
    }
    // A nested field ("a.b") is not a top-level column: planning leaves it to the client.
    if (name.find('.') != std::string::npos) return std::optional<const iceberg::NestedField*>();
    return Status::InvalidArgument("the filter names column '" + name + "', which the table does not have");
  };
  if (term.is_string()) return by_name(term.get<std::string>());
  if (!term.is_object()) return Status::InvalidArgument("a filter term must be a reference");
  const Json* type = Member(term, "type");
  if (type == nullptr || !type->is_string()) return Status::InvalidArgument("a filter term needs a type");
  if (*type == "reference") {
    if (const Json* name = Member(term, "name"); name != nullptr && name->is_string()) return by_name(name->get<std::string>());
    if (const Json* id = Member(term, "id"); id != nullptr && id->is_number_integer()) {
      const iceberg::NestedField* f = schema.FindField(id->get<int>());
      if (f == nullptr) return Status::InvalidArgument("the filter names field id " + id->dump() + ", which the table does not have");
      return std::optional<const iceberg::NestedField*>(f);
    }
    if (const Json* legacy = Member(term, "term"); legacy != nullptr && legacy->is_string()) {
      return by_name(legacy->get<std::string>());
    }
    return Status::InvalidArgument("a reference needs a name or an id");
  }
  if (*type == "transform" || *type == "apply" || *type == "literal") return std::optional<const iceberg::NestedField*>();
  return Status::InvalidArgument("unknown filter term type " + type->dump());
}

// A literal for `field`: a bare value, or {"type": "literal", "value": …}.
Result<iceberg::Literal> LiteralFor(const Json& value, const iceberg::NestedField& field) {
  const Json* v = &value;
  if (value.is_object()) {
    const Json* type = Member(value, "type");
    if (type == nullptr || *type != "literal" || Member(value, "value") == nullptr) {
      return Status::InvalidArgument("a literal is a value or {\"type\": \"literal\", \"value\": …}");
    }
    v = Member(value, "value");
  }
  if (!field.type->is_primitive()) {
    return Status::InvalidArgument("column '" + field.name + "' is not primitive: it cannot be compared to a literal");
  }
  return iceberg::Literal::FromJson(field.type, v->dump())
      .WithContext("filter value for column '" + field.name + "'");
}

Result<ExprPtr> ParsePredicate(const Json& j, const iceberg::Schema& schema, bool case_sensitive, int depth) {
  if (depth > 256) return Status::InvalidArgument("the filter is nested too deeply");
  if (j.is_boolean()) return j.get<bool>() ? iceberg::AlwaysTrue() : iceberg::AlwaysFalse();
  if (!j.is_object()) return Status::InvalidArgument("a filter predicate must be an object or a boolean");
  const Json* type_json = Member(j, "type");
  if (type_json == nullptr || !type_json->is_string()) return Status::InvalidArgument("a filter predicate needs a type");
  const std::string type = *type_json;
  if (type == "true") return iceberg::AlwaysTrue();
  if (type == "false") return iceberg::AlwaysFalse();
  if (type == "and" || type == "or") {
    const Json* left = Member(j, "left");
    const Json* right = Member(j, "right");
    if (left == nullptr || right == nullptr) return Status::InvalidArgument("'" + type + "' needs left and right");
    SKADE_ASSIGN_OR_RETURN(ExprPtr a, ParsePredicate(*left, schema, case_sensitive, depth + 1));
    SKADE_ASSIGN_OR_RETURN(ExprPtr b, ParsePredicate(*right, schema, case_sensitive, depth + 1));
    return type == "and" ? iceberg::And(a, b) : iceberg::Or(a, b);
  }
  if (type == "not") {
    const Json* child = Member(j, "child");
    if (child == nullptr) return Status::InvalidArgument("'not' needs a child");
    SKADE_ASSIGN_OR_RETURN(ExprPtr c, ParsePredicate(*child, schema, case_sensitive, depth + 1));
    // Not(true) for an unevaluable child would prune everything: keep such a child as true.
    if (c->op() == Operation::kTrue) return iceberg::AlwaysTrue();
    return iceberg::Not(c);
  }
  static const std::map<std::string, Operation> kUnary = {
      {"is-null", Operation::kIsNull}, {"not-null", Operation::kNotNull},
      {"is-nan", Operation::kIsNan}, {"not-nan", Operation::kNotNan}};
  static const std::map<std::string, Operation> kComparison = {
      {"lt", Operation::kLt}, {"lt-eq", Operation::kLtEq}, {"gt", Operation::kGt},
      {"gt-eq", Operation::kGtEq}, {"eq", Operation::kEq}, {"not-eq", Operation::kNotEq},
      {"starts-with", Operation::kStartsWith}, {"not-starts-with", Operation::kNotStartsWith}};
  static const std::map<std::string, Operation> kSet = {{"in", Operation::kIn}, {"not-in", Operation::kNotIn}};
  const Json* operand = Member(j, "child");
  if (operand == nullptr) operand = Member(j, "term");
  if (auto u = kUnary.find(type); u != kUnary.end()) {
    if (operand == nullptr) return Status::InvalidArgument("'" + type + "' needs a child");
    SKADE_ASSIGN_OR_RETURN(auto field, ReferencedField(*operand, schema, case_sensitive));
    if (!field) return iceberg::AlwaysTrue();
    return iceberg::Predicate(u->second, (*field)->name);
  }
  if (auto c = kComparison.find(type); c != kComparison.end()) {
    const Json* left = Member(j, "left");
    const Json* right = Member(j, "right");
    if (left == nullptr) left = Member(j, "term");
    if (right == nullptr) right = Member(j, "value");
    if (left == nullptr || right == nullptr) return Status::InvalidArgument("'" + type + "' needs two operands");
    SKADE_ASSIGN_OR_RETURN(auto field, ReferencedField(*left, schema, case_sensitive));
    if (!field) return iceberg::AlwaysTrue();
    SKADE_ASSIGN_OR_RETURN(iceberg::Literal lit, LiteralFor(*right, **field));
    return iceberg::Predicate(c->second, (*field)->name, {lit});
  }
  if (auto s = kSet.find(type); s != kSet.end()) {
    if (operand == nullptr) return Status::InvalidArgument("'" + type + "' needs a child");
    SKADE_ASSIGN_OR_RETURN(auto field, ReferencedField(*operand, schema, case_sensitive));
    if (!field) return iceberg::AlwaysTrue();
    const Json* values = Member(j, "values");
    if (values != nullptr && values->is_object()) values = Member(*values, "values");
    if (values == nullptr || !values->is_array()) return Status::InvalidArgument("'" + type + "' needs values");
    std::vector<iceberg::Literal> literals;
    for (const Json& v : *values) {
      SKADE_ASSIGN_OR_RETURN(iceberg::Literal lit, LiteralFor(v, **field));
      literals.push_back(std::move(lit));
    }
    if (literals.empty()) return s->second == Operation::kIn ? iceberg::AlwaysFalse() : iceberg::AlwaysTrue();
    return iceberg::Predicate(s->second, (*field)->name, std::move(literals));
  }
  return Status::InvalidArgument("unknown filter predicate type '" + type + "'");
}

const char* ContentName(iceberg::DataFileContent c) {
  switch (c) {
    case iceberg::DataFileContent::kData: return "data";
    case iceberg::DataFileContent::kPositionDeletes: return "position-deletes";
    case iceberg::DataFileContent::kEqualityDeletes: return "equality-deletes";
  }
  return "data";
}

std::string FormatName(iceberg::FileFormat f) {
  return AsciiLower(iceberg::FileFormatName(f));
}

Json LiteralJson(const iceberg::Literal& lit) {
  Json j = ParseOrderedJson(lit.ToJson(), "a literal").ValueOr(Json());
  return j.is_discarded() ? Json(nullptr) : j;
}

Json CountMapJson(const std::map<int, int64_t>& m, const std::set<int>& fields) {
  Json keys = Json::array(), values = Json::array();
  for (const auto& [id, n] : m) {
    if (!fields.count(id)) continue;
    keys.push_back(id);
    values.push_back(n);
  }
  return Json{{"keys", keys}, {"values", values}};
}

Json ValueMapJson(const std::map<int, std::string>& m, const std::set<int>& fields, const iceberg::Schema& schema) {
  Json keys = Json::array(), values = Json::array();
  for (const auto& [id, bytes] : m) {
    if (!fields.count(id)) continue;
    const iceberg::NestedField* f = schema.FindField(id);
    if (f == nullptr || !f->type->is_primitive()) continue;
    auto lit = iceberg::Literal::FromBinary(f->type, bytes);
    if (!lit.ok()) continue;  // a bound skade cannot decode is not sent (clients then prune less)
    keys.push_back(id);
    values.push_back(LiteralJson(*lit));
  }
  return Json{{"keys", keys}, {"values", values}};
}

// A ContentFile object (spec DataFile / PositionDeleteFile / EqualityDeleteFile); column
// statistics only for `stats_fields` (field ids), as the request asks.
Json ContentFileJson(const iceberg::DataFile& f, const std::set<int>& stats_fields, const iceberg::Schema& schema) {
  Json j;
  j["content"] = ContentName(f.content);
  j["file-path"] = f.file_path;
  j["file-format"] = FormatName(f.file_format);
  j["spec-id"] = f.spec_id;
  j["partition"] = Json::array();
  for (const auto& v : f.partition) j["partition"].push_back(v ? LiteralJson(*v) : Json(nullptr));
  j["file-size-in-bytes"] = f.file_size_in_bytes;
  j["record-count"] = f.record_count;
  if (!f.split_offsets.empty()) j["split-offsets"] = f.split_offsets;
  if (f.sort_order_id) j["sort-order-id"] = *f.sort_order_id;
  if (f.content == iceberg::DataFileContent::kData) {
    if (f.first_row_id) j["first-row-id"] = *f.first_row_id;
    if (!stats_fields.empty()) {
      j["column-sizes"] = CountMapJson(f.column_sizes, stats_fields);
      j["value-counts"] = CountMapJson(f.value_counts, stats_fields);
      j["null-value-counts"] = CountMapJson(f.null_value_counts, stats_fields);
      j["nan-value-counts"] = CountMapJson(f.nan_value_counts, stats_fields);
      j["lower-bounds"] = ValueMapJson(f.lower_bounds, stats_fields, schema);
      j["upper-bounds"] = ValueMapJson(f.upper_bounds, stats_fields, schema);
    }
  } else if (f.content == iceberg::DataFileContent::kEqualityDeletes) {
    j["equality-ids"] = f.equality_ids;
  } else {
    if (f.content_offset) j["content-offset"] = *f.content_offset;
    if (f.content_size_in_bytes) j["content-size-in-bytes"] = *f.content_size_in_bytes;
    if (f.referenced_data_file) j["referenced-data-file"] = *f.referenced_data_file;
  }
  return j;
}

}  // namespace

Result<iceberg::ExprPtr> ParseRestPredicate(const Json& predicate, const iceberg::Schema& schema, bool case_sensitive) {
  return ParsePredicate(predicate, schema, case_sensitive, 0);
}

namespace {

// Splits a plan's file scan tasks into pages (ScanTasks objects) for a PlanSink; each page
// lists the delete files its tasks reference, once, by index.
class PageBuilder {
 public:
  PageBuilder(PlanSink& sink, size_t tasks_per_page, const std::set<int>& stats_fields, const iceberg::Schema& schema,
              const Json& residual)
      : sink_(sink),
        per_page_(std::max<size_t>(tasks_per_page, 1)),
        stats_fields_(stats_fields),
        schema_(schema),
        residual_(residual) {}

  Status Add(const iceberg::FileScanTask& task) {
    Json t;
    t["data-file"] = ContentFileJson(task.file, stats_fields_, schema_);
    // What the reader must still apply to the file's rows. Optional in the spec, but Iceberg's
    // Java client (Spark, Trino) builds a residual evaluator from it and fails without one.
    // The whole filter is always a correct residual (pruning only dropped files).
    t["residual-filter"] = residual_;
    if (!task.deletes.empty()) {
      // A Puffin file holds many vectors: its path and offset name one.
      Json refs = Json::array();
      for (const auto& d : task.deletes) {
        const std::string key = d->file.file_path + "#" + std::to_string(d->file.content_offset.value_or(-1));
        auto [it, added] = delete_index_.emplace(key, delete_index_.size());
        if (added) deletes_.push_back(ContentFileJson(d->file, {}, schema_));
        refs.push_back(it->second);
      }
      t["delete-file-references"] = std::move(refs);
    }
    tasks_.push_back(std::move(t));
    return tasks_.size() >= per_page_ ? Flush() : Status::Ok();
  }

  // The last page (an empty one when the plan has no tasks at all).
  Status Finish() { return tasks_.empty() && pages_ > 0 ? Status::Ok() : Flush(); }

 private:
  Status Flush() {
    Json page{{"file-scan-tasks", std::move(tasks_)}, {"delete-files", std::move(deletes_)}};
    tasks_ = Json::array();
    deletes_ = Json::array();
    delete_index_.clear();
    ++pages_;
    return sink_.Add(page.dump(-1, ' ', false, Json::error_handler_t::replace));
  }

  PlanSink& sink_;
  const size_t per_page_;
  const std::set<int>& stats_fields_;
  const iceberg::Schema& schema_;
  const Json& residual_;
  Json tasks_ = Json::array();
  Json deletes_ = Json::array();
  std::map<std::string, size_t> delete_index_;
  size_t pages_ = 0;
};

// A parsed PlanTableScanRequest bound to the table: what the planning job needs, owned (a
// background job outlives the request).
struct ScanRequest {
  catalog::TableState state;
  const iceberg::Snapshot* snapshot = nullptr;  // point in time, or the end of an incremental scan
  std::optional<int64_t> start_snapshot_id;     // incremental (exclusive)
  iceberg::SchemaPtr schema;
  iceberg::ExprPtr filter;
  Json residual = true;  // the request's filter as sent (expression JSON), or true
  std::set<int> stats_fields;
  std::optional<int64_t> min_rows;
};

// The result of planTableScan or fetchPlanningResult for a plan that completed: the first page
// spliced into the status object, and the further pages as plan tasks.
Response CompletedResponse(const PlanView& view, const std::string* plan_id) {
  Json head{{"status", "completed"}};
  if (plan_id != nullptr) head["plan-id"] = *plan_id;
  if (!view.plan_tasks.empty()) head["plan-tasks"] = view.plan_tasks;
  std::string body = head.dump();
  body.pop_back();  // '}'
  const std::string empty = R"({"file-scan-tasks":[],"delete-files":[]})";
  const std::string& page = view.first_page ? *view.first_page : empty;
  body += "," + page.substr(1);
  Response r;
  r.body = std::move(body);
  r.headers.emplace_back("Content-Type", "application/json");
  return r;
}

}  // namespace

namespace {

// The shape of a PlanTableScanRequest, checked before anything is looked up (400 before 404);
// nullopt when it is well formed.
std::optional<Response> MalformedScanRequest(const Json& body) {
  if (!body.is_object()) {
    return ErrorResponse(400, "BadRequestException", "the request body must be a JSON object");
  }
  auto bad = [](const std::string& message) { return ErrorResponse(400, "BadRequestException", message); };
  auto is_int = [&](const char* key) {
    const Json* v = Member(body, key);
    return v == nullptr || v->is_number_integer();
  };
  for (const char* key : {"snapshot-id", "start-snapshot-id", "end-snapshot-id", "min-rows-requested"}) {
    if (!is_int(key)) return bad("'" + std::string(key) + "' must be an integer");
  }
  if (Member(body, "start-snapshot-id") != nullptr && Member(body, "end-snapshot-id") == nullptr) {
    return bad("'end-snapshot-id' is required with 'start-snapshot-id'");
  }
  if (Member(body, "snapshot-id") != nullptr &&
      (Member(body, "start-snapshot-id") != nullptr || Member(body, "end-snapshot-id") != nullptr)) {
    return bad("a scan is either point in time ('snapshot-id') or incremental ('start-snapshot-id', 'end-snapshot-id'), not both");
  }
  for (const char* key : {"case-sensitive", "use-snapshot-schema"}) {
    const Json* v = Member(body, key);
    if (v != nullptr && !v->is_boolean()) return bad("'" + std::string(key) + "' must be a boolean");
  }
  if (const Json* select = Member(body, "select")) {
    if (!select->is_array() || !std::all_of(select->begin(), select->end(), [](const Json& n) { return n.is_string(); })) {
      return bad("'select' must be an array of field names");
    }
  }
  return std::nullopt;
}

// Plan ids another server can take up (issue 35): sealed under the key ring all servers share,
// they carry what the plan is made from — its owner, the table, the metadata file it was planned
// on and the request — so a server that does not hold the plan makes the same plan again (the
// planner streams tasks in manifest order: the same pages, the same plan tasks). A request too
// large for a URL gets an id of this server alone.
constexpr char kPlanPurpose[] = "rest.plan";
constexpr size_t kMaxSealedPlanIdBytes = 4096;

}  // namespace

std::string CatalogApi::NewPlanId(const std::string& owner, const std::string& table,
                                  const std::string& metadata_location, const Json& request, size_t per_page) const {
  // The page size travels too: servers configured apart still cut the same pages.
  const Json payload{{"o", owner}, {"t", table}, {"m", metadata_location}, {"r", request}, {"p", per_page}};
  std::string id = SealJson(kPlanPurpose, payload, options_.plan_ttl);
  return id.size() <= kMaxSealedPlanIdBytes ? id : Uuid::NewV7().ToString();
}

Response CatalogApi::PlanTableScan(const Request& r, const std::string& segment, const std::string& table) {
  auto ident = IdentFromPath(segment, table);
  if (!ident.ok()) return ErrorResponse(ident.status());
  if (Status nul = CheckJsonHasNoNul(r.body, "the request body"); !nul.ok()) return ErrorResponse(nul);
  auto parsed = r.body.empty() ? Result<Json>(Json::object()) : ParseOrderedJson(r.body, "the request body");
  if (!parsed.ok()) return ErrorResponse(parsed.status());
  Json body = std::move(parsed).value();
  if (auto malformed = MalformedScanRequest(body)) return *malformed;
  if (Status st = RequireNamespace(ident->ns); !st.ok()) return ErrorResponse(st, "NoSuchNamespaceException");
  auto state = catalog_.LoadTable(*ident);
  if (!state.ok()) return ErrorResponse(state.status());
  const size_t per_page = PlanPageTasks(body);
  const std::string plan_id = NewPlanId(r.principal, ident->ToString(), state->metadata_location, body, per_page);
  return MakePlan(r, body, std::move(*state), plan_id, per_page, PlanAnswer::kPlanned);
}

size_t CatalogApi::PlanPageTasks(const Json& request) const {
  // Every task carries the residual: a large filter (16 MB of IN values, say) would make one page
  // of 1000 tasks 16 GB. Pages hold fewer tasks as the residual grows, so one page stays within
  // a few megabytes (the plan store's byte bound then applies to the whole plan).
  constexpr size_t kPageBytesForResiduals = size_t{4} << 20;
  const Json* filter = Member(request, "filter");
  const size_t residual_bytes = filter != nullptr ? filter->dump().size() : 4;
  return std::max<size_t>(1, std::min(options_.plan_page_tasks, kPageBytesForResiduals / std::max<size_t>(residual_bytes, 1)));
}

Response CatalogApi::MakePlan(const Request& r, const Json& body, catalog::TableState state, const std::string& plan_id,
                              size_t per_page, PlanAnswer answer) {
  auto bad = [](const std::string& message) { return ErrorResponse(400, "BadRequestException", message); };
  auto int_member = [&](const char* key) -> std::optional<int64_t> {
    const Json* v = Member(body, key);
    return v == nullptr ? std::nullopt : std::optional<int64_t>(v->get<int64_t>());
  };
  const std::optional<int64_t> snapshot_id = int_member("snapshot-id"), start_id = int_member("start-snapshot-id"),
                               end_id = int_member("end-snapshot-id"), min_rows = int_member("min-rows-requested");
  const Json* cs = Member(body, "case-sensitive");
  const bool case_sensitive = cs == nullptr || cs->get<bool>();
  const Json* uss = Member(body, "use-snapshot-schema");
  const bool snapshot_schema = uss != nullptr && uss->get<bool>();
  const catalog::TableIdent ident = state.ident;
  ScanRequest req;
  req.state = std::move(state);
  const iceberg::TableMetadata& m = *req.state.metadata;
  auto snapshot_by_id = [&](int64_t id) { return m.SnapshotById(id); };
  req.snapshot = m.CurrentSnapshot();
  if (snapshot_id || end_id) {
    const int64_t id = snapshot_id ? *snapshot_id : *end_id;
    req.snapshot = snapshot_by_id(id);
    if (req.snapshot == nullptr) {
      return ErrorResponse(404, "NoSuchSnapshotException", "snapshot " + std::to_string(id) + " does not exist");
    }
  }
  if (start_id) {
    if (snapshot_by_id(*start_id) == nullptr) {
      return ErrorResponse(404, "NoSuchSnapshotException", "snapshot " + std::to_string(*start_id) + " does not exist");
    }
    // The range is checked here, not first by a background job: an end that does not descend
    // from the start is the request's error (400, as IncrementalAppendScan's precondition that
    // the start be an ancestor of the end), never a "failed" plan.
    if (auto range = iceberg::SnapshotsBetween(m, *start_id, *req.snapshot); !range.ok()) {
      return ErrorResponse(400, "BadRequestException", range.status().message());
    }
    req.start_snapshot_id = start_id;
  }
  req.min_rows = min_rows;
  req.schema = req.snapshot != nullptr && snapshot_schema ? m.SchemaForSnapshot(*req.snapshot) : m.CurrentSchema();
  if (!req.schema) return ErrorResponse(500, "ServerErrorException", "the table has no schema");
  if (const Json* f = Member(body, "filter")) {
    auto parsed = ParseRestPredicate(*f, *req.schema, case_sensitive);
    if (!parsed.ok()) return ErrorResponse(parsed.status());
    req.filter = *parsed;
    req.residual = *f;
  }
  if (const Json* fields = Member(body, "stats-fields")) {
    if (!fields->is_array()) return bad("'stats-fields' must be an array of names");
    for (const Json& name : *fields) {
      if (!name.is_string()) return bad("'stats-fields' must be an array of names");
      const iceberg::NestedField* field = nullptr;
      for (const auto& f : req.schema->fields()) {
        if (f.name == name.get<std::string>()) field = &f;
      }
      if (field == nullptr) return bad("'stats-fields' names unknown column " + name.dump());
      req.stats_fields.insert(field->id);
    }
  }

  auto job = [this, req, per_page](PlanSink& sink) -> Status {
    if (req.snapshot == nullptr) return PageBuilder(sink, per_page, req.stats_fields, *req.schema, req.residual).Finish();
    PageBuilder pages(sink, per_page, req.stats_fields, *req.schema, req.residual);
    const iceberg::TableMetadata& meta = *req.state.metadata;
    iceberg::ScanPlanner planner(io_, meta);
    planner.set_cache(&manifests_);
    planner.set_kept_stats(req.stats_fields);
    // An incremental scan lists what the range's appends added; replace, overwrite and delete
    // snapshots add nothing to it (Iceberg's IncrementalAppendScan, which the spec's
    // start-snapshot-id/end-snapshot-id scan is), rather than failing the plan.
    planner.set_non_appends(iceberg::NonAppends::kSkip);
    int64_t rows = 0;
    bool enough = false;
    auto add = [&](iceberg::FileScanTask task) -> Status {
      // Rows a task surely yields: all of its file's, when nothing filters or deletes them.
      if (!req.filter && task.deletes.empty()) rows += task.file.record_count;
      SKADE_RETURN_IF_ERROR(pages.Add(task));
      if (req.min_rows && rows >= *req.min_rows) {
        enough = true;
        return Status(StatusCode::kCancelled, "enough rows planned");
      }
      return Status::Ok();
    };
    Status planned = req.start_snapshot_id
                         ? planner.PlanAppends(*req.start_snapshot_id, *req.snapshot, *req.schema, req.filter, add)
                         : planner.PlanFiles(*req.snapshot, *req.schema, req.filter, add);
    if (!planned.ok() && !enough) return planned;
    return pages.Finish();
  };

  const std::string table_key = ident.ToString();
  // Large plans run in the background; the manifest list says how large.
  bool background = false;
  if (answer != PlanAnswer::kRemadeForTasks && req.snapshot != nullptr && options_.plan_async_manifests > 0) {
    iceberg::ScanPlanner planner(io_, m);
    planner.set_cache(&manifests_);
    auto manifests = planner.LoadManifests(*req.snapshot);
    if (!manifests.ok()) return ErrorResponse(manifests.status());
    background = manifests->size() >= options_.plan_async_manifests;
  }
  if (background) {
    Status submitted = plans_.Submit(plan_id, r.principal, table_key, std::move(job));
    if (!submitted.ok()) return ErrorResponse(submitted);
    Json out{{"status", "submitted"}};
    if (answer == PlanAnswer::kPlanned) out["plan-id"] = plan_id;
    return JsonResponse(out);
  }
  auto view = plans_.PlanNow(plan_id, r.principal, table_key, job);
  if (!view.ok()) return ErrorResponse(view.status());
  return CompletedResponse(*view, answer == PlanAnswer::kPlanned ? &plan_id : nullptr);
}

std::optional<Json> CatalogApi::OpenPlanId(const Request& r, const catalog::TableIdent& ident,
                                           const std::string& plan_id) const {
  std::optional<Json> origin = OpenSealedJson(kPlanPurpose, plan_id);  // else as unknown
  if (!origin) return std::nullopt;
  const Json* owner = Member(*origin, "o");
  const Json* table = Member(*origin, "t");
  const Json* location = Member(*origin, "m");
  const Json* request = Member(*origin, "r");
  const Json* per_page = Member(*origin, "p");
  if (owner == nullptr || table == nullptr || location == nullptr || request == nullptr || per_page == nullptr ||
      !owner->is_string() || !table->is_string() || !location->is_string() || !per_page->is_number_unsigned() ||
      per_page->get<uint64_t>() == 0 || MalformedScanRequest(*request)) {
    return std::nullopt;
  }
  // A plan id is a capability of its owner, for its table only.
  if (owner->get<std::string>() != r.principal || table->get<std::string>() != ident.ToString()) return std::nullopt;
  return std::move(origin).value();
}

Result<bool> CatalogApi::RemakePlan(const Request& r, const catalog::TableIdent& ident, const std::string& plan_id,
                                    PlanAnswer answer, Response* out) {
  std::optional<Json> origin = OpenPlanId(r, ident, plan_id);
  if (!origin) return false;
  catalog::TableState state;
  state.ident = ident;
  state.metadata_location = (*origin)["m"].get<std::string>();
  SKADE_ASSIGN_OR_RETURN(iceberg::TableMetadata metadata,
                         ReadMetadataFile(state.metadata_location, "the metadata file of a scan plan"));
  state.metadata = std::make_shared<const iceberg::TableMetadata>(std::move(metadata));
  *out = MakePlan(r, (*origin)["r"], std::move(state), plan_id, (*origin)["p"].get<size_t>(), answer);
  return true;
}

Response CatalogApi::PlanMissing(const Status& missing, const catalog::TableIdent& ident, std::string_view type) {
  if (missing.code() == StatusCode::kNotFound) {
    auto state = catalog_.LoadTable(ident);
    if (!state.ok() && state.status().code() == StatusCode::kNotFound) return ErrorResponse(state.status());
  }
  return ErrorResponse(missing, type);
}

Response CatalogApi::FetchPlanningResult(const Request& r, const std::string& segment, const std::string& table,
                                         const std::string& plan_id) {
  auto ident = IdentFromPath(segment, table);
  if (!ident.ok()) return ErrorResponse(ident.status());
  if (Status st = RequireNamespace(ident->ns); !st.ok()) return ErrorResponse(st, "NoSuchNamespaceException");
  auto view = plans_.View(plan_id, r.principal, ident->ToString());
  if (!view.ok() && view.status().code() == StatusCode::kNotFound && !plans_.Holds(plan_id)) {
    // Planned by another server: made again here.
    Response remade;
    auto taken = RemakePlan(r, *ident, plan_id, PlanAnswer::kRemade, &remade);
    if (!taken.ok()) return ErrorResponse(taken.status());
    if (*taken) return remade;
  }
  if (!view.ok()) return PlanMissing(view.status(), *ident, "NoSuchPlanIdException");
  switch (view->state) {
    case PlanView::State::kSubmitted: return JsonResponse(Json{{"status", "submitted"}});
    case PlanView::State::kCancelled: return JsonResponse(Json{{"status", "cancelled"}});
    case PlanView::State::kCompleted: return CompletedResponse(*view, nullptr);
    case PlanView::State::kFailed: break;
  }
  // FailedPlanningResult: the error model plus the status.
  Response failed = ErrorResponse(view->error, "NoSuchTableException");
  Json error = ParseOrderedJson(failed.body, "an error").ValueOr(Json());
  if (error.is_object()) {
    error["status"] = "failed";
    failed.body = error.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return failed;
}

Response CatalogApi::CancelPlanning(const Request& r, const std::string& segment, const std::string& table,
                                    const std::string& plan_id) {
  auto ident = IdentFromPath(segment, table);
  if (!ident.ok()) return ErrorResponse(ident.status());
  if (Status st = RequireNamespace(ident->ns); !st.ok()) return ErrorResponse(st, "NoSuchNamespaceException");
  Status st = plans_.Cancel(plan_id, r.principal, ident->ToString());
  if (st.code() == StatusCode::kNotFound && !plans_.Holds(plan_id) && OpenPlanId(r, *ident, plan_id)) {
    // Planned by another server: cancelled here, where its tasks are then not made again. The
    // server that planned it keeps its pages until they expire.
    st = plans_.HoldCancelled(plan_id, r.principal, ident->ToString());
  }
  if (!st.ok()) return PlanMissing(st, *ident, "NoSuchPlanIdException");
  Response done;
  done.status = 204;
  return done;
}

Response CatalogApi::FetchScanTasks(const Request& r, const std::string& segment, const std::string& table) {
  auto ident = IdentFromPath(segment, table);
  if (!ident.ok()) return ErrorResponse(ident.status());
  if (Status nul = CheckJsonHasNoNul(r.body, "the request body"); !nul.ok()) return ErrorResponse(nul);
  auto parsed = ParseOrderedJson(r.body, "the request body");
  if (!parsed.ok()) return ErrorResponse(parsed.status());
  Json body = std::move(parsed).value();
  const Json* task = body.is_object() ? Member(body, "plan-task") : nullptr;
  if (task == nullptr || !task->is_string()) {
    return ErrorResponse(400, "BadRequestException", "the request body must be {\"plan-task\": \"…\"}");
  }
  if (Status st = RequireNamespace(ident->ns); !st.ok()) return ErrorResponse(st, "NoSuchNamespaceException");
  auto page = plans_.Fetch(task->get<std::string>(), r.principal, ident->ToString());
  const std::string plan_id = PlanStore::PlanOfTask(task->get<std::string>());
  if (!page.ok() && page.status().code() == StatusCode::kNotFound && !plan_id.empty() && !plans_.Holds(plan_id)) {
    // A task of a plan another server made: the plan made again here (at once, whatever its
    // size: the client waits for the task), then its page.
    Response remade;
    auto taken = RemakePlan(r, *ident, plan_id, PlanAnswer::kRemadeForTasks, &remade);
    if (!taken.ok()) return ErrorResponse(taken.status());
    if (*taken && remade.status != 200) return remade;
    if (*taken) page = plans_.Fetch(task->get<std::string>(), r.principal, ident->ToString());
  }
  if (!page.ok()) return PlanMissing(page.status(), *ident, "NoSuchPlanTaskException");
  Response out;
  out.body = std::move(*page);
  out.headers.emplace_back("Content-Type", "application/json");
  return out;
}

}  // namespace skade::rest
