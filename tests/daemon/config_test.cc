#include "daemon/config.h"

#include <gtest/gtest.h>

namespace tcl::daemon {
namespace {

Result<Config> parse(std::vector<const char*> argv, std::vector<std::string> env = {}) {
  argv.insert(argv.begin(), "tcld");
  return parse_config(static_cast<int>(argv.size()), argv.data(), env, nullptr);
}

TEST(ConfigTest, DefaultsServeOnLoopback) {
  auto c = parse({"serve"});
  ASSERT_TRUE(c) << c.status().to_string();
  EXPECT_EQ(c->command, "serve");
  EXPECT_EQ(c->host(), "127.0.0.1");
  EXPECT_EQ(c->port(), 8080);
  EXPECT_TRUE(c->tls_cert.empty());
}

TEST(ConfigTest, EnvironmentIsReadAndFlagsWin) {
  auto c = parse({"serve", "--listen", "127.0.0.1:9000"},
                 {"TCLD_DATABASE_URL=postgresql://db/x", "TCLD_LISTEN=0.0.0.0:1", "TCLD_WORKER_THREADS=7",
                  "TCLD_DB_POOL_SIZE=24", "TCLD_READ_TIMEOUT_MS=1500", "PATH=/bin", "TCLD_NOT_AN_OPTION=1"});
  ASSERT_TRUE(c) << c.status().to_string();
  EXPECT_EQ(c->database_url, "postgresql://db/x");
  EXPECT_EQ(c->listen, "127.0.0.1:9000");
  EXPECT_EQ(c->worker_threads, 7);
  EXPECT_EQ(c->read_timeout.count(), 1500);
}

TEST(ConfigTest, SlowClientLimitsHaveEnvironmentTwins) {
  auto c = parse({"serve", "--min-response-rate", "1000"},
                 {"TCLD_MAX_STREAMS=3", "TCLD_MIN_REQUEST_BODY_RATE=512", "TCLD_MIN_RATE_GRACE_MS=2500"});
  ASSERT_TRUE(c) << c.status().to_string();
  EXPECT_EQ(c->max_streams, 3);
  EXPECT_EQ(c->min_request_body_rate, 512u);
  EXPECT_EQ(c->min_response_rate, 1000u);
  EXPECT_EQ(c->min_rate_grace.count(), 2500);
}

// A stream waiting on a slow client holds a database connection: the pool
// must leave room for every other thread, or slow clients starve SQL.
TEST(ConfigTest, ThePoolCoversStreamsAndHandlers) {
  EXPECT_TRUE(parse({"serve"}));  // the defaults fit
  auto small = parse({"serve", "--db-pool-size", "8"});
  ASSERT_FALSE(small);
  EXPECT_NE(small.status().message().find("--db-pool-size 8 is too small"), std::string::npos)
      << small.status().message();
  EXPECT_TRUE(parse({"serve", "--db-pool-size", "8", "--max-streams", "1", "--train-workers", "0"}));
  EXPECT_TRUE(parse({"worker", "--db-pool-size", "2"}));  // serves no streams
  EXPECT_FALSE(parse({"serve", "--max-streams", "0"}));
}

// Issue 45: the sample-request cap leaves worker threads to other routes;
// /metrics' database gauges refresh on a timer; names on /metrics are opt-in.
TEST(ConfigTest, AbuseLimitsAndMetricsOptions) {
  auto c = parse({"serve"}, {"TCLD_METRICS_NAMES=true", "TCLD_MAX_SAMPLE_REQUESTS=2"});
  ASSERT_TRUE(c) << c.status().to_string();
  EXPECT_TRUE(c->metrics_names);
  EXPECT_EQ(c->max_sample_requests, 2);
  EXPECT_EQ(c->metrics_refresh.count(), 5000);
  auto d = parse({"serve", "--metrics-names", "--metrics-refresh-ms", "250"});
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_TRUE(d->metrics_names);
  EXPECT_EQ(d->metrics_refresh.count(), 250);
  EXPECT_FALSE(parse({"serve"})->metrics_names);
  EXPECT_FALSE(parse({"serve", "--max-sample-requests", "4"}));  // as many as --worker-threads
  EXPECT_FALSE(parse({"serve", "--max-sample-requests", "0"}));
  EXPECT_FALSE(parse({"serve", "--metrics-refresh-ms", "0"}));
}

TEST(ConfigTest, TokenSubcommandArguments) {
  auto c = parse({"token", "create", "--name", "ci", "--scope", "admin"});
  ASSERT_TRUE(c) << c.status().to_string();
  EXPECT_EQ(c->command, "token");
  ASSERT_EQ(c->args.size(), 1u);
  EXPECT_EQ(c->args[0], "create");
  EXPECT_EQ(c->token_name, "ci");
  EXPECT_EQ(c->token_scope, "admin");
}

TEST(ConfigTest, BadInputNamesTheProblem) {
  EXPECT_NE(parse({}).status().message().find("no command"), std::string::npos);
  EXPECT_NE(parse({"fly"}).status().message().find("unknown command 'fly'"), std::string::npos);
  EXPECT_NE(parse({"serve", "--listen", "nocolon"}).status().message().find("--listen"), std::string::npos);
  EXPECT_NE(parse({"serve", "--listen", "h:99999"}).status().message().find("port"), std::string::npos);
  EXPECT_NE(parse({"serve", "--tls-cert", "a.pem"}).status().message().find("--tls-key"), std::string::npos);
  EXPECT_NE(parse({"serve", "--io-threads", "0"}).status().message().find("--io-threads"), std::string::npos);
  EXPECT_NE(parse({"serve", "--worker-threads", "many"}).status().message().find("worker-threads"), std::string::npos);
  EXPECT_NE(parse({"serve", "--log-level", "loud"}).status().message().find("--log-level"), std::string::npos);
  EXPECT_FALSE(parse({"serve"}, {"TCLD_IO_THREADS=abc"}));
}

TEST(ConfigTest, UploadInflationLimitsHaveFlagsAndEnvironmentTwins) {
  auto d = parse({"serve"});
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->max_upload_inflated_bytes, std::uint64_t{4} << 30);
  EXPECT_EQ(d->max_upload_inflation_ratio, 200.0);
  auto c = parse({"serve", "--max-upload-inflated-bytes", "1000"},
                 {"TCLD_MAX_UPLOAD_INFLATED_BYTES=9", "TCLD_MAX_UPLOAD_INFLATION_RATIO=50"});
  ASSERT_TRUE(c) << c.status().to_string();
  EXPECT_EQ(c->max_upload_inflated_bytes, 1000u);  // the flag wins
  EXPECT_EQ(c->max_upload_inflation_ratio, 50.0);
  EXPECT_NE(
      parse({"serve", "--max-upload-inflation-ratio", "0.5"}).status().message().find("--max-upload-inflation-ratio"),
      std::string::npos);
  EXPECT_NE(parse({"serve", "--max-upload-inflated-bytes", "0"}).status().message().find("--max-upload-inflated-bytes"),
            std::string::npos);
  EXPECT_FALSE(parse({"serve"}, {"TCLD_MAX_UPLOAD_INFLATION_RATIO=lots"}));
}

TEST(ConfigTest, HelpFillsUsage) {
  std::vector<const char*> argv = {"tcld", "--help"};
  std::string help;
  auto c = parse_config(2, argv.data(), {}, &help);
  EXPECT_NE(help.find("--database-url"), std::string::npos);
  EXPECT_NE(help.find("token create"), std::string::npos);
}

}  // namespace
}  // namespace tcl::daemon
