// registry/alias_listener.h — hears alias moves announced by the database.
//
// The trigger on `aliases` (0001_schema.sql) runs
// pg_notify('tcl_alias_changed', '{"alias": name, "version": n}') on every
// insert or update, delivered when the moving transaction commits. An
// AliasListener holds one dedicated connection (not from a PgPool: LISTEN is
// per session) that LISTENs on that channel, and calls
//
//   on_change(change)  for each notification, in commit order;
//   on_resync()        each time LISTEN has been (re)established — on the
//                      first connection and after every reconnect. Moves made
//                      while no connection listened were not seen, so the
//                      owner must reload every alias (ModelStore::list_aliases).
//                      Also called for a payload that does not parse.
//
// Callbacks run on the thread calling wait(), inside it. An exception from a
// callback propagates out of wait(); notifications not yet delivered are kept
// for the next wait().
//
// When the server restarts or the connection drops, wait() notices, drops the
// connection and reconnects (every reconnect_interval until it succeeds);
// TCP keepalives make a silently dead peer show up within about a minute.
//
// Typical use (a replica's reload thread):
//   AliasListener listener({.url = url}, on_change, reload_all);
//   while (!stopping) listener.wait(std::chrono::seconds(1));
//
// Not thread-safe: one thread owns the listener.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tcl::registry {

// The NOTIFY channel of alias moves (0001_schema.sql).
inline constexpr std::string_view kAliasChannel = "tcl_alias_changed";

struct AliasChange {
  std::string alias;
  std::int64_t version = 0;  // the version it points at now
};

struct AliasListenerOptions {
  // libpq URL or key=value string (as PgPoolOptions::url).
  std::string url;
  // Pause between connection attempts while the server is unreachable.
  std::chrono::milliseconds reconnect_interval{1000};
};

class AliasListener {
 public:
  using OnChange = std::function<void(const AliasChange&)>;
  using OnResync = std::function<void()>;

  // Does not connect yet: the first wait() does. `on_resync` may be empty.
  AliasListener(AliasListenerOptions options, OnChange on_change, OnResync on_resync = {});
  ~AliasListener();
  AliasListener(const AliasListener&) = delete;
  AliasListener& operator=(const AliasListener&) = delete;

  // Waits until at least one notification was delivered or `timeout` passed
  // (0: only deliver what is already there), (re)connecting as needed.
  // OK: the number of changes delivered (0 on timeout). kUnavailable: no
  // connection at the end of the wait (the server is unreachable; the next
  // wait() tries again). Never returns before `timeout` without a delivery,
  // so a loop around it does not spin while the database is down.
  Result<int> wait(std::chrono::milliseconds timeout);

  // True while a connection is LISTENing.
  bool connected() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tcl::registry
