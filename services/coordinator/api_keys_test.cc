#include "services/coordinator/api_keys.h"

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// A file in a fresh temporary folder, rewritten by Write.
class KeysFile {
 public:
  KeysFile() {
    std::string dir = "/tmp/tandem-keys-XXXXXX";
    EXPECT_NE(mkdtemp(dir.data()), nullptr);
    path_ = dir + "/keys";
  }
  void Write(const std::string& text) const { std::ofstream(path_, std::ios::binary) << text; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ParseApiKeysTest, OneKeyPerLineSkippingBlanksAndComments) {
  EXPECT_THAT(ParseApiKeys("alpha\n\n  # a comment\n beta-2 \r\ngamma_3", "k"),
              IsOkAndHolds(ElementsAre("alpha", "beta-2", "gamma_3")));
}

TEST(ParseApiKeysTest, RefusesKeysWithSpacesOrControlCharactersAndEmptyFiles) {
  struct Case {
    std::string text;
    std::string words;
  };
  const Case cases[] = {
      {"good\ntwo words\n", "'keys.txt' line 2: a key has spaces"},
      {std::string("nul\0key", 7), "'keys.txt' line 1"},
      {"tab\tkey", "line 1"},
      {"", "holds no key"},
      {"\n  \n# only comments\n", "holds no key"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseApiKeys(c.text, "keys.txt"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.words)))
        << c.text;
  }
}

TEST(ApiKeysTest, AcceptsOnlyBearerWithAKnownKey) {
  KeysFile file;
  file.Write("sk-one\nsk-two\n");
  ASSERT_OK_AND_ASSIGN(auto keys, ApiKeys::Load(file.path()));
  EXPECT_EQ(keys->size(), 2u);
  EXPECT_THAT(keys->Check("Bearer sk-one"), IsOk());
  EXPECT_THAT(keys->Check("bearer sk-two"), IsOk());
  struct Case {
    std::string header;
    std::string words;
  };
  const Case refused[] = {
      {"", "no API key"},
      {"sk-one", "not 'Bearer KEY'"},
      {"Basic c2stb25l", "not 'Bearer KEY'"},
      {"Bearer ", "not 'Bearer KEY'"},
      {"Bearer sk-on", "not valid"},
      {"Bearer sk-one1", "not valid"},
      {"Bearer SK-ONE", "not valid"},
      {"Bearer sk-onesk-two", "not valid"},
  };
  for (const Case& c : refused) {
    const absl::Status status = keys->Check(c.header);
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr(c.words)))
        << c.header;
    EXPECT_THAT(std::string(status.message()), Not(HasSubstr("sk-"))) << "echoes the key";
  }
}

TEST(ApiKeysTest, ReloadTakesTheNewKeysAndKeepsTheOldOnABadFile) {
  KeysFile file;
  file.Write("old-key\n");
  ASSERT_OK_AND_ASSIGN(auto keys, ApiKeys::Load(file.path()));
  file.Write("new-key\n");
  ASSERT_THAT(keys->Reload(), IsOk());
  EXPECT_THAT(keys->Check("Bearer new-key"), IsOk());
  EXPECT_THAT(keys->Check("Bearer old-key"), StatusIs(absl::StatusCode::kUnauthenticated));
  file.Write("# emptied by mistake\n");
  EXPECT_THAT(keys->Reload(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(keys->Check("Bearer new-key"), IsOk());
  unlink(file.path().c_str());
  EXPECT_THAT(keys->Reload(), StatusIs(absl::StatusCode::kNotFound, HasSubstr(file.path())));
  EXPECT_THAT(keys->Check("Bearer new-key"), IsOk());
}

TEST(ApiKeysTest, LoadNamesAMissingOrEmptyFile) {
  EXPECT_THAT(ApiKeys::Load("/nonexistent/keys"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/keys")));
  KeysFile file;
  file.Write("\n");
  EXPECT_THAT(ApiKeys::Load(file.path()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no key")));
}

}  // namespace
}  // namespace tandem
