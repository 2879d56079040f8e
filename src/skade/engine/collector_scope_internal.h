// The result collector DuckDB plans one statement with (a collector of skade's: the whole reads
// of arrow_collect_internal.h, the streams of arrow_feed_internal.h).
#pragma once

#include <utility>

#include "duckdb.hpp"
#include "duckdb/main/client_config.hpp"

namespace skade::engine {

// Sets `context`'s result collector while a statement is planned (DuckDB calls it for the
// statement's plan), and puts back the one before it when the scope ends, whatever happens.
class CollectorScope {
 public:
  CollectorScope(duckdb::ClientContext& context, duckdb::get_result_collector_t collector)
      : config_(duckdb::ClientConfig::GetConfig(context)), previous_(config_.get_result_collector) {
    config_.get_result_collector = std::move(collector);
  }
  ~CollectorScope() { config_.get_result_collector = previous_; }
  CollectorScope(const CollectorScope&) = delete;
  CollectorScope& operator=(const CollectorScope&) = delete;

 private:
  duckdb::ClientConfig& config_;
  duckdb::get_result_collector_t previous_;
};

}  // namespace skade::engine
