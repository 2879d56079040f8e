// Sessions and statement handles of the Flight SQL server: sealed capabilities of their
// principal that any instance sharing the key serves, per-principal limits on what an instance
// caches, expiry, and closes and cancels that stick where they were made.
#include "skade/flightsql/registry_internal.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "skade/arrow/builder.h"
#include "tests/flightsql/param_sets.h"

namespace skade::flightsql {
namespace {

using testing::IntParams;
using testing::OneIntParam;

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
  EXPECT_TRUE(io::Sealer::LooksSealed(a));
  EXPECT_EQ(a.find("SELECT"), std::string::npos) << "the statement travels encrypted";
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
  EXPECT_EQ(r.BindParams(p, "bob", nullptr).status().code(), StatusCode::kNotFound);
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
  a2->set_schema("sales");
  const std::string a2_cookie = r.Reseal(a2);
  ASSERT_TRUE(r.FindSession(a1->id, "alice").ok());  // a1 is now more recent than a2
  auto a3 = r.CreateSession("alice");                // forgets a2's cookies, not bob's session
  EXPECT_EQ(r.session_count(), 3u);
  EXPECT_TRUE(r.FindSession(a1->id, "alice").ok());
  EXPECT_TRUE(r.FindSession(a3->id, "alice").ok());
  EXPECT_TRUE(r.FindSession(bob->id, "bob").ok());
  EXPECT_EQ(r.FindSession(bob->id, "alice").status().code(), StatusCode::kUnauthorized);
  // A forgotten session comes back from its cookie, with the options it carries.
  auto back = r.FindSession(a2_cookie, "alice");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)->schema(), "sales");
  ASSERT_TRUE(r.CloseSession(a1).ok());
  EXPECT_EQ(r.FindSession(a1->id, "alice").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.FindSession("not-a-cookie", "alice").status().code(), StatusCode::kNotFound);
}

// The limits bound what one instance caches per principal; a handle it forgot is adopted again
// from the token when its client uses it.
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
  for (int i = 0; i < 5; ++i) {
    auto q = r.FindQuery(alice[i], "alice");
    ASSERT_TRUE(q.ok()) << i;
    EXPECT_EQ(q->sql, "SELECT " + std::to_string(i));
  }
  EXPECT_TRUE(r.FindQuery(bobs, "bob").ok());
  r.set_reprepare([](const PreparedStatement& sealed) -> Result<std::shared_ptr<const PreparedStatement>> {
    auto p = std::make_shared<PreparedStatement>(sealed);
    p->parameter_count = 7;  // marks a re-created statement
    return std::shared_ptr<const PreparedStatement>(p);
  });

  std::string p1 = r.AddPrepared(Prepared("alice", "SELECT 1"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::string p2 = r.AddPrepared(Prepared("alice", "SELECT 2"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(r.FindPrepared(p1, "alice").ok());  // p1 used last
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::string p3 = r.AddPrepared(Prepared("alice", "SELECT 3"));
  EXPECT_EQ((*r.FindPrepared(p1, "alice"))->parameter_count, 0);
  EXPECT_EQ((*r.FindPrepared(p3, "alice"))->parameter_count, 0);
  auto again = r.FindPrepared(p2, "alice");  // forgotten, re-created from its handle
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->sql, "SELECT 2");
  EXPECT_EQ((*again)->parameter_count, 7);
}

TEST(RegistryTest, IdleEntriesAreReapedAndCancelStopsAPendingTicket) {
  RegistryLimits limits;
  // Long enough that the first Reap below never comes after it on a loaded machine.
  limits.idle_lifetime = std::chrono::seconds(3);
  limits.prepared_lifetime = std::chrono::seconds(3);
  Registry r(limits);
  auto s = r.CreateSession("");
  std::string q = r.AddQuery(PendingQuery{"", "SELECT 1", ""});
  std::string p = r.AddPrepared(Prepared("", "SELECT 2"));
  std::string cancelled = r.AddQuery(PendingQuery{"", "SELECT 3", ""});
  EXPECT_EQ(r.Cancel(cancelled, "someone else").value(), CancelOutcome::kNotCancellable);
  EXPECT_EQ(r.Cancel(cancelled, "").value(), CancelOutcome::kCancelled);
  EXPECT_EQ(r.FindQuery(cancelled, "").status().code(), StatusCode::kCancelled);
  EXPECT_EQ(r.Cancel(cancelled, "").value(), CancelOutcome::kCancelled) << "cancelling twice is no error";
  EXPECT_EQ(r.FindQuery(cancelled, "someone else").status().code(), StatusCode::kNotFound);
  std::string fetched = r.AddQuery(PendingQuery{"", "SELECT 4", ""});
  r.MarkFetched(fetched);
  EXPECT_EQ(r.Cancel(fetched, "").value(), CancelOutcome::kNotCancellable);  // finished
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

// Two instances sharing a key: whatever one issues, the other serves; a third with another key
// serves nothing; another principal learns nothing.
TEST(RegistryTest, AnyInstanceSharingTheKeyServesTheHandlesOfAnother) {
  auto key = io::Sealer::FromText(std::string(64, '7'));
  ASSERT_TRUE(key.ok());
  RegistryLimits limits;
  limits.sealer = *key;
  Registry one(limits);
  Registry two(limits);
  Registry stranger(RegistryLimits{});
  int reprepared = 0;
  auto reprepare = [&](const PreparedStatement& sealed) -> Result<std::shared_ptr<const PreparedStatement>> {
    ++reprepared;
    auto p = std::make_shared<PreparedStatement>(sealed);
    p->parameter_count = 1;
    return std::shared_ptr<const PreparedStatement>(p);
  };
  two.set_reprepare(reprepare);
  stranger.set_reprepare(reprepare);

  PendingQuery write{"alice", "INSERT INTO t VALUES (1)", "sales"};
  write.changed_rows = 1;
  std::string ticket = one.AddQuery(write);
  auto q = two.FindQuery(ticket, "alice");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->sql, write.sql);
  EXPECT_EQ(q->schema, "sales");
  ASSERT_TRUE(q->changed_rows.has_value()) << "a write's count travels: the other instance runs nothing";
  EXPECT_EQ(*q->changed_rows, 1);
  EXPECT_EQ(two.FindQuery(ticket, "bob").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(stranger.FindQuery(ticket, "alice").status().code(), StatusCode::kNotFound);
  // A cancel on the second instance sticks there.
  std::string pending = one.AddQuery(PendingQuery{"alice", "SELECT 1", ""});
  EXPECT_EQ(two.Cancel(pending, "alice").value(), CancelOutcome::kCancelled);
  EXPECT_EQ(two.FindQuery(pending, "alice").status().code(), StatusCode::kCancelled);

  auto prepared = std::make_shared<PreparedStatement>();
  prepared->principal = "alice";
  prepared->sql = "SELECT ?";
  prepared->schema = "sales";
  prepared->parameter_count = 1;
  std::string handle = one.AddPrepared(prepared);
  ASSERT_TRUE(one.FindPrepared(handle, "alice").ok());
  auto bound = one.BindParams(handle, "alice", std::make_shared<ParamSet>(OneIntParam(42)));
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  EXPECT_NE(*bound, handle) << "small parameters travel in a new handle";
  EXPECT_EQ(two.FindPrepared(*bound, "bob").status().code(), StatusCode::kNotFound);
  auto there = two.FindPrepared(*bound, "alice");
  ASSERT_TRUE(there.ok()) << there.status().ToString();
  EXPECT_EQ((*there)->sql, "SELECT ?");
  EXPECT_EQ((*there)->schema, "sales");
  EXPECT_EQ(reprepared, 1);
  std::shared_ptr<const ParamSet> params = two.Params(*bound);
  ASSERT_TRUE(params);
  ASSERT_EQ(params->rows(), 1);
  EXPECT_EQ(static_cast<const int64_t*>(params->batches[0]->children[0]->buffers[1])[0], 42);
  EXPECT_FALSE(two.Params(handle)) << "the first handle carries no parameters";
  EXPECT_EQ(stranger.FindPrepared(*bound, "alice").status().code(), StatusCode::kNotFound);
  // Closed on the second instance: refused there from now on.
  EXPECT_TRUE(two.ClosePrepared(handle, "alice").ok());
  EXPECT_EQ(two.FindPrepared(handle, "alice").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(two.ClosePrepared(handle, "alice").code(), StatusCode::kNotFound);
  EXPECT_EQ(two.ClosePrepared(*bound, "bob").code(), StatusCode::kNotFound);

  auto session = one.CreateSession("alice");
  session->set_schema("sales");
  std::string cookie = one.Reseal(session);
  auto s2 = two.FindSession(cookie, "alice");
  ASSERT_TRUE(s2.ok()) << s2.status().ToString();
  EXPECT_EQ((*s2)->schema(), "sales");
  EXPECT_EQ(two.FindSession(cookie, "bob").status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(stranger.FindSession(cookie, "alice").status().code(), StatusCode::kNotFound);
  // A cookie changed by hand is no cookie.
  std::string forged = cookie;
  forged[forged.size() / 2] = forged[forged.size() / 2] == 'A' ? 'B' : 'A';
  EXPECT_EQ(two.FindSession(forged, "alice").status().code(), StatusCode::kNotFound);
}

// Without shared state, parameters too large for a handle stay on the instance that bound them;
// the handle it answers says so, and another instance refuses it (kNotFound: bind again there)
// rather than run the statement without them.
TEST(RegistryTest, LargeParametersStayOnTheInstance) {
  RegistryLimits limits;
  limits.max_sealed_params_bytes = 64;  // less than any encoded batch
  limits.sealer = *io::Sealer::FromText(std::string(64, '5'));
  Registry r(limits);
  Registry other(limits);
  other.set_reprepare([](const PreparedStatement& sealed) -> Result<std::shared_ptr<const PreparedStatement>> {
    return std::make_shared<const PreparedStatement>(sealed);
  });
  auto prepared = std::make_shared<PreparedStatement>();
  prepared->principal = "alice";
  prepared->sql = "SELECT ?";
  std::string handle = r.AddPrepared(prepared);
  auto bound = r.BindParams(handle, "alice", std::make_shared<ParamSet>(OneIntParam(5)));
  ASSERT_TRUE(bound.ok());
  EXPECT_NE(*bound, handle);
  ASSERT_TRUE(r.FindPrepared(*bound, "alice").ok());
  ASSERT_TRUE(r.Params(*bound));
  EXPECT_EQ(r.Params(*bound)->rows(), 1);
  ASSERT_TRUE(r.Params(handle)) << "the handle bound stays bound here";
  EXPECT_TRUE(other.FindPrepared(handle, "alice").ok());
  EXPECT_EQ(other.FindPrepared(*bound, "alice").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(other.ClosePrepared(*bound, "alice").ok()) << "it can still be closed there";
}

// Without shared state (a read-only server), parameters kept on the instance are bounded as the
// shared state bounds them: one binding, and a user's kept bindings in all (each counted once;
// a rebinding replaces what its statement had, a close frees it; other users have their own).
TEST(RegistryTest, ParametersKeptOnTheInstanceAreBoundedPerUser) {
  RegistryLimits limits;
  limits.max_sealed_params_bytes = 64;  // less than any encoded batch: every binding is kept here
  limits.sealer = *io::Sealer::FromText(std::string(64, '6'));
  const size_t one = EncodeParams(OneIntParam(5), size_t{1} << 20).size();
  ASSERT_GT(one, 64u);
  limits.max_shared_params_bytes = one + 8;                  // one row fits, not a hundred
  limits.max_shared_params_bytes_per_principal = 2 * one + 8;  // two bindings a user
  Registry r(limits);
  auto prepare = [&](const std::string& user) {
    auto p = std::make_shared<PreparedStatement>();
    p->principal = user;
    p->sql = "SELECT ?";
    return r.AddPrepared(p);
  };
  auto bind = [&](const std::string& handle, const std::string& user) {
    return r.BindParams(handle, user, std::make_shared<ParamSet>(OneIntParam(5)));
  };
  const std::string a1 = prepare("alice"), a2 = prepare("alice"), a3 = prepare("alice"), b1 = prepare("bob");
  ASSERT_TRUE(bind(a1, "alice").ok());
  ASSERT_TRUE(bind(a2, "alice").ok());
  EXPECT_EQ(bind(a3, "alice").status().code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(r.Params(a3)) << "a refused binding binds nothing";
  EXPECT_TRUE(bind(b1, "bob").ok()) << "another user's bound is their own";
  // Rebinding a statement replaces its parameters: they are not counted twice.
  auto rebound = bind(a1, "alice");
  ASSERT_TRUE(rebound.ok()) << rebound.status().ToString();
  EXPECT_EQ(bind(a3, "alice").status().code(), StatusCode::kResourceExhausted);
  // Closing a statement frees its share (every handle of it).
  ASSERT_TRUE(r.ClosePrepared(*rebound, "alice").ok());
  EXPECT_TRUE(bind(a3, "alice").ok());
  // One binding past the bound is refused.
  std::vector<int64_t> many(100);
  auto big = r.BindParams(b1, "bob", std::make_shared<ParamSet>(IntParams(many)));
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(r.Params(b1)) << "the refused binding left the one before";
  EXPECT_EQ(r.Params(b1)->rows(), 1);
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
    EXPECT_EQ(r.Cancel(q, "someone else").value(), CancelOutcome::kNotCancellable);
    EXPECT_EQ(r.Cancel(q, "").value(), CancelOutcome::kCancelled);
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
  EXPECT_EQ(r.Cancel(p, "").value(), CancelOutcome::kCancelled);
  EXPECT_EQ(again->stop(), Registry::Run::Stop::kCancelled);
  // A timeout interrupts a run that has not attached yet just the same.
  std::unique_ptr<Registry::Run> slow = r.StartRun("prepared-handle", "");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  r.Reap(std::chrono::seconds(1));
  EXPECT_EQ(slow->Attach(nullptr), Registry::Run::Stop::kTimedOut);
}

}  // namespace
}  // namespace skade::flightsql
