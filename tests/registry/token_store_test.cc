#include "registry/token_store.h"

#include <gtest/gtest.h>

#include <regex>

#include "core/sha256.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

using tcl::testing::PgCluster;
using testing::exec_sql;
using testing::query_text;

class TokenStoreTest : public testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    store_ = std::make_unique<TokenStore>(*pool_);
  }
  std::unique_ptr<TokenStore> store_;
};

TEST(Scope, NamesRoundTrip) {
  for (Scope s : {Scope::kRead, Scope::kWrite, Scope::kAdmin}) {
    EXPECT_EQ(parse_scope(scope_name(s)), s);
  }
  EXPECT_EQ(scope_name(Scope::kWrite), "write");
  EXPECT_FALSE(parse_scope("root").has_value());
  EXPECT_FALSE(parse_scope("").has_value());
  EXPECT_LT(Scope::kRead, Scope::kAdmin);
}

TEST_F(TokenStoreTest, CreateLookupRevoke) {
  auto created = store_->create("ci-uploader", Scope::kWrite);
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  EXPECT_TRUE(std::regex_match(created->plaintext, std::regex("tcl_[0-9a-f]{64}"))) << created->plaintext;
  EXPECT_GT(created->info.id, 0);
  EXPECT_EQ(created->info.name, "ci-uploader");
  EXPECT_EQ(created->info.scope, Scope::kWrite);

  auto found = store_->lookup(created->plaintext);
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  EXPECT_EQ(found->id, created->info.id);
  EXPECT_EQ(found->name, "ci-uploader");
  EXPECT_EQ(found->scope, Scope::kWrite);

  ASSERT_TRUE(store_->revoke("ci-uploader").is_ok());
  auto revoked = store_->lookup(created->plaintext);
  ASSERT_FALSE(revoked.is_ok());
  EXPECT_EQ(revoked.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(store_->revoke("ci-uploader").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->revoke("never-existed").code(), StatusCode::kNotFound);
}

TEST_F(TokenStoreTest, WrongTokensAreUnauthenticated) {
  auto created = store_->create("reader", Scope::kRead);
  ASSERT_TRUE(created.is_ok());
  std::string flipped = created->plaintext;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  for (const std::string& wrong :
       {flipped, std::string("tcl_") + std::string(64, '0'), std::string(""), std::string("tcl_"),
        created->plaintext.substr(4), created->plaintext + "0", std::string("Bearer ") + created->plaintext}) {
    auto r = store_->lookup(wrong);
    ASSERT_FALSE(r.is_ok()) << wrong;
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated) << wrong;
    // The message never echoes the presented secret.
    if (!wrong.empty()) {
      EXPECT_EQ(r.status().message().find(wrong), std::string::npos);
    }
  }
}

TEST_F(TokenStoreTest, OnlyTheHashIsStored) {
  auto created = store_->create("admin-1", Scope::kAdmin);
  ASSERT_TRUE(created.is_ok());
  const std::string plaintext = created->plaintext;
  const std::string random_part = plaintext.substr(4);

  // Every column of every row, as text.
  const std::string dump = query_text(url_, "SELECT string_agg(row_to_json(t)::text, '\n') FROM api_tokens t");
  ASSERT_FALSE(dump.empty());
  EXPECT_EQ(dump.find(plaintext), std::string::npos) << dump;
  EXPECT_EQ(dump.find(random_part), std::string::npos) << dump;
  EXPECT_NE(dump.find(sha256_hex(plaintext)), std::string::npos) << dump;
  EXPECT_EQ(query_text(url_, "SELECT token_sha256 FROM api_tokens WHERE name = 'admin-1'"), sha256_hex(plaintext));
}

TEST_F(TokenStoreTest, NameIsUniqueAmongUnrevokedTokens) {
  auto first = store_->create("deploy", Scope::kWrite);
  ASSERT_TRUE(first.is_ok());
  auto dup = store_->create("deploy", Scope::kRead);
  ASSERT_FALSE(dup.is_ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);

  ASSERT_TRUE(store_->revoke("deploy").is_ok());
  auto reused = store_->create("deploy", Scope::kRead);
  ASSERT_TRUE(reused.is_ok()) << reused.status().to_string();
  EXPECT_NE(reused->plaintext, first->plaintext);
  EXPECT_EQ(store_->lookup(reused->plaintext)->scope, Scope::kRead);
  EXPECT_EQ(store_->lookup(first->plaintext).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM api_tokens WHERE name = 'deploy'"), "2");

  EXPECT_EQ(store_->create("", Scope::kRead).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TokenStoreTest, HasAdminFollowsUnrevokedAdminTokens) {
  ASSERT_TRUE(store_->has_admin().is_ok());
  EXPECT_FALSE(*store_->has_admin());
  ASSERT_TRUE(store_->create("writer", Scope::kWrite).is_ok());
  EXPECT_FALSE(*store_->has_admin());
  ASSERT_TRUE(store_->create("root", Scope::kAdmin).is_ok());
  EXPECT_TRUE(*store_->has_admin());
  ASSERT_TRUE(store_->revoke("root").is_ok());
  EXPECT_FALSE(*store_->has_admin());
}

TEST_F(TokenStoreTest, DatabaseDownIsUnavailableNotUnauthenticated) {
  auto created = store_->create("reader", Scope::kRead);
  ASSERT_TRUE(created.is_ok());
  {
    testing::ClusterRestartGuard guard;
    PgCluster::shared().stop();
    EXPECT_EQ(store_->lookup(created->plaintext).status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(store_->has_admin().status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(store_->create("x", Scope::kRead).status().code(), StatusCode::kUnavailable);
  }
  EXPECT_TRUE(store_->lookup(created->plaintext).is_ok());
}

}  // namespace
}  // namespace tcl::registry
