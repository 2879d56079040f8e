// Rules for JSON text from outside the process: the nesting every parse allows (code that
// walks, copies or prints a tree recurses once per level, so a body nested 100,000 deep would
// exhaust a thread's stack long after parsing succeeded), and no NUL inside request strings.
#pragma once

#include <cstddef>
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

}  // namespace skade
