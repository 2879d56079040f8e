// A C stream made from an object of any class with the stream's three calls as members: the
// four C callbacks and the ownership are written once, here.
#pragma once

#include <cerrno>
#include <memory>
#include <string>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"

namespace skade::arrow {

// A C stream that owns `source` and hands each call to it. `Source` has the stream's three
// calls as members, with their C contract (0 or an errno value; `out` released at the end; the
// last error valid until the next call):
//   int GetSchema(ArrowSchema* out);  int GetNext(ArrowArray* out);  const char* LastError();
// Releasing the stream deletes the source.
template <typename Source>
StreamHandle StreamOf(std::unique_ptr<Source> source) {
  ArrowArrayStream raw{};
  raw.get_schema = [](ArrowArrayStream* s, ArrowSchema* out) {
    return static_cast<Source*>(s->private_data)->GetSchema(out);
  };
  raw.get_next = [](ArrowArrayStream* s, ArrowArray* out) {
    return static_cast<Source*>(s->private_data)->GetNext(out);
  };
  raw.get_last_error = [](ArrowArrayStream* s) -> const char* {
    return static_cast<Source*>(s->private_data)->LastError();
  };
  raw.release = [](ArrowArrayStream* s) {
    delete static_cast<Source*>(s->private_data);
    s->private_data = nullptr;
    s->release = nullptr;
  };
  raw.private_data = source.release();
  return StreamHandle(&raw);
}

// A get_schema answer from a schema made for the call: 0 with the schema moved to `out`, or
// EINVAL with the reason (the status's message) in `error`.
inline int MoveSchemaOrFail(Result<SchemaHandle> schema, ArrowSchema* out, std::string& error) {
  if (!schema.ok()) {
    error = schema.status().message();
    return EINVAL;
  }
  schema->MoveTo(out);
  return 0;
}

}  // namespace skade::arrow
