// A strict Arrow C Data Interface consumer for the fuzz targets: reads every byte a consumer
// may read from an exported array and aborts on anything a consumer could not rely on.
#pragma once

#include "skade/arrow/c_data.h"

namespace skade::fuzz {

// Reads `array` as the C Data Interface says an array of `schema` is laid out: validity
// bitmaps, values, offsets (non-negative, non-decreasing, within the values or the child),
// views (within their variadic buffers), dictionary indices (within the dictionary) and
// children, recursively. Aborts with a message on a structural inconsistency; reads past a
// buffer are left to AddressSanitizer.
void ConsumeArray(const ArrowSchema& schema, const ArrowArray& array);

}  // namespace skade::fuzz
