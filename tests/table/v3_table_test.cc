// Format v3 tables end to end through the table module. Reading: a lake table written by skade
// (merge-on-read position deletes), upgraded the way a v3 writer does it (format-version 3, a
// snapshot adding one Puffin file whose deletion-vector-v1 blobs a v3 delete manifest lists),
// read with exact rows, counts and filters. Writing: row lineage (first-row-id, added-rows,
// next-row-id, manifest first_row_id) and merge-on-read deletes as deletion vectors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "skade/iceberg/deletion_vector.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/puffin.h"
#include "skade/iceberg/table_metadata.h"
#include "tests/testing/lake_test.h"

namespace skade::table {
namespace {

// Spec "Reserved Field IDs": _pos, the field a deletion vector's blob is about.
constexpr int kRowPositionId = 2147483645;

class V3TableTest : public testing::LakeTest {
 protected:
  V3TableTest() : LakeTest("lake") {}

  // The data files of the current snapshot, by path.
  std::map<std::string, iceberg::DataFile> DataFiles(const catalog::TableIdent& ident) {
    auto state = catalog_->LoadTable(ident);
    EXPECT_TRUE(state.ok());
    std::map<std::string, iceberg::DataFile> out;
    auto manifests = iceberg::ReadManifestList(*io_, state->metadata->CurrentSnapshot()->manifest_list);
    EXPECT_TRUE(manifests.ok()) << manifests.status().ToString();
    for (const auto& m : *manifests) {
      if (m.content != iceberg::ManifestContent::kData) continue;
      EXPECT_TRUE(iceberg::ForEachLiveEntry(*io_, m, [&](iceberg::ManifestEntry& e) {
                    out[e.data_file.file_path] = e.data_file;
                    return Status::Ok();
                  }).ok());
    }
    return out;
  }

  // The live delete files of the current snapshot with a referenced data file, by that file.
  std::map<std::string, std::vector<iceberg::DataFile>> LiveDeleteFiles(const catalog::TableIdent& ident) {
    auto state = catalog_->LoadTable(ident);
    EXPECT_TRUE(state.ok());
    std::map<std::string, std::vector<iceberg::DataFile>> out;
    auto manifests = iceberg::ReadManifestList(*io_, state->metadata->CurrentSnapshot()->manifest_list);
    EXPECT_TRUE(manifests.ok()) << manifests.status().ToString();
    for (const auto& m : *manifests) {
      if (m.content != iceberg::ManifestContent::kDeletes) continue;
      EXPECT_TRUE(iceberg::ForEachLiveEntry(*io_, m, [&](iceberg::ManifestEntry& e) {
                    if (e.data_file.referenced_data_file) out[*e.data_file.referenced_data_file].push_back(e.data_file);
                    return Status::Ok();
                  }).ok());
    }
    return out;
  }

  std::string TableMetadataJson(const std::string& location) {
    auto bytes = io_->Read(location);
    EXPECT_TRUE(bytes.ok());
    return bytes.ok() ? *bytes : "";
  }

  // Row positions of the rows with `ids` in the data file at `path`.
  std::vector<int64_t> PositionsOf(const std::string& path, const std::string& ids) {
    std::vector<int64_t> out;
    for (const auto& row : testing::QueryText(*db_, "SELECT file_row_number FROM read_parquet(" +
                                                        engine::QuoteString(path) +
                                                        ", file_row_number = true) WHERE id IN (" + ids + ")")) {
      out.push_back(std::stoll(row[0]));
    }
    return out;
  }

  // Re-registers `ident` as a format v3 table whose new current snapshot adds one Puffin file
  // holding a deletion vector per entry of `vectors` (data file path → positions).
  void AddDeletionVectors(const catalog::TableIdent& ident, const std::map<std::string, std::vector<int64_t>>& vectors) {
    auto state = catalog_->LoadTable(ident);
    ASSERT_TRUE(state.ok());
    iceberg::TableMetadata m = *state->metadata;
    const iceberg::Snapshot base = *m.CurrentSnapshot();
    auto data = DataFiles(ident);
    const int64_t snapshot_id = base.snapshot_id + 7;
    const int64_t seq = m.last_sequence_number + 1;

    iceberg::PuffinWriter puffin;
    std::vector<iceberg::DataFile> entries;
    const std::string puffin_path = m.location + "/data/" + std::to_string(snapshot_id) + "-dv.puffin";
    for (const auto& [path, positions] : vectors) {
      auto dv = iceberg::DeletionVector::FromPositions(positions);
      const auto& blob = puffin.Add(
          iceberg::PuffinBlob{std::string(iceberg::kDeletionVectorBlob), {kRowPositionId}, snapshot_id, seq, 0, 0,
                              std::nullopt,
                              {{"referenced-data-file", path}, {"cardinality", std::to_string(dv.cardinality())}}},
          dv.Serialize());
      iceberg::DataFile e;
      e.content = iceberg::DataFileContent::kPositionDeletes;
      e.file_path = puffin_path;
      e.file_format = iceberg::FileFormat::kPuffin;
      e.spec_id = data.at(path).spec_id;
      e.partition = data.at(path).partition;
      e.record_count = dv.cardinality();
      e.referenced_data_file = path;
      e.content_offset = blob.offset;
      e.content_size_in_bytes = blob.length;
      entries.push_back(std::move(e));
    }
    const std::string file = puffin.Finish({{"created-by", "skade tests"}});
    ASSERT_TRUE(io_->CreateExclusive(puffin_path, file).ok());

    iceberg::ManifestWriterOptions options;
    options.format_version = 3;
    options.content = iceberg::ManifestContent::kDeletes;
    options.snapshot_id = snapshot_id;
    options.sequence_number = seq;
    auto writer = iceberg::ManifestWriter::Create(m.CurrentSchema(), m.DefaultSpec(), options);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    for (auto& e : entries) {
      e.file_size_in_bytes = static_cast<int64_t>(file.size());
      iceberg::ManifestEntry entry;
      entry.status = iceberg::ManifestEntryStatus::kAdded;
      entry.snapshot_id = snapshot_id;
      entry.data_file = e;
      ASSERT_TRUE((*writer)->Add(entry).ok());
    }
    auto manifest = (*writer)->Finish(m.location + "/metadata/" + std::to_string(snapshot_id) + "-dv-m0.avro");
    ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
    ASSERT_TRUE(io_->CreateExclusive(manifest->manifest.manifest_path, manifest->bytes).ok());
    auto manifests = iceberg::ReadManifestList(*io_, base.manifest_list);
    ASSERT_TRUE(manifests.ok());
    manifests->push_back(manifest->manifest);
    auto list = iceberg::WriteManifestList(3, snapshot_id, base.snapshot_id, seq, *manifests);
    ASSERT_TRUE(list.ok()) << list.status().ToString();
    const std::string list_path = m.location + "/metadata/snap-" + std::to_string(snapshot_id) + ".avro";
    ASSERT_TRUE(io_->CreateExclusive(list_path, *list).ok());

    // The upgrade to v3: existing rows have no row ids (next-row-id starts at 0).
    m.format_version = 3;
    m.next_row_id = 0;
    iceberg::Snapshot snap;
    snap.snapshot_id = snapshot_id;
    snap.parent_snapshot_id = base.snapshot_id;
    snap.sequence_number = seq;
    snap.timestamp_ms = base.timestamp_ms + 1;
    snap.manifest_list = list_path;
    snap.summary = {{"operation", "delete"}};
    snap.schema_id = m.current_schema_id;
    snap.first_row_id = 0;
    snap.added_rows = 0;
    m.snapshots.push_back(snap);
    m.current_snapshot_id = snapshot_id;
    m.refs["main"].snapshot_id = snapshot_id;
    m.snapshot_log.push_back({snap.timestamp_ms, snapshot_id});
    m.last_sequence_number = seq;
    m.last_updated_ms = snap.timestamp_ms;
    const std::string metadata_path = m.location + "/metadata/99999-v3.metadata.json";
    ASSERT_TRUE(io_->CreateExclusive(metadata_path, iceberg::TableMetadataToJson(m)).ok());
    ASSERT_TRUE(catalog_->DropTable(ident, catalog::DropMode::kKeepFiles).ok());
    auto registered = catalog_->RegisterTable(ident, metadata_path);
    ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  }
};

TEST_F(V3TableTest, VectorsDeleteTheirRowsAndSupersedePositionDeleteFiles) {
  auto t = CreateTable("orders", "id BIGINT NOT NULL, region VARCHAR", "region",
                       {{"write.delete.mode", "merge-on-read"}});
  ASSERT_NE(t, nullptr);
  for (int batch = 0; batch < 2; ++batch) {
    auto appended = t->Append({"SELECT range AS id, CASE WHEN range % 2 = 0 THEN 'eu' ELSE 'us' END AS region "
                               "FROM range(" + std::to_string(batch * 100) + ", " + std::to_string(batch * 100 + 100) + ")",
                               nullptr});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
  }
  // v2 position delete files for ids 4 (eu, first batch) and 151 (us, second batch).
  ASSERT_TRUE(t->DeleteWhere(testing::Where("id IN (4, 151)")).ok());
  ASSERT_TRUE(t->Refresh().ok());
  EXPECT_EQ(Rows(*t, "SELECT count(*) FROM t")[0][0], "198");

  // Which data file holds which ids.
  std::string eu_first, us_second;
  for (const auto& [path, unused] : DataFiles(Ident("orders"))) {
    const auto has = [&](int id) { return !PositionsOf(path, std::to_string(id)).empty(); };
    if (has(10)) eu_first = path;
    if (has(161)) us_second = path;
  }
  ASSERT_FALSE(eu_first.empty());
  ASSERT_FALSE(us_second.empty());
  // The eu vector takes in the earlier position delete (id 4) as the spec requires of a
  // writer; the us one leaves out id 151, so 151 shows that the older position delete file
  // no longer applies once a vector does (spec "Scan Planning").
  AddDeletionVectors(Ident("orders"), {{eu_first, PositionsOf(eu_first, "4, 10, 12")},
                                       {us_second, PositionsOf(us_second, "161")}});
  auto v3 = LoadTable(Ident("orders"));
  ASSERT_NE(v3, nullptr);
  EXPECT_EQ(v3->metadata().format_version, 3);
  EXPECT_EQ(Rows(*v3, "SELECT count(*) FROM t")[0][0], "196");
  EXPECT_EQ(Rows(*v3, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t WHERE id IN (4, 10, 12, 151, 161, 162)")[0][0],
            "151,162");
  ReadOptions eu;
  eu.where = testing::Where("region = 'eu' AND id < 20");
  EXPECT_EQ(Rows(*v3, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t", eu)[0][0], "0,2,6,8,14,16,18");
  auto count = v3->Count({});
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(*count, 196);
  // The snapshot before the vectors still reads with its position delete files.
  ReadOptions before;
  before.snapshot.snapshot_id = v3->metadata().snapshots[v3->metadata().snapshots.size() - 2].snapshot_id;
  EXPECT_EQ(Rows(*v3, "SELECT count(*) FROM t", before)[0][0], "198");


  // skade's own merge-on-read delete on this table merges into the vectors: the us file's new
  // vector holds 161 and 163 (and nothing of the superseded position delete file, which goes),
  // the eu file's vector and its superseded position delete file are untouched.
  ASSERT_TRUE(v3->DeleteWhere(testing::Where("id = 163")).ok());
  EXPECT_EQ(Rows(*v3, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t WHERE id IN (4, 10, 151, 161, 163, 165)")[0][0],
            "151,165");
  auto live = LiveDeleteFiles(Ident("orders"));
  ASSERT_EQ(live.count(us_second), 1u);
  ASSERT_EQ(live[us_second].size(), 1u) << "one vector per data file, the position delete file gone";
  EXPECT_EQ(live[us_second][0].file_format, iceberg::FileFormat::kPuffin);
  EXPECT_EQ(live[us_second][0].record_count, 2);
  ASSERT_EQ(live[eu_first].size(), 2u);
  for (const auto& d : live[eu_first]) {
    EXPECT_EQ(d.record_count, d.file_format == iceberg::FileFormat::kPuffin ? 3 : 1);
  }
}

TEST_F(V3TableTest, V3WritesAssignRowLineage) {
  auto t = CreateTable("events", "id BIGINT NOT NULL", "", {{"format-version", "3"}});
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->metadata().format_version, 3);
  ASSERT_TRUE(t->Append({"SELECT range AS id FROM range(10)", nullptr}).ok());
  ASSERT_TRUE(t->Append({"SELECT range AS id FROM range(10, 15)", nullptr}).ok());
  const auto& m = t->metadata();
  ASSERT_EQ(m.snapshots.size(), 2u);
  // Spec "Row Lineage": each snapshot starts at the table's next-row-id and takes the rows of
  // the data manifests it assigns; the second snapshot's list re-lists the first manifest
  // (already assigned) and assigns only its own.
  EXPECT_EQ(m.snapshots[0].first_row_id, 0);
  EXPECT_EQ(m.snapshots[0].added_rows, 10);
  EXPECT_EQ(m.snapshots[1].first_row_id, 10);
  EXPECT_EQ(m.snapshots[1].added_rows, 5);
  EXPECT_EQ(m.next_row_id, 15);
  auto manifests = iceberg::ReadManifestList(*io_, m.CurrentSnapshot()->manifest_list);
  ASSERT_TRUE(manifests.ok());
  std::set<int64_t> first_ids;
  for (const auto& mf : *manifests) {
    ASSERT_TRUE(mf.first_row_id.has_value()) << mf.manifest_path;
    first_ids.insert(*mf.first_row_id);
  }
  EXPECT_EQ(first_ids, (std::set<int64_t>{0, 10}));
  // The metadata skade wrote parses back with the same lineage.
  auto state = catalog_->LoadTable(Ident("events"));
  ASSERT_TRUE(state.ok());
  auto parsed = iceberg::ParseTableMetadata(TableMetadataJson(state->metadata_location));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->next_row_id, 15);
}

TEST_F(V3TableTest, CopyOnWriteDeletesOnV3KeepRowsInPlaceWithVectors) {
  auto t = CreateTable("cow", "id BIGINT NOT NULL", "", {{"format-version", "3"}});
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->Append({"SELECT range AS id FROM range(20)", nullptr}).ok());
  ASSERT_TRUE(t->DeleteWhere(testing::Where("id < 5")).ok());
  EXPECT_EQ(Rows(*t, "SELECT count(*), min(id) FROM t")[0], (std::vector<std::string>{"15", "5"}));
  auto live = LiveDeleteFiles(Ident("cow"));
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live.begin()->second.at(0).file_format, iceberg::FileFormat::kPuffin);
  EXPECT_EQ(t->metadata().next_row_id, 20) << "no row was rewritten, so none took a new id";
}

TEST_F(V3TableTest, MergeOnReadDeletesOnV3WriteDeletionVectors) {
  auto t = CreateTable("events", "id BIGINT NOT NULL, region VARCHAR", "region",
                       {{"format-version", "3"}, {"write.delete.mode", "merge-on-read"}});
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->Append({"SELECT range AS id, CASE WHEN range < 50 THEN 'eu' ELSE 'us' END AS region FROM range(100)",
                         nullptr})
                  .ok());
  auto first = t->DeleteWhere(testing::Where("id % 10 = 1"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->deleted_records, 10);
  EXPECT_EQ(Rows(*t, "SELECT count(*), sum(id) FROM t")[0], (std::vector<std::string>{"90", std::to_string(4950 - 460)}));
  auto live = LiveDeleteFiles(Ident("events"));
  ASSERT_EQ(live.size(), 2u);  // one vector for each region's file
  for (const auto& [data, deletes] : live) {
    ASSERT_EQ(deletes.size(), 1u) << data;
    EXPECT_EQ(deletes[0].file_format, iceberg::FileFormat::kPuffin);
    EXPECT_EQ(deletes[0].record_count, 5);
  }
  const auto summary = t->metadata().CurrentSnapshot()->summary;
  EXPECT_THAT(summary, ::testing::Contains(std::make_pair(std::string("added-dvs"), std::string("2"))));
  EXPECT_THAT(summary, ::testing::Not(::testing::Contains(::testing::Key("added-position-delete-files"))));

  // A second delete replaces the eu vector by one holding both deletes; the us one stays.
  ASSERT_TRUE(t->DeleteWhere(testing::Where("id IN (2, 3)")).ok());
  live = LiveDeleteFiles(Ident("events"));
  size_t eu_rows = 0;
  for (const auto& [data, deletes] : live) {
    ASSERT_EQ(deletes.size(), 1u) << data;
    eu_rows = std::max<size_t>(eu_rows, deletes[0].record_count);
  }
  EXPECT_EQ(eu_rows, 7u);
  EXPECT_EQ(Rows(*t, "SELECT count(*) FROM t")[0][0], "88");

  // Deleting a whole file's remaining rows removes the file and its vector.
  ASSERT_TRUE(t->DeleteWhere(testing::Where("region = 'us'")).ok());
  live = LiveDeleteFiles(Ident("events"));
  EXPECT_EQ(live.size(), 1u);
  EXPECT_EQ(Rows(*t, "SELECT count(*), min(id), max(id) FROM t")[0], (std::vector<std::string>{"43", "0", "49"}));

  // Compaction would rewrite rows without their lineage: refused, nothing changes.
  const int64_t before = *t->metadata().current_snapshot_id;
  auto compacted = t->Compact({});
  ASSERT_EQ(compacted.status().code(), StatusCode::kNotImplemented) << compacted.status().ToString();
  EXPECT_THAT(compacted.status().message(), ::testing::HasSubstr("row lineage"));
  ASSERT_TRUE(t->Refresh().ok());
  EXPECT_EQ(*t->metadata().current_snapshot_id, before);
  // Row lineage kept moving: each snapshot starts where the last ended. Ids go to every data
  // manifest a snapshot writes (as Iceberg's own writers do): the 100 appended rows and the 50
  // rows of the manifest the whole-file delete rewrote.
  int64_t next = 0;
  for (const auto& snap : t->metadata().snapshots) {
    EXPECT_EQ(snap.first_row_id, next) << snap.snapshot_id;
    next += snap.added_rows.value_or(-1);
  }
  EXPECT_EQ(t->metadata().next_row_id, next);
  EXPECT_EQ(next, 150);
}

// Spec "Row Lineage": a row keeps its _row_id through deletes of other rows and through the
// manifest rewrites a whole-file delete makes; _last_updated_sequence_number is the sequence
// number of the commit that wrote it.
TEST_F(V3TableTest, RowIdsAreStableAcrossDeletesAndManifestRewrites) {
  auto t = CreateTable("lineage", "id BIGINT NOT NULL, region VARCHAR", "region",
                       {{"format-version", "3"}, {"write.delete.mode", "merge-on-read"}});
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->Append({"SELECT range AS id, CASE WHEN range < 50 THEN 'eu' ELSE 'us' END AS region "
                         "FROM range(100)",
                         nullptr})
                  .ok());
  ASSERT_TRUE(t->Append({"SELECT range AS id, 'ap' AS region FROM range(100, 110)", nullptr}).ok());
  ReadOptions lineage;
  lineage.columns = {"id", "_row_id", "_last_updated_sequence_number"};
  // id → "_row_id/_last_updated_sequence_number" of every row.
  auto read = [&]() {
    std::map<std::string, std::string> out;
    for (const auto& row : Rows(*t, "SELECT * FROM t", lineage)) out[row[0]] = row[1] + "/" + row[2];
    return out;
  };
  const auto first = read();
  ASSERT_EQ(first.size(), 110u);
  std::set<std::string> ids;
  for (const auto& [id, lin] : first) {
    const std::string row_id = lin.substr(0, lin.find('/'));
    ids.insert(row_id);
    EXPECT_LT(std::stoll(row_id), 110) << id;
    EXPECT_EQ(lin.substr(lin.find('/') + 1), std::stoll(id) < 100 ? "1" : "2") << id;
  }
  EXPECT_EQ(ids.size(), 110u) << "row ids are unique";
  auto expect_kept = [&](size_t rows, const std::string& when) {
    SCOPED_TRACE(when);
    const auto now = read();
    EXPECT_EQ(now.size(), rows);
    for (const auto& [id, lin] : now) EXPECT_EQ(lin, first.at(id)) << "row " << id;
  };
  ASSERT_TRUE(t->DeleteWhere(testing::Where("id % 3 = 0")).ok());
  expect_kept(73, "after a vector delete");
  ASSERT_TRUE(t->DeleteWhere(testing::Where("region = 'us'")).ok());
  expect_kept(40, "after a whole-file delete rewrote the manifest");
  // The columns exist only where asked for; a v2 table refuses them.
  EXPECT_EQ(Rows(*t, "SELECT count(*) FROM (DESCRIBE t)")[0][0], "2");
  auto v2 = CreateTable("plain", "id BIGINT NOT NULL", "");
  ASSERT_NE(v2, nullptr);
  EXPECT_EQ(v2->Read(lineage).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skade::table
