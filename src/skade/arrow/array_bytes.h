// How many bytes of buffers an Arrow C Data array spans, read from its format strings (Arrow
// columnar specification, "Physical Memory Layout"): what it takes in memory and, without
// compression, about what its IPC body takes. For sizing batches, not for checking them:
// a malformed format counts as no bytes.
#pragma once

#include <cstdint>

#include "skade/arrow/c_data.h"

namespace skade::arrow {

// The bytes of `array`'s rows [offset, offset + length) in every buffer it uses, its children's
// and its dictionary's: validity bitmaps when it has nulls, fixed-width values, offsets with
// the variable-size data they span, views (16 bytes a row) without their data buffers, list
// children and union type ids in full.
int64_t ArrayBufferBytes(const ArrowSchema& schema, const ArrowArray& array);

}  // namespace skade::arrow
