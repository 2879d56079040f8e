// Page checksums of Parquet files: small files built here page by page (the checker reads only
// the footer's column chunks and the page headers), and Spark-written files from
// ../shared/fixtures, which carry a CRC in every page.
#include "skade/iceberg/parquet_pages.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "skade/iceberg/parquet_checksums.h"
#include "skade/iceberg/thrift_compact.h"
#include "tests/testing/temp_dir.h"

namespace skade::iceberg {
namespace {

using thrift::CompactType;
using thrift::CompactWriter;

constexpr int kDataPage = 0;
constexpr int kDictionaryPage = 2;
constexpr int kDataPageV2 = 3;

struct TestPage {
  int type = kDataPage;
  std::string data;
  int32_t num_values = 0;
  bool crc = true;
  std::optional<uint32_t> crc_value;  // a wrong CRC on purpose
};

struct TestColumn {
  std::string name;
  std::vector<TestPage> pages;
  std::optional<int64_t> num_values;  // default: the data pages' values
};

struct Built {
  std::string bytes;
  std::vector<int64_t> data_offsets;  // each page's first data byte, in file order
  std::vector<int64_t> header_offsets;
};

std::string PageHeader(const TestPage& p) {
  CompactWriter w;
  w.BeginStruct();
  w.WriteFieldHeader(CompactType::kI32, 1);
  w.WriteI32(p.type);
  w.WriteFieldHeader(CompactType::kI32, 2);
  w.WriteI32(static_cast<int32_t>(p.data.size()));
  w.WriteFieldHeader(CompactType::kI32, 3);
  w.WriteI32(static_cast<int32_t>(p.data.size()));
  if (p.crc) {
    w.WriteFieldHeader(CompactType::kI32, 4);
    w.WriteI32(static_cast<int32_t>(p.crc_value.value_or(ParquetCrc32(p.data))));
  }
  const int16_t nested = p.type == kDataPage ? 5 : p.type == kDictionaryPage ? 7 : 8;
  w.WriteFieldHeader(CompactType::kStruct, nested);
  w.BeginStruct();
  w.WriteFieldHeader(CompactType::kI32, 1);
  w.WriteI32(p.num_values);
  w.WriteFieldHeader(CompactType::kI32, 2);
  w.WriteI32(0);
  w.EndStruct();
  w.EndStruct();
  return w.bytes();
}

// A Parquet file of one row group with `columns`, each a column chunk of its pages.
// `schema` replaces the default one (a root named "schema" alone).
Built Build(const std::vector<TestColumn>& columns, std::string_view trailing_magic = "PAR1",
            const std::vector<ParquetSchemaElement>& schema = {}) {
  Built out;
  out.bytes = "PAR1";
  struct Meta {
    int64_t start, length, values, data_page_offset;
    std::optional<int64_t> dictionary_offset;
  };
  std::vector<Meta> metas;
  for (const TestColumn& c : columns) {
    Meta m{static_cast<int64_t>(out.bytes.size()), 0, 0, -1, std::nullopt};
    for (const TestPage& p : c.pages) {
      const int64_t at = static_cast<int64_t>(out.bytes.size());
      if (p.type == kDictionaryPage) {
        m.dictionary_offset = at;
      } else {
        if (m.data_page_offset < 0) m.data_page_offset = at;
        m.values += p.num_values;
      }
      out.header_offsets.push_back(at);
      out.bytes += PageHeader(p);
      out.data_offsets.push_back(static_cast<int64_t>(out.bytes.size()));
      out.bytes += p.data;
    }
    m.length = static_cast<int64_t>(out.bytes.size()) - m.start;
    if (c.num_values) m.values = *c.num_values;
    metas.push_back(m);
  }
  CompactWriter w;
  w.BeginStruct();
  w.WriteFieldHeader(CompactType::kI32, 1);  // version
  w.WriteI32(1);
  w.WriteFieldHeader(CompactType::kList, 2);  // schema
  const std::vector<ParquetSchemaElement> elements =
      schema.empty() ? std::vector<ParquetSchemaElement>{{"schema", 0, std::nullopt}} : schema;
  w.WriteListHeader(CompactType::kStruct, static_cast<int64_t>(elements.size()));
  for (const ParquetSchemaElement& e : elements) {
    w.BeginStruct();
    w.WriteFieldHeader(CompactType::kI32, 3);  // repetition_type, skipped by the reader
    w.WriteI32(1);
    if (!e.name.empty()) {
      w.WriteFieldHeader(CompactType::kBinary, 4);
      w.WriteBinary(e.name);
    }
    if (e.num_children > 0) {
      w.WriteFieldHeader(CompactType::kI32, 5);
      w.WriteI32(e.num_children);
    }
    if (e.field_id) {
      w.WriteFieldHeader(CompactType::kI32, 9);
      w.WriteI32(*e.field_id);
    }
    w.EndStruct();
  }
  w.WriteFieldHeader(CompactType::kI64, 3);
  w.WriteI64(10);
  w.WriteFieldHeader(CompactType::kList, 4);
  w.WriteListHeader(CompactType::kStruct, 1);
  w.BeginStruct();
  w.WriteFieldHeader(CompactType::kList, 1);
  w.WriteListHeader(CompactType::kStruct, static_cast<int64_t>(columns.size()));
  for (size_t i = 0; i < columns.size(); ++i) {
    const Meta& m = metas[i];
    w.BeginStruct();
    w.WriteFieldHeader(CompactType::kI64, 2);
    w.WriteI64(0);
    w.WriteFieldHeader(CompactType::kStruct, 3);
    w.BeginStruct();
    w.WriteFieldHeader(CompactType::kI32, 1);
    w.WriteI32(1);
    w.WriteFieldHeader(CompactType::kList, 2);
    w.WriteListHeader(CompactType::kI32, 1);
    w.WriteI32(0);
    w.WriteFieldHeader(CompactType::kList, 3);
    w.WriteListHeader(CompactType::kBinary, 2);
    w.WriteBinary("outer");
    w.WriteBinary(columns[i].name);
    w.WriteFieldHeader(CompactType::kI32, 4);
    w.WriteI32(0);
    w.WriteFieldHeader(CompactType::kI64, 5);
    w.WriteI64(m.values);
    w.WriteFieldHeader(CompactType::kI64, 6);
    w.WriteI64(m.length);
    w.WriteFieldHeader(CompactType::kI64, 7);
    w.WriteI64(m.length);
    w.WriteFieldHeader(CompactType::kI64, 9);
    w.WriteI64(m.data_page_offset);
    if (m.dictionary_offset) {
      w.WriteFieldHeader(CompactType::kI64, 11);
      w.WriteI64(*m.dictionary_offset);
    }
    w.EndStruct();
    w.EndStruct();
  }
  w.WriteFieldHeader(CompactType::kI64, 2);
  w.WriteI64(0);
  w.WriteFieldHeader(CompactType::kI64, 3);
  w.WriteI64(10);
  w.EndStruct();
  w.EndStruct();
  out.bytes += w.bytes();
  const uint32_t n = static_cast<uint32_t>(w.bytes().size());
  for (int i = 0; i < 4; ++i) out.bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  out.bytes += trailing_magic;
  return out;
}

std::vector<TestColumn> TwoColumns(bool crc) {
  TestColumn a{"a", {}, std::nullopt};
  a.pages.push_back({kDictionaryPage, "dictionary of a", 3, crc, std::nullopt});
  a.pages.push_back({kDataPage, "first data page of a", 5, crc, std::nullopt});
  a.pages.push_back({kDataPage, "second data page of a", 5, crc, std::nullopt});
  TestColumn b{"b", {}, std::nullopt};
  b.pages.push_back({kDataPageV2, std::string("\x01\x02levels, then compressed values", 32), 10,
                     crc, std::nullopt});
  return {a, b};
}

TEST(ParquetPagesTest, FileWithoutChecksumsCostsOnlyItsFirstPages) {
  const Built f = Build(TwoColumns(false));
  auto probe = CheckParquetPagesInMemory(f.bytes, "t.parquet", PageScope::kWhereChecksummed);
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  EXPECT_FALSE(probe->checksummed());
  EXPECT_FALSE(probe->all_pages);
  EXPECT_EQ(probe->pages, 2);  // the dictionary page and the first data page
  EXPECT_EQ(probe->row_groups, 1);
  EXPECT_EQ(probe->column_chunks, 2);

  auto all = CheckParquetPagesInMemory(f.bytes, "t.parquet", PageScope::kAll);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_TRUE(all->all_pages);
  EXPECT_EQ(all->pages, 4);
  EXPECT_EQ(all->pages_with_crc, 0);
}

TEST(ParquetPagesTest, TheReportCarriesTheFootersSchema) {
  // root { a (id 1), s (id 2) { x (id 3), y } }, as a footer lists it: depth first.
  const std::vector<ParquetSchemaElement> schema = {
      {"root", 2, std::nullopt}, {"a", 0, 1}, {"s", 2, 2}, {"x", 0, 3}, {"y", 0, std::nullopt}};
  const Built f = Build(TwoColumns(false), "PAR1", schema);
  auto r = CheckParquetPagesInMemory(f.bytes, "t.parquet", PageScope::kWhereChecksummed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->schema, schema);

  // A schema of more elements than a report keeps is walked over: the file is still checked.
  std::vector<ParquetSchemaElement> huge = {{"root", 100'000, std::nullopt}};
  for (int i = 0; i < 100'000; ++i) huge.push_back({"c" + std::to_string(i), 0, i + 1});
  auto wide = CheckParquetPagesInMemory(Build(TwoColumns(true), "PAR1", huge).bytes, "t.parquet",
                                        PageScope::kWhereChecksummed);
  ASSERT_TRUE(wide.ok()) << wide.status().ToString();
  EXPECT_TRUE(wide->schema.empty());
  EXPECT_EQ(wide->pages_with_crc, 4);
  huge.pop_back();
  huge[0].num_children = 99'999;
  auto kept = CheckParquetPagesInMemory(Build(TwoColumns(true), "PAR1", huge).bytes, "t.parquet",
                                        PageScope::kWhereChecksummed);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->schema.size(), 100'000u);

  // An element without its required name is a damaged footer.
  std::vector<ParquetSchemaElement> unnamed = schema;
  unnamed[3].name.clear();
  auto bad = CheckParquetPagesInMemory(Build(TwoColumns(false), "PAR1", unnamed).bytes, "t.parquet",
                                       PageScope::kWhereChecksummed);
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("schema element 3 has no name"), std::string::npos)
      << bad.status().message();
}

TEST(ParquetPagesTest, ChecksummedFileHasEveryPageChecked) {
  const Built f = Build(TwoColumns(true));
  for (PageScope scope : {PageScope::kWhereChecksummed, PageScope::kAll}) {
    auto r = CheckParquetPagesInMemory(f.bytes, "t.parquet", scope);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->checksummed());
    EXPECT_TRUE(r->all_pages);
    EXPECT_EQ(r->pages, 4);
    EXPECT_EQ(r->pages_with_crc, 4);
  }
}

TEST(ParquetPagesTest, EveryFlippedPageByteIsCorruptionNamingTheFileAndPage) {
  const std::vector<TestColumn> columns = TwoColumns(true);
  const Built f = Build(columns);
  size_t page = 0;
  for (size_t c = 0; c < columns.size(); ++c) {
    for (const TestPage& p : columns[c].pages) {
      const int64_t at = f.data_offsets[page];
      for (int64_t i = 0; i < static_cast<int64_t>(p.data.size()); ++i) {
        std::string damaged = f.bytes;
        damaged[static_cast<size_t>(at + i)] ^= 0x10;
        auto r = CheckParquetPagesInMemory(damaged, "s3://b/t/data/f.parquet",
                                           PageScope::kWhereChecksummed);
        ASSERT_FALSE(r.ok()) << "page " << page << " byte " << i;
        EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
        const std::string& m = r.status().message();
        EXPECT_NE(m.find("'s3://b/t/data/f.parquet'"), std::string::npos) << m;
        EXPECT_NE(m.find("checksum mismatch"), std::string::npos) << m;
        EXPECT_NE(m.find("row group 0"), std::string::npos) << m;
        EXPECT_NE(m.find("'outer." + columns[c].name + "'"), std::string::npos) << m;
        EXPECT_NE(m.find("offset " + std::to_string(f.header_offsets[page])), std::string::npos)
            << m;
      }
      ++page;
    }
  }
}

TEST(ParquetPagesTest, ChecksummedDataPagesAfterAnUnchecksummedDictionaryCount) {
  // Some writers put CRCs on data pages only: the probe looks past the dictionary page.
  std::vector<TestColumn> columns = TwoColumns(true);
  columns[0].pages[0].crc = false;
  const Built f = Build(columns);
  auto r = CheckParquetPagesInMemory(f.bytes, "t.parquet", PageScope::kWhereChecksummed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->all_pages);
  EXPECT_EQ(r->pages, 4);
  EXPECT_EQ(r->pages_with_crc, 3);
}

TEST(ParquetPagesTest, AWrongStoredCrcIsCorruption) {
  std::vector<TestColumn> columns = TwoColumns(true);
  columns[1].pages[0].crc_value = 12345;
  const Built f = Build(columns);
  auto r = CheckParquetPagesInMemory(f.bytes, "t.parquet", PageScope::kWhereChecksummed);
  ASSERT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("stored CRC 0x00003039"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("data page (v2)"), std::string::npos) << r.status().message();
}

TEST(ParquetPagesTest, PagesThatDoNotFillTheirChunkAreCorruption) {
  // Values that do not add up to the chunk's count.
  std::vector<TestColumn> columns = TwoColumns(false);
  columns[1].num_values = 11;
  auto r = CheckParquetPagesInMemory(Build(columns).bytes, "t.parquet", PageScope::kAll);
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("values"), std::string::npos);

  // A page longer than its chunk: the last data page's size grows by one (its CRC stays right
  // for its old bytes, so only the structure can tell).
  const Built f = Build(TwoColumns(false));
  std::string longer = f.bytes;
  // The second data page of column a is page 2; its compressed size field follows field 2.
  const size_t header = static_cast<size_t>(f.header_offsets[2]);
  const std::string old_header =
      PageHeader({kDataPage, "second data page of a", 5, false, std::nullopt});
  const std::string new_header =
      PageHeader({kDataPage, "second data page of a!", 5, false, std::nullopt});
  ASSERT_EQ(old_header.size(), new_header.size());
  longer.replace(header, old_header.size(), new_header);
  r = CheckParquetPagesInMemory(longer, "t.parquet", PageScope::kAll);
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("runs past the end of its column chunk"), std::string::npos)
      << r.status().message();
}

TEST(ParquetPagesTest, BrokenFilesAreCorruptionNamingTheFile) {
  const Built f = Build(TwoColumns(true));
  // Every truncation: never a crash, always Corruption naming the file.
  for (size_t n = 0; n < f.bytes.size(); ++n) {
    auto r = CheckParquetPagesInMemory(std::string_view(f.bytes).substr(0, n), "cut.parquet",
                                       PageScope::kAll);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << n;
    EXPECT_NE(r.status().message().find("'cut.parquet'"), std::string::npos)
        << r.status().message();
  }
  // Wrong magic; a footer length larger than the file.
  auto magic = CheckParquetPagesInMemory(Build(TwoColumns(true), "PAR2").bytes, "m.parquet",
                                         PageScope::kAll);
  EXPECT_EQ(magic.status().code(), StatusCode::kCorruption);
  std::string long_footer = f.bytes;
  long_footer[long_footer.size() - 5] = '\x7f';
  auto footer = CheckParquetPagesInMemory(long_footer, "l.parquet", PageScope::kAll);
  EXPECT_EQ(footer.status().code(), StatusCode::kCorruption);
  EXPECT_NE(footer.status().message().find("footer length"), std::string::npos);
}

TEST(ParquetPagesTest, AnEncryptedFooterIsNotRead) {
  auto r = CheckParquetPagesInMemory(Build(TwoColumns(true), "PARE").bytes, "e.parquet",
                                     PageScope::kAll);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->pages, 0);
  EXPECT_FALSE(r->all_pages);
}

TEST(ParquetPagesTest, GarbageAndFlippedBytesNeverCrash) {
  const Built f = Build(TwoColumns(true));
  std::mt19937 rng(8);
  for (int round = 0; round < 5000; ++round) {
    std::string damaged = f.bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) damaged[rng() % damaged.size()] = static_cast<char>(rng());
    auto r = CheckParquetPagesInMemory(damaged, "g.parquet", PageScope::kAll);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
    }
  }
  for (int round = 0; round < 2000; ++round) {
    std::string garbage(12 + rng() % 200, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    garbage.replace(garbage.size() - 4, 4, "PAR1");
    garbage[garbage.size() - 5] = 0;
    garbage[garbage.size() - 6] = 0;
    auto r = CheckParquetPagesInMemory(garbage, "g.parquet", PageScope::kAll);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
    }
  }
}

TEST(ParquetPagesTest, ReadsThroughFileIO) {
  testing::TempDir tmp;
  const Built f = Build(TwoColumns(true));
  testing::WriteFileOrDie(tmp.Path("f.parquet"), f.bytes);
  auto io = io::MakeLocalFileIO();
  auto r = CheckParquetPages(*io, tmp.Path("f.parquet"), PageScope::kWhereChecksummed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->pages_with_crc, 4);
  EXPECT_EQ(CheckParquetPages(*io, tmp.Path("missing.parquet"), PageScope::kAll).status().code(),
            StatusCode::kNotFound);
}

TEST(ParquetPagesTest, PagesLargerThanOneReadAreCheckedWhole) {
  // A 9 MiB page: its CRC is computed over several reads of at most 4 MiB.
  std::vector<TestColumn> columns = TwoColumns(true);
  std::string big(9 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>(i);
  columns[0].pages[1].data = big;
  const Built f = Build(columns);
  testing::TempDir tmp;
  testing::WriteFileOrDie(tmp.Path("big.parquet"), f.bytes);
  auto io = io::MakeLocalFileIO();
  auto r = CheckParquetPages(*io, tmp.Path("big.parquet"), PageScope::kWhereChecksummed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->pages_with_crc, 4);
  std::string damaged = f.bytes;
  damaged[static_cast<size_t>(f.data_offsets[1]) + (7 << 20)] ^= 1;
  testing::WriteFileOrDie(tmp.Path("damaged.parquet"), damaged);
  EXPECT_EQ(CheckParquetPages(*io, tmp.Path("damaged.parquet"), PageScope::kWhereChecksummed)
                .status()
                .code(),
            StatusCode::kCorruption);
}

TEST(ParquetPagesTest, SparkWrittenFilesCarryChecksumsOnEveryPage) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  // parquet-mr 1.13.1 (PySpark), zstd, 16 columns, dictionary and data pages.
  const std::string path = testing::FixturePath(
      "iceberg/lineitem_iceberg/data/00000-5-dad9988f-2a3b-464c-adb6-6034de93da19-00001.parquet");
  const std::string bytes = testing::ReadFileOrDie(path);
  auto r = CheckParquetPagesInMemory(bytes, path, PageScope::kWhereChecksummed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->all_pages);
  EXPECT_EQ(r->column_chunks, 16);
  EXPECT_EQ(r->pages, 62);
  EXPECT_EQ(r->pages_with_crc, 62);
  // Its schema: the root, then the 16 columns, each with its Iceberg field id.
  ASSERT_EQ(r->schema.size(), 17u);
  EXPECT_EQ(r->schema[0].num_children, 16);
  for (size_t i = 1; i < r->schema.size(); ++i) {
    EXPECT_FALSE(r->schema[i].name.empty());
    EXPECT_EQ(r->schema[i].num_children, 0);
    EXPECT_EQ(r->schema[i].field_id, static_cast<int32_t>(i)) << r->schema[i].name;
  }
  // A byte in the middle of the file lies in some page: the check names that page.
  std::string damaged = bytes;
  damaged[damaged.size() / 2] ^= 0x01;
  auto bad = CheckParquetPagesInMemory(damaged, path, PageScope::kWhereChecksummed);
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("checksum mismatch"), std::string::npos)
      << bad.status().message();
}

// AddParquetPageChecksums over a whole file in memory, reading in the ranges it asks for.
Result<std::string> WithChecksums(std::string_view file, PageChecksumRewrite* rewrite = nullptr,
                                  int64_t* reads = nullptr) {
  std::string out;
  auto read = [&](int64_t offset, int64_t length) -> Result<std::string> {
    EXPECT_GE(offset, 0);
    EXPECT_LE(offset + length, static_cast<int64_t>(file.size()));
    if (reads) ++*reads;
    return std::string(file.substr(static_cast<size_t>(offset), static_cast<size_t>(length)));
  };
  auto write = [&](std::string_view bytes) {
    out.append(bytes);
    return Status::Ok();
  };
  SKADE_ASSIGN_OR_RETURN(PageChecksumRewrite r,
                         AddParquetPageChecksums(static_cast<int64_t>(file.size()), read, write, "w.parquet",
                                                 /*keep_spans=*/true));
  EXPECT_EQ(r.size, static_cast<int64_t>(out.size()));
  if (rewrite) *rewrite = std::move(r);
  return out;
}

TEST(ParquetChecksumsTest, AddedChecksumsCoverEveryPageAndTheFooterFollows) {
  const Built plain = Build(TwoColumns(false));
  PageChecksumRewrite rewrite;
  auto out = WithChecksums(plain.bytes, &rewrite);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(rewrite.pages, 4);
  ASSERT_EQ(rewrite.spans.size(), 4u);
  // The pages' bytes are the original ones, at their new places.
  for (size_t i = 0; i < rewrite.spans.size(); ++i) {
    const ParquetPageSpan& span = rewrite.spans[i];
    const size_t original_size = (i + 1 < plain.header_offsets.size() ? plain.header_offsets[i + 1]
                                                                     : static_cast<int64_t>(plain.bytes.size())) -
                                 plain.data_offsets[i];
    if (i + 1 < plain.header_offsets.size()) {
      EXPECT_EQ(out->substr(static_cast<size_t>(span.data_offset), static_cast<size_t>(span.data_size)),
                plain.bytes.substr(static_cast<size_t>(plain.data_offsets[i]), original_size));
    }
    EXPECT_GT(span.data_offset, span.header_offset);
  }
  // The checker walks the new footer's chunks page by page: offsets and sizes moved right,
  // and every page's CRC matches.
  auto report = CheckParquetPagesInMemory(*out, "w.parquet", PageScope::kAll);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->pages, 4);
  EXPECT_EQ(report->pages_with_crc, 4);
  // Adding them again changes nothing.
  auto again = WithChecksums(*out);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *out);
  // A flipped byte in any page of the copy is found.
  for (const ParquetPageSpan& span : rewrite.spans) {
    std::string damaged = *out;
    damaged[static_cast<size_t>(span.data_offset + span.data_size / 2)] ^= 0x10;
    EXPECT_EQ(CheckParquetPagesInMemory(damaged, "w.parquet", PageScope::kAll).status().code(),
              StatusCode::kCorruption);
  }
}

TEST(ParquetChecksumsTest, LargePagesAreCopiedInOneChunkRead) {
  std::vector<TestColumn> columns = TwoColumns(false);
  std::string big(9 << 20, 'y');
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>(i);
  columns[0].pages[1].data = big;
  const Built plain = Build(columns);
  int64_t reads = 0;
  auto out = WithChecksums(plain.bytes, nullptr, &reads);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_LE(reads, 8);  // magic, tail, footer, two chunks (and no gaps here)
  auto report = CheckParquetPagesInMemory(*out, "w.parquet", PageScope::kWhereChecksummed);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->pages_with_crc, 4);
}

TEST(ParquetChecksumsTest, AStoredCrcThatDoesNotMatchIsNeverBlessed) {
  std::vector<TestColumn> columns = TwoColumns(true);
  columns[0].pages[2].crc_value = 12345;
  auto out = WithChecksums(Build(columns).bytes);
  EXPECT_EQ(out.status().code(), StatusCode::kCorruption) << out.status().ToString();
}

TEST(ParquetChecksumsTest, FilesItCannotParseAreRefusedAndNothingCrashes) {
  EXPECT_EQ(WithChecksums("PAR1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(WithChecksums(Build(TwoColumns(false), "PARE").bytes).status().code(), StatusCode::kInvalidArgument);
  const Built f = Build(TwoColumns(false));
  EXPECT_EQ(WithChecksums(f.bytes.substr(0, f.bytes.size() / 2) + f.bytes.substr(f.bytes.size() - 8)).status().code(),
            StatusCode::kInvalidArgument);
  std::mt19937 rng(31);
  for (int round = 0; round < 3000; ++round) {
    std::string damaged = f.bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) damaged[rng() % damaged.size()] = static_cast<char>(rng());
    auto out = WithChecksums(damaged);
    if (out.ok()) continue;  // damage inside page bytes is copied (the writer checksums what it wrote)
    EXPECT_TRUE(out.status().code() == StatusCode::kInvalidArgument ||
                out.status().code() == StatusCode::kCorruption)
        << out.status().ToString();
  }
}

TEST(ParquetChecksumsTest, SparkFilesKeepTheirChecksumsByteForByte) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string path = testing::FixturePath(
      "iceberg/lineitem_iceberg/data/00000-5-dad9988f-2a3b-464c-adb6-6034de93da19-00001.parquet");
  const std::string bytes = testing::ReadFileOrDie(path);
  PageChecksumRewrite rewrite;
  auto out = WithChecksums(bytes, &rewrite);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(rewrite.pages, 62);
  // Every page already carried its CRC: no header grew.
  for (const auto& [field_id, growth] : rewrite.growth_by_field_id) EXPECT_EQ(growth, 0) << field_id;
  EXPECT_EQ(rewrite.growth_by_field_id.size(), 16u);
  auto report = CheckParquetPagesInMemory(*out, path, PageScope::kAll);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->pages_with_crc, 62);
}

}  // namespace
}  // namespace skade::iceberg
