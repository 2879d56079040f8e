// ZSTD-compressed Parquet pages decompressed by the system's libzstd instead of the copy DuckDB
// bundles. DuckDB's Parquet reader decompresses each ZSTD page with duckdb_zstd::ZSTD_decompress,
// a function libduckdb.so exports and calls through its PLT, so a definition earlier in the
// lookup order (a program linking skade_engine, or libskade.so, which is loaded before the
// libduckdb.so it depends on) is the one called. zstd_pages.cc defines it, forwarding to the
// system's ZSTD_decompress: the same function of the same format (the reference
// implementation), with the same error convention (ZSTD_isError, codes stable across versions),
// so DuckDB's check of each page (an error or another size is "ZSTD Decompression failure")
// holds unchanged.
// Why: the libduckdb.so skade embeds (scripts/fetch_duckdb.sh) was built by GCC 12, whose code
// for zstd's sequence decoding is slow; that loop was 76 % of a scan of zstd files, and the
// system's libzstd read them 17 % faster (bench/RESULTS.md, section au). Should a later DuckDB
// stop exporting the function, pages decompress in DuckDB's copy again: the same answers,
// slower; ZstdPagesTest fails then, so it is seen.
#pragma once

#include <cstdint>

namespace skade::engine {

// Frames (Parquet pages) decompressed by skade's definition in this process.
uint64_t ZstdPagesDecompressed();

// Does nothing. Database::Open calls it, so that zstd_pages.cc (whose definition nothing else
// references) is linked into every program that opens a Database.
void KeepZstdPages();

}  // namespace skade::engine
