#include "core/decoder/load_report.h"

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

std::string ReadAll(FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) text.append(buffer, n);
  return text;
}

TEST(LoadReportTest, PrefetchReportsEveryByteOnceInOrder) {
  ASSERT_OK_AND_ASSIGN(std::string path,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  std::vector<int64_t> seen;
  int64_t reported_total = -1;
  ASSERT_OK_AND_ASSIGN(int64_t total, PrefetchModelFiles(path, [&](int64_t done, int64_t all) {
                         seen.push_back(done);
                         reported_total = all;
                       }));
  EXPECT_EQ(total, static_cast<int64_t>(std::filesystem::file_size(path)));
  EXPECT_EQ(reported_total, total);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), total);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

TEST(LoadReportTest, ModelBytesAreTheFilesSizes) {
  ASSERT_OK_AND_ASSIGN(std::string path,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  EXPECT_THAT(ModelBytes(path),
              tandem::testing::IsOkAndHolds(static_cast<int64_t>(std::filesystem::file_size(path))));
  EXPECT_THAT(ModelBytes("/no/such/model.gguf"), StatusIs(absl::StatusCode::kNotFound));
}

TEST(LoadReportTest, AFolderStandsForItsSafetensorsFiles) {
  ASSERT_OK_AND_ASSIGN(std::string folder, testing::SharedFile("models/stories260K/hf"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> files, ModelFiles(folder));
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(absl::EndsWith(files[0], "/model.safetensors")) << files[0];
  EXPECT_THAT(ModelFiles("/no/such/model.gguf"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/no/such/model.gguf")));
}

TEST(LoadReportTest, WithoutATerminalPrintsOneSummaryLine) {
  ASSERT_OK_AND_ASSIGN(std::string path,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  LoadReport report(path, out, /*bar=*/false);
  report.Prefetch();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> model, Model::Load(path));
  report.Loaded(*model);
  const std::string text = ReadAll(out);
  std::fclose(out);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  // file, architecture, type mix (5 layers x 7 matrices, the embedding, the output), bytes,
  // seconds
  EXPECT_THAT(text, HasSubstr("loaded " + path + ": llama, F32 x37 + 11 vectors, "));
  EXPECT_THAT(text, ::testing::MatchesRegex(".* [0-9]+\\.[0-9] MiB in [0-9]+\\.[0-9][0-9] s\n"));
}

TEST(LoadReportTest, OnATerminalDrawsABarOfBytesThenTheSummary) {
  ASSERT_OK_AND_ASSIGN(std::string path,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  LoadReport report(path, out, /*bar=*/true);
  report.Prefetch();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> model, Model::Load(path));
  report.Loaded(*model);
  const std::string text = ReadAll(out);
  std::fclose(out);
  EXPECT_THAT(text, HasSubstr("\rloading " + path + " [##############################] 100% "));
  EXPECT_THAT(text, HasSubstr("\r\033[Kloaded " + path + ": llama, "));
}

}  // namespace
}  // namespace tandem
