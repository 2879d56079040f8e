#include "skade/table/transform_run.h"

#include <cstring>
#include <set>
#include <string>
#include <utility>

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
};

int GetSchema(ArrowArrayStream* stream, ArrowSchema* out) {
  auto* s = static_cast<TransformedStream*>(stream->private_data);
  // A copy the consumer owns: ask the transform again (schemas are cheap and deterministic).
  auto schema = s->transform->OutputSchema(*s->input_schema.get());
  if (!schema.ok()) {
    s->error = schema.status().ToString();
    return EINVAL;
  }
  schema->MoveTo(out);
  return 0;
}

int GetNext(ArrowArrayStream* stream, ArrowArray* out) {
  auto* s = static_cast<TransformedStream*>(stream->private_data);
  arrow::ArrayHandle batch;
  if (int rc = s->input->get_next(s->input.get(), batch.get()); rc != 0) {
    const char* why = s->input->get_last_error(s->input.get());
    s->error = std::string("reading the source: ") + (why ? why : std::strerror(rc));
    return rc;
  }
  if (!batch.valid()) {  // end of stream
    out->release = nullptr;
    return 0;
  }
  auto transformed = s->transform->Apply(*s->input_schema.get(), std::move(batch));
  if (!transformed.ok()) {
    s->error = "transform: " + transformed.status().ToString();
    return EINVAL;
  }
  transformed->MoveTo(out);
  return 0;
}

const char* GetLastError(ArrowArrayStream* stream) {
  auto* s = static_cast<TransformedStream*>(stream->private_data);
  return s->error.empty() ? nullptr : s->error.c_str();
}

void Release(ArrowArrayStream* stream) {
  delete static_cast<TransformedStream*>(stream->private_data);
  stream->release = nullptr;
}

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

  ArrowArrayStream raw{};
  raw.get_schema = GetSchema;
  raw.get_next = GetNext;
  raw.get_last_error = GetLastError;
  raw.release = Release;
  raw.private_data = stream.release();
  arrow::StreamHandle rows(&raw);

  SnapshotLineage previous = sink.snapshot_lineage();
  sink.set_snapshot_lineage(std::move(lineage));
  Result<CommitOutcome> outcome = sink.AppendStream(rows.get());
  sink.set_snapshot_lineage(std::move(previous));
  return outcome;
}

}  // namespace skade::table
