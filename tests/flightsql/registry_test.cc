// Sessions and statement handles of the Flight SQL server: capabilities of their principal,
// per-principal limits that evict the least recently used, idle expiry.
#include "skade/flightsql/registry_internal.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace skade::flightsql {
namespace {

std::shared_ptr<const PreparedStatement> Prepared(const std::string& principal, const std::string& sql) {
  auto p = std::make_shared<PreparedStatement>();
  p->principal = principal;
  p->sql = sql;
  return p;
}

TEST(RegistryTest, HandlesAreRandomAndBelongToTheirPrincipal) {
  Registry r(RegistryLimits{});
  std::string a = r.AddQuery(PendingQuery{"alice", "SELECT 1", "one"});
  std::string b = r.AddQuery(PendingQuery{"alice", "SELECT 1", "one"});
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  auto found = r.FindQuery(a, "alice");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->sql, "SELECT 1");
  EXPECT_EQ(found->schema, "one");
  // Another principal learns nothing: the same NotFound as for a handle that never existed.
  EXPECT_EQ(r.FindQuery(a, "bob").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.FindQuery(a, "bob").status().message(), r.FindQuery("nope", "alice").status().message());

  std::string p = r.AddPrepared(Prepared("alice", "SELECT 2"));
  EXPECT_TRUE(r.FindPrepared(p, "alice").ok());
  EXPECT_EQ(r.FindPrepared(p, "bob").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.ClosePrepared(p, "bob").code(), StatusCode::kNotFound);
  EXPECT_EQ(r.BindParams(p, "bob", nullptr).code(), StatusCode::kNotFound);
  EXPECT_TRUE(r.ClosePrepared(p, "alice").ok());
  EXPECT_EQ(r.FindPrepared(p, "alice").status().code(), StatusCode::kNotFound);
}

TEST(RegistryTest, SessionsArePerPrincipalAndTheLeastRecentlyUsedGivesWay) {
  RegistryLimits limits;
  limits.max_sessions = 2;
  Registry r(limits);
  auto bob = r.CreateSession("bob");
  auto a1 = r.CreateSession("alice");
  auto a2 = r.CreateSession("alice");
  ASSERT_TRUE(r.FindSession(a1->id, "alice").ok());  // a1 is now more recent than a2
  auto a3 = r.CreateSession("alice");                // evicts a2, not bob's
  EXPECT_TRUE(r.FindSession(a1->id, "alice").ok());
  EXPECT_EQ(r.FindSession(a2->id, "alice").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(r.FindSession(a3->id, "alice").ok());
  EXPECT_TRUE(r.FindSession(bob->id, "bob").ok());
  EXPECT_EQ(r.FindSession(bob->id, "alice").status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(r.session_count(), 3u);
  r.CloseSession(a1->id);
  EXPECT_EQ(r.FindSession(a1->id, "alice").status().code(), StatusCode::kNotFound);
}

TEST(RegistryTest, PendingTicketsAndPreparedStatementsAreBoundedPerPrincipal) {
  RegistryLimits limits;
  limits.max_pending_queries = 3;
  limits.max_prepared = 2;
  Registry r(limits);
  std::string bobs = r.AddQuery(PendingQuery{"bob", "SELECT 0", ""});
  std::vector<std::string> alice;
  for (int i = 0; i < 5; ++i) {
    alice.push_back(r.AddQuery(PendingQuery{"alice", "SELECT " + std::to_string(i), ""}));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // distinct last-use times
  }
  EXPECT_FALSE(r.FindQuery(alice[0], "alice").ok());
  EXPECT_FALSE(r.FindQuery(alice[1], "alice").ok());
  for (int i = 2; i < 5; ++i) EXPECT_TRUE(r.FindQuery(alice[i], "alice").ok()) << i;
  EXPECT_TRUE(r.FindQuery(bobs, "bob").ok());

  std::string p1 = r.AddPrepared(Prepared("alice", "SELECT 1"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::string p2 = r.AddPrepared(Prepared("alice", "SELECT 2"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(r.FindPrepared(p1, "alice").ok());  // p1 used last
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::string p3 = r.AddPrepared(Prepared("alice", "SELECT 3"));
  EXPECT_TRUE(r.FindPrepared(p1, "alice").ok());
  EXPECT_FALSE(r.FindPrepared(p2, "alice").ok());
  EXPECT_TRUE(r.FindPrepared(p3, "alice").ok());
}

TEST(RegistryTest, IdleEntriesAreReapedAndCancelStopsAPendingTicket) {
  RegistryLimits limits;
  // Long enough that the first Reap below never comes after it on a loaded machine.
  limits.idle_lifetime = std::chrono::seconds(3);
  Registry r(limits);
  auto s = r.CreateSession("");
  std::string q = r.AddQuery(PendingQuery{"", "SELECT 1", ""});
  std::string p = r.AddPrepared(Prepared("", "SELECT 2"));
  std::string cancelled = r.AddQuery(PendingQuery{"", "SELECT 3", ""});
  EXPECT_EQ(r.Cancel(cancelled, "someone else"), CancelOutcome::kNotCancellable);
  EXPECT_EQ(r.Cancel(cancelled, ""), CancelOutcome::kCancelled);
  EXPECT_EQ(r.FindQuery(cancelled, "").status().code(), StatusCode::kCancelled);
  EXPECT_EQ(r.Cancel(cancelled, ""), CancelOutcome::kCancelled) << "cancelling twice is no error";
  EXPECT_EQ(r.FindQuery(cancelled, "someone else").status().code(), StatusCode::kNotFound);
  std::string fetched = r.AddQuery(PendingQuery{"", "SELECT 4", ""});
  r.MarkFetched(fetched);
  EXPECT_EQ(r.Cancel(fetched, ""), CancelOutcome::kNotCancellable);  // finished
  EXPECT_TRUE(r.FindQuery(fetched, "").ok());
  r.Reap(std::chrono::seconds(0));
  EXPECT_TRUE(r.FindSession(s->id, "").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(3200));
  r.Reap(std::chrono::seconds(0));
  EXPECT_FALSE(r.FindSession(s->id, "").ok());
  EXPECT_FALSE(r.FindQuery(q, "").ok());
  EXPECT_FALSE(r.FindPrepared(p, "").ok());
  EXPECT_EQ(r.FindQuery(cancelled, "").status().code(), StatusCode::kNotFound) << "reaped when idle";
}

// A DoGet registers its run before it looks up its ticket and opens its connection: a cancel
// arriving in between is kept and reported when the connection is attached, never lost (the
// statement would otherwise run to the end after the client was told it was cancelled).
TEST(RegistryTest, ACancelBeforeTheRunExecutesIsReportedWhenItAttaches) {
  Registry r(RegistryLimits{});
  std::string q = r.AddQuery(PendingQuery{"", "SELECT 1", ""});
  {
    std::unique_ptr<Registry::Run> run = r.StartRun(q, "");
    ASSERT_TRUE(r.FindQuery(q, "").ok());
    EXPECT_EQ(r.Cancel(q, "someone else"), CancelOutcome::kNotCancellable);
    EXPECT_EQ(r.Cancel(q, ""), CancelOutcome::kCancelled);
    EXPECT_EQ(run->Attach(nullptr), Registry::Run::Stop::kCancelled);
    EXPECT_EQ(run->stop(), Registry::Run::Stop::kCancelled);
  }
  // The ticket is dead too: a retried DoGet does not run it again.
  EXPECT_EQ(r.FindQuery(q, "").status().code(), StatusCode::kCancelled);
  // A run that attached and is then cancelled records it (the statement checks the record
  // after DuckDB starts executing, which clears the connection's interrupt).
  std::string p = r.AddQuery(PendingQuery{"", "SELECT 2", ""});
  std::unique_ptr<Registry::Run> again = r.StartRun(p, "");
  EXPECT_EQ(again->Attach(nullptr), Registry::Run::Stop::kNone);
  EXPECT_EQ(r.Cancel(p, ""), CancelOutcome::kCancelled);
  EXPECT_EQ(again->stop(), Registry::Run::Stop::kCancelled);
  // A timeout interrupts a run that has not attached yet just the same.
  std::unique_ptr<Registry::Run> slow = r.StartRun("prepared-handle", "");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  r.Reap(std::chrono::seconds(1));
  EXPECT_EQ(slow->Attach(nullptr), Registry::Run::Stop::kTimedOut);
}

}  // namespace
}  // namespace skade::flightsql
