#include "client/logits/npy.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/status_macros.h"

namespace tandem {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";
constexpr int64_t kAlign = 64;  // numpy.save aligns the data to 64 bytes

// The header dict's three values as written in the file.
struct NpyHeader {
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<int64_t>> shape;
};

// A recursive-descent reader of the Python dict literal numpy writes (strings, True/False,
// tuples of non-negative integers; anything else is refused).
class HeaderParser {
 public:
  HeaderParser(absl::string_view text, absl::string_view name) : text_(text), name_(name) {}

  absl::StatusOr<NpyHeader> Parse() {
    NpyHeader header;
    SkipSpace();
    if (!Consume('{')) return Error("does not start with '{'");
    SkipSpace();
    while (!Consume('}')) {
      ASSIGN_OR_RETURN(std::string key, ParseString());
      SkipSpace();
      if (!Consume(':')) return Error(absl::StrCat("no ':' after key '", key, "'"));
      SkipSpace();
      RETURN_IF_ERROR(ParseValue(key, header));
      SkipSpace();
      if (Consume(',')) {
        SkipSpace();
      } else if (Peek() != '}') {
        return Error(absl::StrCat("no ',' or '}' after the value of '", key, "'"));
      }
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("text after the closing '}'");
    if (!header.descr) return Error("no 'descr' key");
    if (!header.fortran_order) return Error("no 'fortran_order' key");
    if (!header.shape) return Error("no 'shape' key");
    return header;
  }

 private:
  absl::Status ParseValue(const std::string& key, NpyHeader& header) {
    if (key == "descr" && !header.descr) {
      ASSIGN_OR_RETURN(header.descr, ParseString());
    } else if (key == "fortran_order" && !header.fortran_order) {
      ASSIGN_OR_RETURN(header.fortran_order, ParseBool());
    } else if (key == "shape" && !header.shape) {
      ASSIGN_OR_RETURN(header.shape, ParseShape());
    } else {
      return Error(absl::StrCat("unexpected or repeated key '", key, "'"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> ParseString() {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    ++pos_;
    const size_t end = text_.find(quote, pos_);
    if (end == absl::string_view::npos) return Error("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }

  absl::StatusOr<bool> ParseBool() {
    if (ConsumeWord("True")) return true;
    if (ConsumeWord("False")) return false;
    return Error("'fortran_order' is neither True nor False");
  }

  absl::StatusOr<std::vector<int64_t>> ParseShape() {
    if (!Consume('(')) return Error("'shape' is not a tuple");
    std::vector<int64_t> shape;
    SkipSpace();
    while (!Consume(')')) {
      ASSIGN_OR_RETURN(int64_t dim, ParseDimension());
      shape.push_back(dim);
      SkipSpace();
      if (Consume(',')) {
        SkipSpace();
      } else if (Peek() != ')') {
        return Error("'shape' has no ',' or ')' after a dimension");
      }
    }
    return shape;
  }

  absl::StatusOr<int64_t> ParseDimension() {
    const size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      value = value * 10 + (text_[pos_++] - '0');
      if (value > kMaxNpyBytes) return Error("a 'shape' dimension is too large");
    }
    if (pos_ == start) return Error("'shape' holds something other than a dimension");
    Consume('L');  // Python 2's long literal, as old numpy wrote it
    return value;
  }

  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  bool ConsumeWord(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  absl::Status Error(absl::string_view what) const {
    return absl::DataLossError(
        absl::StrCat(name_, ": npy header ", what, " (at byte ", pos_, " of the header)"));
  }

  absl::string_view text_;
  absl::string_view name_;
  size_t pos_ = 0;
};

uint32_t ReadLittleEndian(absl::string_view bytes, size_t offset, int width) {
  uint32_t value = 0;
  for (int i = width - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<uint8_t>(bytes[offset + i]);
  }
  return value;
}

// The header text and the offset of the data, from the magic and the version's length field.
absl::StatusOr<std::pair<absl::string_view, size_t>> SplitHeader(absl::string_view bytes,
                                                                 absl::string_view name) {
  if (bytes.size() < kMagic.size() + 2 || bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::DataLossError(absl::StrCat(name, ": not an npy file (no \\x93NUMPY magic)"));
  }
  const int major = static_cast<uint8_t>(bytes[6]);
  if (major < 1 || major > 3) {
    return absl::UnimplementedError(absl::StrCat(name, ": npy format version ", major, ".",
                                                 static_cast<int>(static_cast<uint8_t>(bytes[7])),
                                                 " is not supported (1.0, 2.0, 3.0)"));
  }
  const int width = major == 1 ? 2 : 4;
  const size_t prefix = kMagic.size() + 2 + width;
  if (bytes.size() < prefix) {
    return absl::DataLossError(absl::StrCat(name, ": npy file ends inside its header length"));
  }
  const uint64_t length = ReadLittleEndian(bytes, prefix - width, width);
  if (length > bytes.size() - prefix) {
    return absl::DataLossError(absl::StrCat(name, ": npy header of ", length, " bytes but only ",
                                            bytes.size() - prefix, " follow"));
  }
  return std::make_pair(bytes.substr(prefix, length), prefix + length);
}

absl::StatusOr<NpyDtype> DtypeOf(const std::string& descr, absl::string_view name) {
  if (descr == "<f4") return NpyDtype::kF32;
  if (descr == "<f8") return NpyDtype::kF64;
  return absl::UnimplementedError(
      absl::StrCat(name, ": npy dtype '", descr, "' is not supported (little-endian <f4, <f8)"));
}

// (Little-endian data read on a little-endian host: the x86-64 machines Tandem runs on.)
void DecodeValues(absl::string_view data, NpyDtype dtype, std::vector<double>& out) {
  const size_t width = dtype == NpyDtype::kF32 ? 4 : 8;
  for (size_t i = 0; i < out.size(); ++i) {
    if (dtype == NpyDtype::kF32) {
      float v;
      std::memcpy(&v, data.data() + i * width, width);
      out[i] = v;
    } else {
      std::memcpy(&out[i], data.data() + i * width, width);
    }
  }
}

}  // namespace

absl::StatusOr<NpyArray> ParseNpy(absl::string_view bytes, absl::string_view name) {
  if (static_cast<int64_t>(bytes.size()) > kMaxNpyBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name, ": npy file of ", bytes.size(), " bytes is larger than the limit"));
  }
  ASSIGN_OR_RETURN(auto split, SplitHeader(bytes, name));
  ASSIGN_OR_RETURN(NpyHeader header, HeaderParser(split.first, name).Parse());
  NpyArray array;
  ASSIGN_OR_RETURN(array.dtype, DtypeOf(*header.descr, name));
  if (*header.fortran_order && header.shape->size() > 1) {
    return absl::UnimplementedError(
        absl::StrCat(name, ": Fortran-order npy arrays are not supported (C order only)"));
  }
  array.shape = *header.shape;
  const int64_t width = array.dtype == NpyDtype::kF32 ? 4 : 8;
  const int64_t data_bytes = static_cast<int64_t>(bytes.size() - split.second);
  int64_t count = 1;
  for (int64_t dim : array.shape) {
    // Checked before multiplying: count * dim * width stays below 2^63 while it fits the file.
    if (dim != 0 && count > data_bytes / width / dim) count = -1;
    if (count < 0) break;
    count *= dim;
  }
  if (count < 0 || count * width != data_bytes) {
    return absl::DataLossError(absl::StrCat(name, ": npy shape (", absl::StrJoin(array.shape, ", "),
                                            ") of ", *header.descr, " does not match the ",
                                            data_bytes, " data bytes after the header"));
  }
  array.values.resize(count);
  DecodeValues(bytes.substr(split.second), array.dtype, array.values);
  return array;
}

absl::StatusOr<NpyArray> ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open the npy file (", std::strerror(errno), ")"));
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": cannot read the npy file"));
  return ParseNpy(bytes, path);
}

absl::StatusOr<std::string> EncodeNpyF32(absl::Span<const int64_t> shape,
                                         absl::Span<const float> values) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return absl::InvalidArgumentError(absl::StrCat("npy dimension ", dim));
    count *= dim;
  }
  if (count != static_cast<int64_t>(values.size())) {
    return absl::InvalidArgumentError(absl::StrCat("npy shape (", absl::StrJoin(shape, ", "),
                                                   ") holds ", count, " values, not ",
                                                   values.size()));
  }
  std::string dims = absl::StrJoin(shape, ", ");
  if (shape.size() == 1) dims += ",";  // Python's one-element tuple
  std::string header =
      absl::StrCat("{'descr': '<f4', 'fortran_order': False, 'shape': (", dims, "), }");
  const int64_t prefix = static_cast<int64_t>(kMagic.size()) + 4;
  const int64_t unpadded = prefix + static_cast<int64_t>(header.size()) + 1;  // + '\n'
  header.append((kAlign - unpadded % kAlign) % kAlign, ' ');
  header += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return out;
}

absl::Status WriteNpyF32(const std::string& path, absl::Span<const int64_t> shape,
                         absl::Span<const float> values) {
  ASSIGN_OR_RETURN(std::string bytes, EncodeNpyF32(shape, values));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot create the npy file (", std::strerror(errno), ")"));
  }
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat(path, ": writing the npy file failed"));
  return absl::OkStatus();
}

}  // namespace tandem
