// Rules for JSON text from outside the process: the nesting every parse allows (code that
// walks, copies or prints a tree recurses once per level, so a body nested 100,000 deep would
// exhaust a thread's stack long after parsing succeeded), and no NUL inside request strings.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "skade/base/status.h"

namespace skade {

// Nesting of objects and arrays allowed in any JSON text skade parses (json_parse_internal.h).
// Iceberg's deepest documents (a schema of nested structs, three JSON levels per struct
// level) stay far below it.
inline constexpr size_t kMaxJsonNesting = 256;

// kInvalidArgument naming `what` when a string in `text` holds a NUL character (the escape
// \u0000; a raw NUL is invalid JSON anyway). For requests: a name, property or value with a NUL
// would be cut short wherever it becomes a C string (SQL text, paths, PostgreSQL text), so what
// is stored or run would not be what was sent.
Status CheckJsonHasNoNul(std::string_view text, std::string_view what);

// A JSON object's text split around one top-level member, so that a large member can be parsed
// on its own (a REST answer's table metadata: megabytes with a long history, parsed once into
// its own form instead of into a tree first). `value` is the member's value as it stands in the
// text; `rest` is the object's text with that value replaced by `null`.
struct JsonMemberSplit {
  std::string rest;
  std::string_view value;
};

// nullopt unless `object_text` is, as far as this scan sees, one object in which `key` (compared
// as the raw bytes between the quotes: no escapes in it) names exactly one top-level member. The
// scan follows strings and nesting but checks no grammar: the caller parses both parts, which is
// what validates them (a valid `rest` with a valid `value` put back in place of its `null` is a
// valid object), and goes the ordinary way on nullopt or when `rest` still holds the key (spelt
// with escapes).
std::optional<JsonMemberSplit> SplitJsonMember(std::string_view object_text, std::string_view key);

}  // namespace skade
