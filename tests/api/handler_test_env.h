// tests/api/handler_test_env.h — for unit tests of the handle_* functions
// (api/handlers/*.h): a Request as the server hands one to a handler (the
// Beast message it reads, the matched route's path parameters, the caller),
// the answer's JSON body, and a migrated database with platform "x16"
// (tests/lib/pg_cluster.h: a real PostgreSQL, as the registry tests use).
#pragma once

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "api/http_types.h"
#include "registry/platform_store.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::api::testing {

// A request for a handler: the Beast message it reads from and the Request
// view of it. Neither copied nor moved (the view points at the message).
class HandlerRequest {
 public:
  explicit HandlerRequest(std::string body = {}, std::map<std::string, std::string> path_params = {})
      : raw_(http::verb::get, "/", 11), request_{raw_,     "/",          {},      std::move(path_params),
                                                 "(test)", std::nullopt, nullptr, "test",
                                                 nullptr} {
    raw_.body() = std::move(body);
    raw_.prepare_payload();
  }
  HandlerRequest(const HandlerRequest&) = delete;
  HandlerRequest& operator=(const HandlerRequest&) = delete;

  HandlerRequest& header(std::string_view name, std::string_view value) {
    raw_.set(name, value);
    return *this;
  }
  HandlerRequest& principal(std::string name) {
    registry::TokenInfo who;
    who.name = std::move(name);
    request_.principal = std::move(who);
    return *this;
  }
  Request& get() { return request_; }
  operator const Request&() const { return request_; }

 private:
  BeastRequest raw_;
  Request request_;
};

// The answer's body as a JSON object (an empty object when it is not one).
inline boost::json::object body_json(const Response& res) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(res.body, ec);
  return !ec && v.is_object() ? v.as_object() : boost::json::object{};
}

// The error code of a tcld error answer ({"error": {"code", ...}}), or "".
inline std::string error_code(const Response& res) {
  const boost::json::object o = body_json(res);
  const auto* e = o.if_contains("error");
  if (e == nullptr || !e->is_object() || !e->as_object().contains("code")) return "";
  return std::string(e->as_object().at("code").as_string());
}

inline constexpr const char* kX16Target = "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu";

// A migrated database holding platform "x16" (kX16Target, {16, 64, 64, 0, 0,
// 0, 0, 0}).
class HandlerDbTest : public registry::testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    platforms_ = std::make_unique<registry::PlatformStore>(*pool_);
    registry::NewPlatform p;
    p.name = "x16";
    p.target = kX16Target;
    p.hardware_params = {16, 64, 64, 0, 0, 0, 0, 0};
    auto created = platforms_->create(p);
    ASSERT_TRUE(created) << created.status().to_string();
    x16_ = *created;
  }

  std::unique_ptr<registry::PlatformStore> platforms_;
  registry::PlatformRow x16_;
};

}  // namespace tcl::api::testing
