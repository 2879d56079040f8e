// The fixture of the CLI lake tests: a fresh warehouse per test and helpers that run the
// `skade` binary on it and check that refused commands change nothing.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/testing/build_paths.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

namespace skade::cli {

namespace fs = std::filesystem;
using Json = nlohmann::json;

class LakeCliTest : public ::testing::Test {
 protected:
  void SetUp() override { warehouse_ = tmp_.Path("lake"); }

  // Runs skade on this test's warehouse; `args` are shell words, quoted where needed.
  testing::ProcessResult Skade(const std::string& args) {
    return testing::RunProcess(std::string(skade::testing::CliPath()) + " --warehouse " +
                               testing::ShellQuote(warehouse_) + " " + args);
  }

  // Runs skade and fails the test unless it exits 0; returns stdout.
  std::string SkadeOk(const std::string& args) {
    testing::ProcessResult r = Skade(args);
    EXPECT_EQ(r.exit_code, 0) << "skade " << args << "\n" << r.err;
    return r.out;
  }

  Json SkadeJson(const std::string& args) {
    std::string out = SkadeOk(args);
    Json j = Json::parse(out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "skade " << args << " printed no JSON:\n" << out;
    return j.is_discarded() ? Json() : j;
  }

  // The commit log as JSON (empty while there is no lake).
  Json Log() {
    if (!fs::exists(warehouse_ + "/catalog.db")) return Json::array();
    return SkadeJson("log --json");
  }

  // Every file in the warehouse except the catalog database (which SQLite may touch on open).
  std::set<std::string> WarehouseFiles() {
    std::set<std::string> files;
    if (!fs::exists(warehouse_)) return files;
    for (const auto& e : fs::recursive_directory_iterator(warehouse_)) {
      if (!e.is_regular_file()) continue;
      std::string name = e.path().filename().string();
      if (name.rfind("catalog.db", 0) == 0) continue;
      files.insert(e.path().lexically_relative(warehouse_).string());
    }
    return files;
  }

  // A table most tests use: demo.t(id BIGINT NOT NULL, s VARCHAR, amount DOUBLE, day DATE).
  void CreateDemo() {
    SkadeOk("ns create demo");
    SkadeOk("create demo.t --schema 'id BIGINT NOT NULL, s VARCHAR, amount DOUBLE, day DATE'");
  }

  // demo.t with ids 0..9.
  void CreateDemoRows() {
    CreateDemo();
    SkadeOk("ingest demo.t --sql " +
            testing::ShellQuote("SELECT range AS id, 's' || range AS s, range * 1.5 AS amount, "
                                "DATE '2024-01-01' + CAST(range AS INTEGER) AS day FROM range(10)"));
  }

  std::string File(const std::string& name, const std::string& text) {
    std::string path = tmp_.Path(name);
    testing::WriteFileOrDie(path, text);
    return path;
  }

  // Runs a command that must fail with exit code 1 and `code` (a status code name) in its
  // message, and checks that it changed neither the commit log nor the warehouse's files.
  void ExpectRefused(const std::string& args, const std::string& code,
                     const std::string& detail = "") {
    Json log_before = Log();
    std::set<std::string> files_before = WarehouseFiles();
    const bool lake_before = fs::exists(warehouse_);
    testing::ProcessResult r = Skade(args);
    EXPECT_EQ(r.exit_code, 1) << "skade " << args << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_THAT(r.err, ::testing::HasSubstr(code)) << "skade " << args;
    if (!detail.empty()) {
      EXPECT_THAT(r.err, ::testing::HasSubstr(detail)) << "skade " << args;
    }
    EXPECT_THAT(r.err, ::testing::HasSubstr("skade: ")) << "skade " << args;
    EXPECT_EQ(Log(), log_before) << "skade " << args << " committed something";
    EXPECT_EQ(WarehouseFiles(), files_before) << "skade " << args << " left files behind";
    EXPECT_EQ(fs::exists(warehouse_), lake_before) << "skade " << args << " created a lake";
  }

  testing::TempDir tmp_;
  std::string warehouse_;
};

}  // namespace skade::cli
