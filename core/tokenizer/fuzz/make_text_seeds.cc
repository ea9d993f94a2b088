// Writes a text fuzzer's seed corpus (run at test time, never committed):
//   make_text_seeds OUT_DIR FILE...
// Each FILE is a llama.cpp vocabulary test input (*.gguf.inp): strings separated by
// "\n__ggml_vocab_test__\n"; every string becomes one seed file.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace {

bool WriteSeed(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR FILE...\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const std::string separator = "\n__ggml_vocab_test__\n";
  int written = 0;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", argv[i]);
      return 1;
    }
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t start = 0; start < all.size();) {
      size_t end = all.find(separator, start);
      if (end == std::string::npos) end = all.size();
      if (!WriteSeed(dir / ("text-" + std::to_string(written++)), all.substr(start, end - start))) {
        std::fprintf(stderr, "cannot write into %s\n", dir.c_str());
        return 1;
      }
      start = end + separator.size();
    }
  }
  return 0;
}
