#include "registry/sample_store.h"

#include <pqxx/transaction>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "registry/pg_pool_internal.h"

namespace tcl::registry {
namespace {

#define TCL_ISO_UTC(col) "coalesce(to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '')"

constexpr const char* kRequestSql =
    "SELECT s.id, p.name, s.platform_id, s.strategy, s.params::text, s.model_version, s.status, "
    TCL_ISO_UTC("s.created_at") ", " TCL_ISO_UTC("s.completed_at") ", "
    "(SELECT count(*) FROM sample_request_items i WHERE i.sample_request_id = s.id), "
    "(SELECT count(*) FROM sample_request_items i WHERE i.sample_request_id = s.id AND i.measured) "
    "FROM sample_requests s JOIN platforms p ON p.id = s.platform_id WHERE s.id = $1";

// Marks the items whose program now has a measurement on the request's
// platform, then completes the request when every item is measured.
constexpr const char* kRefreshItemsSql = R"sql(
UPDATE sample_request_items i SET measured = true
FROM sample_requests s
WHERE s.id = $1 AND i.sample_request_id = s.id AND NOT i.measured
  AND EXISTS (SELECT 1 FROM measurements m WHERE m.platform_id = s.platform_id AND m.program_id = i.program_id)
)sql";
constexpr const char* kCompleteSql = R"sql(
UPDATE sample_requests s SET status = 'completed', completed_at = now()
WHERE s.id = $1 AND s.status = 'open'
  AND NOT EXISTS (SELECT 1 FROM sample_request_items i WHERE i.sample_request_id = s.id AND NOT i.measured)
)sql";

// The round pool's size per task (pool_task_sizes): as read_round_pool in
// api/handlers/sample_requests.cc filters it, counted instead of read.
constexpr const char* kPoolTaskSizesSql = R"sql(
SELECT count(*)
FROM candidates c JOIN programs p ON p.id = c.program_id
WHERE c.platform_id = $1
  AND NOT EXISTS (SELECT FROM measurements m WHERE m.platform_id = $1 AND m.program_id = c.program_id)
  AND NOT EXISTS (SELECT FROM sample_requests s JOIN sample_request_items i ON i.sample_request_id = s.id
                  WHERE s.platform_id = $1 AND s.status = 'open' AND NOT i.measured AND i.program_id = c.program_id)
GROUP BY p.task_id
)sql";

// Pool and measurement counts come from the uploads' reports (rows each
// upload inserted; uploads are all-or-nothing), so no scrape counts rows of
// the bulk tables. Items to measure use the flag refresh() maintains.
constexpr const char* kOnboardingSql = R"sql(
SELECT p.name, coalesce(u.candidates, 0), coalesce(u.measurements, 0), coalesce(r.requests, 0),
       coalesce(t.to_measure, 0)
FROM platforms p
LEFT JOIN (SELECT platform_id,
                  sum(inserted) FILTER (WHERE kind = 'candidates') AS candidates,
                  sum(inserted) FILTER (WHERE kind = 'measurements') AS measurements
           FROM (SELECT platform_id, kind,
                        CASE WHEN jsonb_typeof(report -> 'accepted') = 'number'
                             THEN (report ->> 'accepted')::numeric::bigint END AS inserted
                 FROM uploads) x
           GROUP BY platform_id) u ON u.platform_id = p.id
LEFT JOIN (SELECT platform_id, count(*) AS requests FROM sample_requests
           WHERE status <> 'cancelled' GROUP BY platform_id) r ON r.platform_id = p.id
LEFT JOIN (SELECT s.platform_id, count(*) AS to_measure
           FROM sample_requests s JOIN sample_request_items i ON i.sample_request_id = s.id
           WHERE s.status = 'open' AND NOT i.measured GROUP BY s.platform_id) t ON t.platform_id = p.id
ORDER BY p.name
)sql";

std::string request_name(std::int64_t id) { return "sample request " + std::to_string(id); }

Result<SampleRequest> read_request(pqxx::work& tx, std::int64_t id) {
  const pqxx::result r = tx.exec_params(kRequestSql, id);
  if (r.empty()) return Status::not_found(request_name(id) + " does not exist");
  const pqxx::row row = r[0];
  SampleRequest s;
  s.id = row[0].as<std::int64_t>();
  s.platform = row[1].as<std::string>();
  s.platform_id = row[2].as<std::int64_t>();
  s.strategy = row[3].as<std::string>();
  s.params_json = row[4].as<std::string>();
  if (!row[5].is_null()) s.model_version = row[5].as<std::int64_t>();
  s.status = row[6].as<std::string>();
  s.created_at = row[7].as<std::string>();
  s.completed_at = row[8].as<std::string>();
  s.items = row[9].as<std::int64_t>();
  s.measured = row[10].as<std::int64_t>();
  return s;
}

void refresh(pqxx::work& tx, std::int64_t id) {
  tx.exec_params0(kRefreshItemsSql, id);
  tx.exec_params0(kCompleteSql, id);
}

// A PostgreSQL array literal of doubles; NaN becomes NULL.
std::string float_array(const std::vector<SampleItem>& items, double SampleItem::*field) {
  std::string out = "{";
  char buf[40];
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    const double v = items[i].*field;
    if (!std::isfinite(v)) {
      out += "NULL";
    } else {
      std::snprintf(buf, sizeof buf, "%.17g", v);
      out += buf;
    }
  }
  return out + "}";
}

}  // namespace

Result<SampleRequest> SampleStore::create(const NewSampleRequest& request) {
  if (request.items.empty()) return Status::invalid_argument("a sample request needs at least one item");
  std::string programs = "{";
  for (std::size_t i = 0; i < request.items.size(); ++i) {
    const std::string& id = request.items[i].program_id;
    if (id.empty() || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return Status::invalid_argument("item " + std::to_string(i) + ": program id '" + id + "' is not hex");
    }
    if (i > 0) programs.push_back(',');
    programs += id;
  }
  programs.push_back('}');
  const std::string rs = float_array(request.items, &SampleItem::r), ds = float_array(request.items, &SampleItem::d),
                    us = float_array(request.items, &SampleItem::u),
                    scores = float_array(request.items, &SampleItem::score);
  return internal::with_transaction(pool_, "storing a sample request", [&](pqxx::work& tx) -> Result<SampleRequest> {
    try {
      const std::int64_t id =
          tx.exec_params1(
                "INSERT INTO sample_requests (platform_id, strategy, params, model_version) "
                "VALUES ($1, $2, coalesce(nullif($3, ''), '{}')::jsonb, nullif($4, '')::bigint) RETURNING id",
                request.platform_id, request.strategy, request.params_json,
                request.model_version ? std::to_string(*request.model_version) : std::string())[0]
              .as<std::int64_t>();
      tx.exec_params0(R"sql(
INSERT INTO sample_request_items (sample_request_id, rank, program_id, score_r, score_d, score_u, score)
SELECT $1, u.ord - 1, u.program_id, u.r, u.d, u.u, u.score
FROM unnest($2::text[], $3::float8[], $4::float8[], $5::float8[], $6::float8[])
     WITH ORDINALITY AS u(program_id, r, d, u, score, ord)
)sql",
                      id, programs, rs, ds, us, scores);
      return read_request(tx, id);
    } catch (const pqxx::foreign_key_violation&) {
      return Status::not_found("platform id " + std::to_string(request.platform_id) +
                               " or model version does not exist");
    } catch (const pqxx::check_violation&) {
      return Status::invalid_argument("sample request: strategy '" + request.strategy + "' or params are not valid");
    } catch (const pqxx::unique_violation&) {
      return Status::invalid_argument("sample request: a program appears twice among the items");
    }
  });
}

Result<SampleRequest> SampleStore::get(std::int64_t id) {
  return internal::with_transaction(pool_, "reading " + request_name(id), [&](pqxx::work& tx) -> Result<SampleRequest> {
    refresh(tx, id);
    return read_request(tx, id);
  });
}

Result<std::vector<SampleRequest>> SampleStore::list(std::int64_t platform_id, int limit) {
  limit = std::clamp(limit, 1, 1000);
  return internal::with_transaction(
      pool_, "listing sample requests", [&](pqxx::work& tx) -> Result<std::vector<SampleRequest>> {
        std::vector<std::int64_t> ids;
        for (const pqxx::row& row :
             tx.exec_params("SELECT id, status FROM sample_requests WHERE platform_id = $1 ORDER BY id DESC LIMIT $2",
                            platform_id, limit)) {
          ids.push_back(row[0].as<std::int64_t>());
          if (row[1].as<std::string>() == "open") refresh(tx, ids.back());
        }
        std::vector<SampleRequest> out;
        out.reserve(ids.size());
        for (std::int64_t id : ids) {
          auto s = read_request(tx, id);
          if (!s) return s.status();
          out.push_back(std::move(*s));
        }
        return out;
      });
}

Result<std::vector<SampleItem>> SampleStore::items(std::int64_t id) {
  return internal::with_transaction(
      pool_, "reading the items of " + request_name(id), [&](pqxx::work& tx) -> Result<std::vector<SampleItem>> {
        if (tx.exec_params("SELECT 1 FROM sample_requests WHERE id = $1", id).empty()) {
          return Status::not_found(request_name(id) + " does not exist");
        }
        std::vector<SampleItem> out;
        for (const pqxx::row& row :
             tx.exec_params("SELECT rank, program_id, coalesce(score_r, 'NaN'), coalesce(score_d, 'NaN'), "
                            "coalesce(score_u, 'NaN'), coalesce(score, 'NaN'), measured "
                            "FROM sample_request_items WHERE sample_request_id = $1 ORDER BY rank",
                            id)) {
          SampleItem it;
          it.rank = row[0].as<std::int32_t>();
          it.program_id = row[1].as<std::string>();
          it.r = row[2].as<double>();
          it.d = row[3].as<double>();
          it.u = row[4].as<double>();
          it.score = row[5].as<double>();
          it.measured = row[6].as<bool>();
          out.push_back(std::move(it));
        }
        return out;
      });
}

Status SampleStore::for_each_record_to_measure(std::int64_t id, const std::function<void(const std::string&)>& sink) {
  return internal::with_transaction(pool_, "reading the records of " + request_name(id), [&](pqxx::work& tx) -> Status {
    refresh(tx, id);
    const pqxx::result s = tx.exec_params("SELECT platform_id FROM sample_requests WHERE id = $1", id);
    if (s.empty()) return Status::not_found(request_name(id) + " does not exist");
    for (const pqxx::row& row :
         tx.exec_params("SELECT c.record FROM sample_request_items i "
                        "JOIN candidates c ON c.platform_id = $2 AND c.program_id = i.program_id "
                        "WHERE i.sample_request_id = $1 AND NOT i.measured ORDER BY i.rank",
                        id, s[0][0].as<std::int64_t>())) {
      sink(row[0].as<std::string>());
    }
    return Status::ok();
  });
}

Result<SampleRequest> SampleStore::cancel(std::int64_t id) {
  return internal::with_transaction(
      pool_, "cancelling " + request_name(id), [&](pqxx::work& tx) -> Result<SampleRequest> {
        refresh(tx, id);
        // Only an open request changes (guarded, so a concurrent refresh or cancel
        // wins cleanly); a cancelled one is returned as it is, as a job is.
        tx.exec_params0(
            "UPDATE sample_requests SET status = 'cancelled', completed_at = now() WHERE id = $1 AND status = 'open'",
            id);
        auto now = read_request(tx, id);
        if (now && now->status != "cancelled") {
          return Status::failed_precondition(request_name(id) + " is " + now->status + ", not open");
        }
        return now;
      });
}

Result<std::unordered_set<std::string>> SampleStore::pending_programs(std::int64_t platform_id) {
  return internal::with_transaction(
      pool_, "reading pending sample items", [&](pqxx::work& tx) -> Result<std::unordered_set<std::string>> {
        std::unordered_set<std::string> out;
        for (const pqxx::row& row : tx.exec_params(
                 "SELECT i.program_id FROM sample_requests s JOIN sample_request_items i ON i.sample_request_id = s.id "
                 "WHERE s.platform_id = $1 AND s.status = 'open' AND NOT i.measured",
                 platform_id)) {
          out.insert(row[0].as<std::string>());
        }
        return out;
      });
}

Result<std::vector<std::int64_t>> SampleStore::pool_task_sizes(std::int64_t platform_id) {
  return internal::with_transaction(pool_, "sizing the round pool",
                                    [&](pqxx::work& tx) -> Result<std::vector<std::int64_t>> {
                                      std::vector<std::int64_t> out;
                                      for (const pqxx::row& row : tx.exec_params(kPoolTaskSizesSql, platform_id)) {
                                        out.push_back(row[0].as<std::int64_t>());
                                      }
                                      return out;
                                    });
}

Result<std::vector<OnboardingCounts>> SampleStore::onboarding_counts() {
  return internal::with_transaction(
      pool_, "counting onboarding progress", [&](pqxx::work& tx) -> Result<std::vector<OnboardingCounts>> {
        std::vector<OnboardingCounts> out;
        for (const pqxx::row& row : tx.exec(kOnboardingSql)) {
          out.push_back({row[0].as<std::string>(), row[1].as<std::int64_t>(), row[2].as<std::int64_t>(),
                         row[3].as<std::int64_t>(), row[4].as<std::int64_t>()});
        }
        return out;
      });
}

}  // namespace tcl::registry
