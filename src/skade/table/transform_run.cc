#include "skade/table/transform_run.h"

#include <cstring>
#include <set>
#include <string>
#include <utility>

#include "skade/arrow/stream_of.h"
#include "skade/iceberg/scan.h"

namespace skade::table {
namespace {

// An ArrowArrayStream over the source stream that passes every batch through the transform.
struct TransformedStream {
  arrow::StreamHandle input;
  arrow::SchemaHandle input_schema;
  arrow::SchemaHandle output_schema;
  Transform* transform = nullptr;
  std::string error;

  // The C stream's calls (arrow::StreamOf).
  int GetSchema(ArrowSchema* out) {
    // A copy the consumer owns: ask the transform again (schemas are cheap and deterministic).
    auto schema = transform->OutputSchema(*input_schema.get());
    if (!schema.ok()) {
      error = schema.status().ToString();
      return EINVAL;
    }
    schema->MoveTo(out);
    return 0;
  }
  int GetNext(ArrowArray* out) {
    arrow::ArrayHandle batch;
    if (int rc = input->get_next(input.get(), batch.get()); rc != 0) {
      const char* why = input->get_last_error(input.get());
      error = std::string("reading the source: ") + (why ? why : std::strerror(rc));
      return rc;
    }
    if (!batch.valid()) {  // end of stream
      out->release = nullptr;
      return 0;
    }
    auto transformed = transform->Apply(*input_schema.get(), std::move(batch));
    if (!transformed.ok()) {
      error = "transform: " + transformed.status().ToString();
      return EINVAL;
    }
    transformed->MoveTo(out);
    return 0;
  }
  const char* LastError() const { return error.empty() ? nullptr : error.c_str(); }
};

// The top-level names of an Arrow struct schema's children.
std::set<std::string> ChildNames(const ArrowSchema& schema) {
  std::set<std::string> names;
  for (int64_t i = 0; i < schema.n_children; ++i) {
    if (schema.children[i]->name != nullptr) names.insert(schema.children[i]->name);
  }
  return names;
}

}  // namespace

Result<CommitOutcome> RunTransform(Table& source, Transform& transform, Table& sink, const ReadOptions& read) {
  SKADE_ASSIGN_OR_RETURN(iceberg::SelectedSnapshot selected, iceberg::SelectSnapshot(source.metadata(), read.snapshot));
  SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle input, source.Read(read));
  auto stream = std::make_unique<TransformedStream>();
  stream->transform = &transform;
  if (int rc = input->get_schema(input.get(), stream->input_schema.get()); rc != 0) {
    const char* why = input->get_last_error(input.get());
    return Status::IoError(std::string("reading the source's schema: ") + (why ? why : std::strerror(rc)));
  }
  SKADE_ASSIGN_OR_RETURN(stream->output_schema, transform.OutputSchema(*stream->input_schema.get()));

  // The lineage, checked against both schemas: a lineage that names columns that are not
  // there would send governance tools after fields that do not exist.
  SnapshotLineage lineage;
  lineage.inputs.push_back({source.ident(),
                            selected.snapshot ? std::optional<int64_t>(selected.snapshot->snapshot_id) : std::nullopt,
                            ""});
  const std::set<std::string> outputs = ChildNames(*stream->output_schema.get());
  for (const auto& [out, ins] : transform.ColumnLineage()) {
    if (!outputs.count(out)) {
      return Status::InvalidArgument("transform lineage names output column '" + out + "', which its output lacks");
    }
    std::vector<LineageField>& fields = lineage.columns[out];
    for (const std::string& in : ins) {
      if (selected.schema && selected.schema->FindFieldByName(in) == nullptr) {
        return Status::InvalidArgument("transform lineage of '" + out + "' names source column '" + in + "', which " +
                                       source.ident().ToString() + " lacks");
      }
      fields.push_back({0, in, {}});
    }
  }
  stream->input = std::move(input);
  arrow::StreamHandle rows = arrow::StreamOf(std::move(stream));

  SnapshotLineage previous = sink.snapshot_lineage();
  sink.set_snapshot_lineage(std::move(lineage));
  Result<CommitOutcome> outcome = sink.AppendStream(rows.get());
  sink.set_snapshot_lineage(std::move(previous));
  return outcome;
}

}  // namespace skade::table
