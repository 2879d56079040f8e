// Test helper: run a query and get its rows as text (NULL as "NULL"), failing the test on error.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "skade/engine/database.h"

namespace skade::testing {

inline std::vector<std::vector<std::string>> QueryText(engine::Database& db, const std::string& sql) {
  auto rows = db.QueryRows(sql);
  EXPECT_TRUE(rows.ok()) << rows.status().ToString() << "\n" << sql;
  std::vector<std::vector<std::string>> out;
  if (!rows.ok()) return out;
  for (const auto& r : *rows) {
    std::vector<std::string> row;
    for (const auto& v : r) row.push_back(v.value_or("NULL"));
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace skade::testing
