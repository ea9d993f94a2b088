#include "core/model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::SharedFile;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid())))
      .string();
}

TEST(MappedFileTest, MapsWholeSharedModelFile) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(MappedFile file, MappedFile::Open(path));
  EXPECT_EQ(file.size(), 1185376u);
  EXPECT_EQ(file.path(), path);
  ASSERT_NE(file.data(), nullptr);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(file.data()), 4), "GGUF");
  EXPECT_EQ(file.bytes().size(), file.size());
}

TEST(MappedFileTest, MissingFileIsNotFoundNamingThePath) {
  EXPECT_THAT(MappedFile::Open("/nonexistent/dir/model.gguf"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/dir/model.gguf")));
}

TEST(MappedFileTest, DirectoryIsInvalidArgument) {
  EXPECT_THAT(MappedFile::Open(std::filesystem::temp_directory_path().string()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a regular file")));
}

TEST(MappedFileTest, OtherOpenErrorsCarryErrnoText) {
  // A path through a regular file: open() fails with ENOTDIR.
  const std::string file_path = TempPath("mapped_file_test_notdir");
  std::ofstream(file_path) << "x";
  EXPECT_THAT(MappedFile::Open(file_path + "/child"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("Not a directory")));
  std::remove(file_path.c_str());
}

TEST(MappedFileTest, EmptyFileHasNoBytes) {
  const std::string path = TempPath("mapped_file_test_empty");
  std::ofstream(path).close();
  ASSERT_OK_AND_ASSIGN(MappedFile file, MappedFile::Open(path));
  EXPECT_EQ(file.size(), 0u);
  EXPECT_TRUE(file.bytes().empty());
  std::remove(path.c_str());
}

TEST(MappedFileTest, MoveKeepsTheBytesInPlace) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(MappedFile file, MappedFile::Open(path));
  const uint8_t* data = file.data();
  MappedFile moved = std::move(file);
  EXPECT_EQ(moved.data(), data);
  EXPECT_EQ(moved.size(), 1185376u);
  MappedFile assigned = MappedFile::FromBuffer({});
  assigned = std::move(moved);
  EXPECT_EQ(assigned.data(), data);
  EXPECT_EQ(assigned.bytes()[3], 'F');
}

TEST(MappedFileTest, FromBufferBorrowsWithoutCopying) {
  const std::vector<uint8_t> buffer = {1, 2, 3};
  MappedFile file = MappedFile::FromBuffer(buffer, "test-buffer");
  EXPECT_EQ(file.data(), buffer.data());
  EXPECT_EQ(file.size(), 3u);
  EXPECT_EQ(file.path(), "test-buffer");
}

// Pages released after reading leave memory (mincore) and read back unchanged from the
// file. (The kernel may keep pages whose large folio the range covers only in part.)
TEST(MappedFileTest, ReleasedPagesReadBackUnchanged) {
  const std::string path = TempPath("release");
  const size_t size = 4 << 20;
  {
    std::vector<char> bytes(size);
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 7 + i / 4096);
    std::ofstream(path, std::ios::binary).write(bytes.data(), size);
    const int fd = ::open(path.c_str(), O_RDONLY);  // written back: clean pages can go
    ASSERT_GE(fd, 0);
    ::fsync(fd);
    ::close(fd);
  }
  ASSERT_OK_AND_ASSIGN(MappedFile file, MappedFile::Open(path));
  auto checksum = [&] {
    uint64_t sum = 0;
    for (size_t i = 0; i < size; ++i) sum = sum * 31 + file.data()[i];
    return sum;
  };
  auto resident_pages = [&] {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> pages((size + page - 1) / page);
    EXPECT_EQ(mincore(const_cast<uint8_t*>(file.data()), size, pages.data()), 0);
    size_t resident = 0;
    for (unsigned char p : pages) resident += p & 1;
    return resident;
  };
  const uint64_t before = checksum();
  const size_t resident_before = resident_pages();
  const bool accepted = ReleaseResidentPages(file.data(), size);
  if (accepted) {
    EXPECT_LT(resident_pages(), resident_before / 2);
  }
  EXPECT_EQ(checksum(), before);
  EXPECT_TRUE(ReleaseResidentPages(file.data() + 10, 100));  // no whole page: nothing to do
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tandem
