// The one JSON parser every module uses for text from outside the process (REST bodies,
// metadata files, manifests' schemas, connectors' answers, lineage, Arrow metadata): bounded in
// depth (kMaxJsonNesting, json_text.h) and linear in the size of the text. nlohmann's own parser
// builds an ordered_json object by searching its members for each new key — quadratic, so one
// 4 MB body of 300,000 properties pinned a core for minutes — and nothing bounds its nesting,
// which every later recursive walk of the tree pays for on the stack.
//
// Shared by every module, although named _internal: it is the only header that hands out
// nlohmann types across folders, so that the bounds are implemented once.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "skade/base/json_text.h"
#include "skade/base/status.h"

namespace skade {

// One JSON document (surrounding whitespace allowed, nothing else after it) with objects in
// document order; a key given twice keeps its first position and its last value.
// kInvalidArgument naming `what` for malformed JSON (with the byte offset) or nesting deeper
// than `max_depth`.
Result<nlohmann::ordered_json> ParseOrderedJson(std::string_view text, std::string_view what,
                                                size_t max_depth = kMaxJsonNesting);

// The same into nlohmann::json (objects sorted by key).
Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what, size_t max_depth = kMaxJsonNesting);

}  // namespace skade
