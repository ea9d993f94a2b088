#include "client/logits/logits_tool.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/logits/npy.h"
#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::SharedFile;
using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kModel[] = "models/fixtures/llama-F16.gguf";
constexpr char kReference[] = "models/fixtures/llama-F16.logits.npy";

// Per process: ctest runs each case as its own process, several at once, and the cases
// write the same files.
std::string TempPrefix() { return "logits_tool_test_" + std::to_string(getpid()) + "_"; }
std::string Temp(const std::string& name) {
  return ::testing::TempDir() + "/" + TempPrefix() + name;
}

// Removes this process's Temp files when the tests end (they were left in /tmp, a copy of a
// model among them, for every run).
class TempFilesCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code error;
    std::filesystem::directory_iterator it(::testing::TempDir(), error);
    for (; !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
      if (it->path().filename().string().rfind(TempPrefix(), 0) == 0) {
        std::error_code ignored;
        std::filesystem::remove(it->path(), ignored);
      }
    }
  }
};
[[maybe_unused]] ::testing::Environment* const kTempFilesCleanup =
    ::testing::AddGlobalTestEnvironment(new TempFilesCleanup);

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A copy of the llama fixture whose general.architecture says "mamba" (every shipped
// fixture's architecture is supported).
std::string UnknownArchitectureCopy() {
  std::ifstream in(*SharedFile("models/fixtures/llama-F16.gguf"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes.replace(bytes.find("llama", bytes.find("general.architecture")), 5, "mamba");
  WriteFile(Temp("mamba.gguf"), bytes);
  return Temp("mamba.gguf");
}

// A short run: 8 of the fixture's token ids (the full 64 are the fixture tests' job).
LogitsToolOptions ShortRun() {
  LogitsToolOptions o;
  o.model = *SharedFile(kModel);
  o.tokens = "1,403,407,261,378,432,383,286";
  return o;
}

TEST(ParseTokenIdsTest, TakesCommasWhitespaceAndAJsonList) {
  EXPECT_THAT(ParseTokenIds("1,403, 407", "--tokens"), IsOkAndHolds(ElementsAre(1, 403, 407)));
  EXPECT_THAT(ParseTokenIds(" [1, 2,\n3]\n", "f"), IsOkAndHolds(ElementsAre(1, 2, 3)));
  EXPECT_THAT(ParseTokenIds("0 2147483647", "f"), IsOkAndHolds(ElementsAre(0, 2147483647)));
}

TEST(ParseTokenIdsTest, RefusesWhatIsNotAnIdNamingItAndItsPlace) {
  EXPECT_THAT(ParseTokenIds("", "--tokens"),
              StatusIs(absl::StatusCode::kInvalidArgument, "--tokens: no token ids"));
  EXPECT_THAT(ParseTokenIds(" , [] ", "--tokens"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(
      ParseTokenIds("1,2,x3", "--tokens"),
      StatusIs(absl::StatusCode::kInvalidArgument, "--tokens: 'x3' (item 3) is not a token id"));
  EXPECT_THAT(ParseTokenIds("1,-2", "f"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'-2' (item 2)")));
  EXPECT_THAT(ParseTokenIds("2147483648", "f"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'2147483648' (item 1)")));
  EXPECT_THAT(ParseTokenIds("[1, 2", "f"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("without a closing ']'")));
}

TEST(LogitsToolTest, ComparingWithItsOwnOutputGivesZeroAndExitZero) {
  LogitsToolOptions o = ShortRun();
  o.out = Temp("own.npy");
  LogitsToolResult first = RunLogitsTool(o);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, absl::StrCat("wrote ", o.out, " [8, 512] float32\n"));
  ASSERT_OK_AND_ASSIGN(NpyArray written, ReadNpy(o.out));
  EXPECT_THAT(written.shape, ElementsAre(8, 512));

  o.out.clear();
  o.compare = Temp("own.npy");
  o.kl_base = Temp("own.npy");
  o.atol = 0;
  LogitsToolResult again = RunLogitsTool(o);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out,
            "max_abs 0 at [0, 0]\nrms 0\nargmax_agree 8/8\n"
            "kl_mean 0\nkl_p99 0\nkl_max 0\ntop_agree 8/8\n");
  EXPECT_EQ(again.err, "");
}

TEST(LogitsToolTest, APerturbedReferenceExitsOneNamingIt) {
  LogitsToolOptions o = ShortRun();
  o.out = Temp("base.npy");
  ASSERT_EQ(RunLogitsTool(o).exit_code, 0);
  ASSERT_OK_AND_ASSIGN(NpyArray base, ReadNpy(o.out));
  std::vector<float> perturbed(base.values.begin(), base.values.end());
  perturbed[3 * 512 + 100] += 0.01f;  // twice the default --atol
  ASSERT_OK(WriteNpyF32(Temp("perturbed.npy"), {8, 512}, perturbed));

  o.out.clear();
  o.compare = Temp("perturbed.npy");
  LogitsToolResult r = RunLogitsTool(o);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("at [3, 100]\n"));
  EXPECT_THAT(r.out, HasSubstr("argmax_agree "));
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("from ", o.compare, " exceeds --atol 0.005")));
  o.atol = 0.02;  // the same difference within a looser tolerance
  EXPECT_EQ(RunLogitsTool(o).exit_code, 0);
}

TEST(LogitsToolTest, TheFixtureReferenceMatchesAndKlAgainstItIsTiny) {
  LogitsToolOptions o;
  o.model = *SharedFile(kModel);
  o.tokens_file = Temp("tokens.txt");
  // The manifest's 64 ids (models/fixtures/README.md).
  WriteFile(o.tokens_file,
            "[1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, "
            "401, 396, 267, 337, 501, 500, 505, 196, 90, 472, 56, 136, 73, 165, 275, 63, 408, 126, "
            "403, 165, 406, 493, 490, 137, 285, 227, 132, 313, 459, 442, 331, 442, 266, 346, 489, "
            "338, 27, 377, 378, 116, 444, 90, 404, 446, 248, 33, 85]\n");
  o.compare = *SharedFile(kReference);
  o.kl_base = o.compare;
  o.atol = 1e-4;
  LogitsToolResult r = RunLogitsTool(o);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("argmax_agree 64/64\n"));
  EXPECT_THAT(r.out, HasSubstr("top_agree 64/64\n"));
}

// --- #31 activations flags ---
// The logits of ShortRun() on `model` with --activations `activations`, via --out.
std::vector<double> ShortRunLogits(const std::string& model, const std::string& activations) {
  LogitsToolOptions o = ShortRun();
  o.model = model;
  o.activations = activations;
  o.out = Temp(absl::StrCat("activations-", activations, ".npy"));
  const LogitsToolResult r = RunLogitsTool(o);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<NpyArray> written = ReadNpy(o.out);
  EXPECT_TRUE(written.ok()) << written.status();
  return written.ok() ? written->values : std::vector<double>();
}

TEST(LogitsToolTest, Int8ActivationsMoveAQuantizedFileAndLeaveAnF16FileBitIdentical) {
  const std::string f16 = *SharedFile(kModel);
  EXPECT_EQ(ShortRunLogits(f16, "int8"), ShortRunLogits(f16, "int16"));
  const std::string q8 = *SharedFile("models/fixtures/llama-Q8_0.gguf");
  const std::vector<double> int16 = ShortRunLogits(q8, "int16");
  const std::vector<double> int8 = ShortRunLogits(q8, "int8");
  ASSERT_EQ(int8.size(), int16.size());
  EXPECT_NE(int8, int16);
}
// --- end ---

struct BadInputCase {
  std::string name;
  std::function<void(LogitsToolOptions&)> change;
  std::string message;
};

void PrintTo(const BadInputCase& c, std::ostream* os) { *os << c.name; }

class LogitsToolBadInputTest : public ::testing::TestWithParam<BadInputCase> {};

TEST_P(LogitsToolBadInputTest, ExitsTwoWithOneLineNamingTheCulprit) {
  WriteFile(Temp("garbage.npy"), std::string("\x93NUMPY\x01\x00\x03\x00{'d", 13));
  ASSERT_OK(WriteNpyF32(Temp("short.npy"), {7, 512}, std::vector<float>(7 * 512)));
  LogitsToolOptions o = ShortRun();
  o.out = Temp("unused.npy");
  GetParam().change(o);
  LogitsToolResult r = RunLogitsTool(o);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr(GetParam().message));
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, LogitsToolBadInputTest,
    ::testing::Values(
        BadInputCase{"missing_model", [](auto& o) { o.model = "/nonexistent/m.gguf"; },
                     "/nonexistent/m.gguf"},
        BadInputCase{"no_model", [](auto& o) { o.model.clear(); }, "--model is required"},
        BadInputCase{"empty_tokens", [](auto& o) { o.tokens = " , "; }, "--tokens: no token ids"},
        BadInputCase{"both_token_sources", [](auto& o) { o.tokens_file = "t.txt"; },
                     "exactly one of --tokens and --tokens-file"},
        BadInputCase{"missing_tokens_file",
                     [](auto& o) {
                       o.tokens.clear();
                       o.tokens_file = "/nonexistent/t.txt";
                     },
                     "--tokens-file /nonexistent/t.txt: cannot open"},
        BadInputCase{"id_outside_vocabulary", [](auto& o) { o.tokens = "1,2,512"; },
                     "token id 512 at position 2 is outside the vocabulary (512 ids)"},
        BadInputCase{"nothing_to_do", [](auto& o) { o.out.clear(); }, "nothing to do"},
        BadInputCase{"missing_reference", [](auto& o) { o.compare = "/nonexistent/r.npy"; },
                     "/nonexistent/r.npy: cannot open"},
        BadInputCase{"malformed_reference", [](auto& o) { o.compare = Temp("garbage.npy"); },
                     "garbage.npy: npy header unterminated string"},
        BadInputCase{"reference_of_another_shape", [](auto& o) { o.compare = Temp("short.npy"); },
                     "short.npy: shape (7, 512) but the model gives [8, 512]"},
        BadInputCase{"kl_base_of_another_shape", [](auto& o) { o.kl_base = Temp("short.npy"); },
                     "short.npy: shape (7, 512)"},
        BadInputCase{"unsupported_architecture",
                     [](auto& o) { o.model = UnknownArchitectureCopy(); },
                     "architecture 'mamba' is not supported"},
        BadInputCase{"negative_atol", [](auto& o) { o.atol = -1; }, "--atol -1"},
        BadInputCase{"zero_threads", [](auto& o) { o.threads = 0; }, "--threads 0"},
        BadInputCase{"unknown_activations", [](auto& o) { o.activations = "fp8"; },
                     "--activations: activation precision 'fp8' is not one of int16, int8"},
        BadInputCase{"unwritable_out", [](auto& o) { o.out = "/nonexistent/dir/o.npy"; },
                     "/nonexistent/dir/o.npy: cannot create"}),
    [](const ::testing::TestParamInfo<BadInputCase>& info) { return info.param.name; });

// The tandem-logits binary: $TANDEM_BIN, Bazel's runfiles tree, or build/bin beside the
// build/tests folder holding this test.
std::string ToolBinary() {
  std::vector<std::string> candidates;
  if (const char* bin = std::getenv("TANDEM_BIN"); bin != nullptr) {
    candidates.push_back(absl::StrCat(bin, "/tandem-logits"));
  }
  candidates.push_back("client/logits/tandem-logits");
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    const std::string self(exe, n);
    candidates.push_back(self.substr(0, self.rfind('/')) + "/../bin/tandem-logits");
  }
  for (const std::string& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  return "tandem-logits";
}

int RunBinary(const std::string& args) {
  const int status = std::system(absl::StrCat(ToolBinary(), " ", args, " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(LogitsToolBinaryTest, ExitsZeroOnAMatchOneOnADifferenceAndTwoOnBadInput) {
  EXPECT_EQ(RunBinary("--version"), 0);
  EXPECT_EQ(RunBinary("--help"), 0);
  const std::string model = *SharedFile(kModel);
  const std::string own = Temp("binary.npy");
  const std::string run = absl::StrCat("--model ", model, " --tokens 1,403,407 --threads 1");
  ASSERT_EQ(RunBinary(absl::StrCat(run, " --out ", own)), 0);
  EXPECT_EQ(RunBinary(absl::StrCat(run, " --compare ", own, " --atol 0")), 0);
  ASSERT_OK_AND_ASSIGN(NpyArray logits, ReadNpy(own));
  std::vector<float> perturbed(logits.values.begin(), logits.values.end());
  perturbed[0] -= 1;
  ASSERT_OK(WriteNpyF32(Temp("binary-perturbed.npy"), {3, 512}, perturbed));
  EXPECT_EQ(RunBinary(absl::StrCat(run, " --compare ", Temp("binary-perturbed.npy"))), 1);
  EXPECT_EQ(RunBinary(absl::StrCat(run, " --compare /nonexistent/r.npy")), 2);
  EXPECT_EQ(RunBinary("--no-such-flag"), 2);
  EXPECT_EQ(RunBinary("stray-argument"), 2);
}

}  // namespace
}  // namespace tandem
