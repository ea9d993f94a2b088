#include "client/logits/npy.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// An npy file from its header dict text and data bytes, with the header padded as numpy does.
std::string NpyBytes(const std::string& dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

template <typename T>
std::string Raw(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(NpyTest, EncodingTheFixtureLogitsReproducesNumpysFileByteForByte) {
  ASSERT_OK_AND_ASSIGN(std::string path,
                       testing::SharedFile("models/fixtures/llama-F16.logits.npy"));
  const std::string bytes = ReadAll(path);
  ASSERT_OK_AND_ASSIGN(NpyArray array, ParseNpy(bytes, path));
  EXPECT_EQ(array.dtype, NpyDtype::kF32);
  EXPECT_THAT(array.shape, ElementsAre(64, 512));
  ASSERT_EQ(array.values.size(), 64u * 512u);
  const std::vector<float> values(array.values.begin(), array.values.end());
  ASSERT_OK_AND_ASSIGN(std::string encoded, EncodeNpyF32({64, 512}, values));
  EXPECT_EQ(encoded, bytes);
}

TEST(NpyTest, WrittenFilesReadBackBitIdenticalInEveryShape) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> values = {1.5f, -0.0f, 3e-39f, nan, 65504.0f, -7.25f};
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{6}, {2, 3}, {3, 1, 2}, {1, 6}}) {
    const std::string path = ::testing::TempDir() + "/roundtrip.npy";
    ASSERT_OK(WriteNpyF32(path, shape, values));
    ASSERT_OK_AND_ASSIGN(NpyArray array, ReadNpy(path));
    EXPECT_EQ(array.shape, shape);
    ASSERT_EQ(array.values.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      const float back = static_cast<float>(array.values[i]);
      EXPECT_EQ(std::memcmp(&back, &values[i], 4), 0) << "value " << i;
    }
    EXPECT_EQ(ReadAll(path).size() % 64, values.size() * 4 % 64) << "data aligned to 64";
  }
  ASSERT_OK_AND_ASSIGN(std::string empty, EncodeNpyF32({0, 512}, {}));
  ASSERT_OK_AND_ASSIGN(NpyArray none, ParseNpy(empty, "empty.npy"));
  EXPECT_THAT(none.shape, ElementsAre(0, 512));
  EXPECT_TRUE(none.values.empty());
}

TEST(NpyTest, ReadsFloat64AndVersion2AndPython2HeadersAndScalars) {
  const std::vector<double> f64 = {0.1, -2.5, 1e300};
  ASSERT_OK_AND_ASSIGN(
      NpyArray a,
      ParseNpy(NpyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", Raw(f64)),
               "a.npy"));
  EXPECT_EQ(a.dtype, NpyDtype::kF64);
  EXPECT_THAT(a.values, ElementsAre(0.1, -2.5, 1e300));

  const std::vector<float> f32 = {1, 2, 3, 4};
  ASSERT_OK_AND_ASSIGN(NpyArray b,
                       ParseNpy(NpyBytes("{\"shape\": (2L, 2L), \"fortran_order\": False, "
                                         "\"descr\": \"<f4\"}",
                                         Raw(f32), /*major=*/2),
                                "b.npy"));
  EXPECT_THAT(b.shape, ElementsAre(2, 2));
  EXPECT_THAT(b.values, ElementsAre(1, 2, 3, 4));

  ASSERT_OK_AND_ASSIGN(NpyArray c,
                       ParseNpy(NpyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (), }",
                                         Raw(std::vector<float>{9})),
                                "c.npy"));
  EXPECT_TRUE(c.shape.empty());
  EXPECT_THAT(c.values, ElementsAre(9));
}

struct BadNpyCase {
  std::string name;
  std::string bytes;
  absl::StatusCode code;
  std::string message;
};

void PrintTo(const BadNpyCase& c, std::ostream* os) { *os << c.name; }

class BadNpyTest : public ::testing::TestWithParam<BadNpyCase> {};

TEST_P(BadNpyTest, IsRefusedWithTheCodeAndAMessageNamingTheFile) {
  const BadNpyCase& c = GetParam();
  EXPECT_THAT(ParseNpy(c.bytes, "ref.npy"),
              StatusIs(c.code, ::testing::AllOf(HasSubstr("ref.npy: "), HasSubstr(c.message))));
}

const std::string kF4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
const std::string kFour = Raw(std::vector<float>{1, 2, 3, 4});

INSTANTIATE_TEST_SUITE_P(
    Files, BadNpyTest,
    ::testing::Values(
        BadNpyCase{"empty", "", absl::StatusCode::kDataLoss, "no \\x93NUMPY magic"},
        BadNpyCase{"not_npy", "PK\x03\x04 a zip file", absl::StatusCode::kDataLoss, "magic"},
        BadNpyCase{"version_4", std::string("\x93NUMPY\x04\x00", 8) + "xx",
                   absl::StatusCode::kUnimplemented, "version 4.0"},
        BadNpyCase{"cut_in_length", std::string("\x93NUMPY\x02\x00\x10", 9),
                   absl::StatusCode::kDataLoss, "inside its header length"},
        BadNpyCase{"header_past_end", std::string("\x93NUMPY\x01\x00\xff\x00{", 11),
                   absl::StatusCode::kDataLoss, "header of 255 bytes but only 1 follow"},
        BadNpyCase{"truncated_data", NpyBytes(kF4, kFour.substr(0, 15)),
                   absl::StatusCode::kDataLoss, "does not match the 15 data bytes"},
        BadNpyCase{"trailing_data", NpyBytes(kF4, kFour + "x"), absl::StatusCode::kDataLoss,
                   "shape (2, 2) of <f4 does not match the 17 data bytes"},
        BadNpyCase{"huge_shape",
                   NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, "
                            "4294967296, 4294967296), }",
                            kFour),
                   absl::StatusCode::kDataLoss, "does not match the 16 data bytes"},
        BadNpyCase{"dimension_overflow",
                   NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': "
                            "(99999999999999999999,), }",
                            kFour),
                   absl::StatusCode::kDataLoss, "dimension is too large"},
        BadNpyCase{"negative_dimension",
                   NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", kFour),
                   absl::StatusCode::kDataLoss, "other than a dimension"},
        BadNpyCase{"no_shape", NpyBytes("{'descr': '<f4', 'fortran_order': False}", kFour),
                   absl::StatusCode::kDataLoss, "no 'shape' key"},
        BadNpyCase{"repeated_key",
                   NpyBytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                            "'shape': (4,)}",
                            kFour),
                   absl::StatusCode::kDataLoss, "repeated key 'descr'"},
        BadNpyCase{
            "extra_key",
            NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", kFour),
            absl::StatusCode::kDataLoss, "unexpected or repeated key 'x'"},
        BadNpyCase{"unterminated_string", NpyBytes("{'descr: '<f4'", kFour),
                   absl::StatusCode::kDataLoss, "no ':' after key"},
        BadNpyCase{"no_closing_brace",
                   NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,)", kFour),
                   absl::StatusCode::kDataLoss, "no ',' or '}' after the value of 'shape'"},
        BadNpyCase{"unterminated_key", NpyBytes("{'descr", kFour), absl::StatusCode::kDataLoss,
                   "unterminated string"},
        BadNpyCase{"number_as_key", NpyBytes("{1: 2}", kFour), absl::StatusCode::kDataLoss,
                   "expected a quoted string"},
        BadNpyCase{"text_after_dict", NpyBytes(kF4 + " x", kFour), absl::StatusCode::kDataLoss,
                   "text after the closing '}'"},
        BadNpyCase{"bad_bool",
                   NpyBytes("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 2), }", kFour),
                   absl::StatusCode::kDataLoss, "neither True nor False"},
        BadNpyCase{"int_dtype",
                   NpyBytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", kFour),
                   absl::StatusCode::kUnimplemented, "dtype '<i4' is not supported"},
        BadNpyCase{"big_endian",
                   NpyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", kFour),
                   absl::StatusCode::kUnimplemented, "dtype '>f4'"},
        BadNpyCase{"fortran_order",
                   NpyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", kFour),
                   absl::StatusCode::kUnimplemented, "Fortran-order"}),
    [](const ::testing::TestParamInfo<BadNpyCase>& info) { return info.param.name; });

TEST(NpyTest, MissingFileIsNotFoundNamingIt) {
  EXPECT_THAT(ReadNpy("/nonexistent/ref.npy"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/ref.npy")));
}

TEST(NpyTest, EncodingRefusesValuesThatDoNotFillTheShape) {
  EXPECT_THAT(EncodeNpyF32({2, 3}, std::vector<float>(5)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds 6 values, not 5")));
  EXPECT_THAT(EncodeNpyF32({-1}, {}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(WriteNpyF32("/nonexistent/dir/out.npy", {1}, std::vector<float>(1)),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("/nonexistent/dir/out.npy")));
}

}  // namespace
}  // namespace tandem
