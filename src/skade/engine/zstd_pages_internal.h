// ZSTD-compressed Parquet pages decompressed by the system's libzstd instead of the copy DuckDB
// bundles. DuckDB's Parquet reader decompresses each ZSTD page with duckdb_zstd::ZSTD_decompress,
// a function libduckdb.so exports and calls through its PLT (so does its reading back of
// buffers it spilled to temporary files, the only other caller). The dynamic linker resolves
// that call to the first definition in the lookup order: a program whose code opens a Database
// (Database::Open calls KeepZstdPages, which links zstd_pages.cc in) defines it in the program
// itself, which comes first; libskade.so, opened by dlopen (the Python package), comes before
// the libduckdb.so it depends on within its own group, after the process's global scope. It is
// lost, silently, where a library of the global scope defines the symbol, or where libduckdb.so
// was loaded before libskade.so; ZstdPagesTest checks the programs of the test suite.
// zstd_pages.cc forwards to the system's ZSTD_decompress: the same function of zstd's reference
// library, with the same error convention (ZSTD_isError; codes stable across versions), so
// DuckDB's checks are unchanged (a Parquet page that fails, or decompresses to another size, is
// its "ZSTD Decompression failure"). Only zstd frames and skippable frames are decoded: the
// legacy formats of zstd before 1.0, which the system's library may accept and DuckDB's copy
// does not, stay refused.
// Why: the libduckdb.so skade embeds (scripts/fetch_duckdb.sh) was built by GCC 12, whose code
// for zstd's sequence decoding is slow; that loop was 76 % of a scan of zstd files, and the
// system's libzstd read them 17 % faster (bench/RESULTS.md, section au).
#pragma once

#include <cstdint>

namespace skade::engine {

// Calls of skade's definition in this process (Parquet pages and DuckDB's spilled buffers).
uint64_t ZstdFramesDecompressed();

// Does nothing. Database::Open calls it, so that zstd_pages.cc (whose definition nothing else
// references) is linked into every program that opens a Database.
void KeepZstdPages();

}  // namespace skade::engine
