// Test helpers: run a query and get its rows as text (NULL as "NULL"), failing the test on
// error; a checked predicate from SQL text.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "skade/engine/database.h"
#include "skade/engine/user_sql.h"

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

// A predicate the test knows to be valid (a parse failure fails the test and matches nothing).
inline engine::Predicate Where(const std::string& sql) {
  auto p = engine::Predicate::Parse(sql);
  EXPECT_TRUE(p.ok()) << sql << ": " << p.status().ToString();
  return p.ok() ? std::move(p).value() : engine::Predicate::Parse("false").value();
}

}  // namespace skade::testing
