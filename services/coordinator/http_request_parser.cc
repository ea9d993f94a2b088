#include "services/coordinator/http_request_parser.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tandem {
namespace {

constexpr size_t kMaxChunkLineBytes = 1024;  // a chunk size and its extensions

// RFC 9110's tchar: the characters of a method or a header name.
bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::StrContains("!#$%&'*+-.^_`|~", c);
}

bool IsToken(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

// A field value's characters: visible ASCII, space, tab and obs-text (bytes >= 0x80).
bool IsFieldValue(absl::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u != 0x7f);
  });
}

// Whether a comma-separated header value lists `token` (case-insensitive).
bool HasToken(absl::string_view value, absl::string_view token) {
  for (absl::string_view part : absl::StrSplit(value, ',')) {
    if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(part), token)) return true;
  }
  return false;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoded; false for a malformed escape or a NUL.
bool PercentDecode(absl::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = HexDigit(in[i + 1]), lo = HexDigit(in[i + 2]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

}  // namespace

absl::string_view HttpRequest::Header(absl::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return "";
}

void HttpRequestParser::Reset() {
  const HttpLimits limits = limits_;
  *this = HttpRequestParser(limits);  // frees the line and body buffers
}

size_t HttpRequestParser::Fail(int status, std::string error) {
  state_ = State::kError;
  error_status_ = status;
  error_ = std::move(error);
  return 0;
}

bool HttpRequestParser::TakeLine(absl::string_view data, size_t* used, size_t max_bytes,
                                 int over_status) {
  while (*used < data.size()) {
    const char c = data[(*used)++];
    if (cr_) {
      cr_ = false;
      if (c == '\n') return true;
      Fail(400, "a bare CR in the request");
      return false;
    }
    if (c == '\r') {
      cr_ = true;
    } else if (c == '\n') {
      Fail(400, "a line not ended by CRLF");
      return false;
    } else if (c == '\0') {
      Fail(400, "a NUL byte in the request head");
      return false;
    } else {
      line_.push_back(c);
    }
    if (line_.size() + 2 > max_bytes) {
      if (over_status == 414) {
        Fail(414, absl::StrCat("the request line is over ", limits_.max_header_bytes, " bytes"));
      } else if (over_status == 431) {
        Fail(431, absl::StrCat("the request head is over ", limits_.max_header_bytes, " bytes"));
      } else {
        Fail(over_status, "a chunk size line is too long");
      }
      return false;
    }
  }
  return false;
}

size_t HttpRequestParser::Feed(absl::string_view data) {
  size_t used = 0;
  for (;;) {
    switch (state_) {
      case State::kHead:
      case State::kTrailer: {
        const size_t budget =
            limits_.max_header_bytes - std::min(head_bytes_, limits_.max_header_bytes);
        if (used < data.size()) started_ = true;
        const int over = state_ == State::kHead && !request_line_done_ ? 414 : 431;
        if (!TakeLine(data, &used, budget, over)) return used;
        head_bytes_ += line_.size() + 2;
        if (state_ == State::kTrailer) {
          HeaderLine(/*trailer=*/true);
        } else if (!request_line_done_) {
          RequestLine();
        } else {
          HeaderLine(/*trailer=*/false);
        }
        std::string().swap(line_);
        if (state_ == State::kBody || state_ == State::kDone) return used;  // the head is in
        break;
      }
      case State::kBody:
        if (!body_checked_) {  // the caller has seen the head: now the body's length counts
          body_checked_ = true;
          if (request_.content_length > static_cast<int64_t>(limits_.max_body_bytes)) {
            Fail(413, absl::StrCat("the body is over ", limits_.max_body_bytes, " bytes"));
            return used;
          }
          if (request_.chunked) {
            state_ = State::kChunkSize;
            break;
          }
        }
        [[fallthrough]];
      case State::kChunkData: {
        const size_t n = static_cast<size_t>(
            std::min<int64_t>(remaining_, static_cast<int64_t>(data.size() - used)));
        request_.body.append(data.data() + used, n);
        used += n;
        remaining_ -= n;
        if (remaining_ > 0) return used;
        if (state_ == State::kBody) {
          state_ = State::kDone;
          return used;
        }
        state_ = State::kChunkDataEnd;
        break;
      }
      case State::kChunkSize:
      case State::kChunkDataEnd:
        if (!TakeLine(data, &used, kMaxChunkLineBytes, 400)) return used;
        if (state_ == State::kChunkDataEnd) {
          if (!line_.empty()) {
            Fail(400, "a chunk longer than its size");
            return used;
          }
          state_ = State::kChunkSize;
        } else {
          ChunkSizeLine();
        }
        line_.clear();
        if (state_ == State::kError) return used;
        break;
      case State::kDone:
      case State::kError:
        return used;
    }
  }
}

void HttpRequestParser::RequestLine() {
  if (line_.empty()) return;  // an empty line before the request line is ignored (RFC 9112)
  const std::vector<absl::string_view> parts = absl::StrSplit(line_, ' ');
  if (parts.size() != 3 || !IsToken(parts[0])) {
    Fail(400, "a malformed request line");
    return;
  }
  const absl::string_view target = parts[1], version = parts[2];
  if (target.empty() || target[0] != '/' ||
      !std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
    Fail(400, "a request target that is not an absolute path");
    return;
  }
  if (version == "HTTP/1.1" || version == "HTTP/1.0") {
    request_.minor_version = version.back() - '0';
  } else if (version.size() == 8 && absl::StartsWith(version, "HTTP/") &&
             absl::ascii_isdigit(version[5]) && version[6] == '.' &&
             absl::ascii_isdigit(version[7])) {
    Fail(505, absl::StrCat("HTTP version ", version.substr(5), " is not supported"));
    return;
  } else {
    Fail(400, "a malformed HTTP version");
    return;
  }
  request_.method = std::string(parts[0]);
  request_.target = std::string(target);
  if (!PercentDecode(target.substr(0, target.find('?')), &request_.path)) {
    Fail(400, "a malformed percent-escape in the path");
    return;
  }
  request_line_done_ = true;
}

void HttpRequestParser::HeaderLine(bool trailer) {
  if (line_.empty()) {
    if (trailer) {
      state_ = State::kDone;
    } else {
      EndOfHead();
    }
    return;
  }
  if (++header_count_ > limits_.max_header_count) {
    Fail(431, absl::StrCat("the request has over ", limits_.max_header_count, " header lines"));
    return;
  }
  if (line_[0] == ' ' || line_[0] == '\t') {
    Fail(400, "a folded header line");
    return;
  }
  const size_t colon = line_.find(':');
  if (colon == std::string::npos) {
    Fail(400, "a header line with no colon");
    return;
  }
  const absl::string_view name(line_.data(), colon);
  if (!IsToken(name)) {
    Fail(400, "a malformed header name");
    return;
  }
  const absl::string_view value =
      absl::StripAsciiWhitespace(absl::string_view(line_).substr(colon + 1));
  if (!IsFieldValue(value)) {
    Fail(400, "a control character in a header value");
    return;
  }
  if (trailer) return;  // trailer fields are checked, counted, and dropped
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "content-length") ++content_length_headers_;
  if (lower == "transfer-encoding") ++transfer_encoding_headers_;
  if (lower == "host") ++host_headers_;
  request_.headers.emplace_back(std::move(lower), std::string(value));
}

void HttpRequestParser::EndOfHead() {
  HttpRequest& r = request_;
  if (host_headers_ > 1) {
    Fail(400, "two Host headers");
    return;
  }
  if (transfer_encoding_headers_ > 0) {
    if (content_length_headers_ > 0) {
      Fail(400, "Content-Length with Transfer-Encoding");
      return;
    }
    if (transfer_encoding_headers_ > 1 ||
        !absl::EqualsIgnoreCase(r.Header("transfer-encoding"), "chunked") || r.minor_version == 0) {
      Fail(400, "a Transfer-Encoding other than chunked (HTTP/1.1)");
      return;
    }
    r.chunked = true;
  }
  if (content_length_headers_ > 1) {
    Fail(400, "two Content-Length headers");
    return;
  }
  if (content_length_headers_ == 1) {
    const absl::string_view value = r.Header("content-length");
    if (value.empty() || !std::all_of(value.begin(), value.end(), absl::ascii_isdigit)) {
      Fail(400, "a malformed Content-Length");
      return;
    }
    // Past 18 digits it cannot be under the limit (nor fit an int64).
    r.content_length = value.size() > 18 ? INT64_MAX : 0;
    if (value.size() <= 18) (void)absl::SimpleAtoi(value, &r.content_length);
  }
  const absl::string_view connection = r.Header("connection");
  r.keep_alive =
      r.minor_version == 1 ? !HasToken(connection, "close") : HasToken(connection, "keep-alive");
  r.expect_continue =
      r.minor_version == 1 && absl::EqualsIgnoreCase(r.Header("expect"), "100-continue");
  remaining_ = std::max<int64_t>(r.content_length, 0);
  head_complete_ = true;
  state_ = State::kBody;
}

void HttpRequestParser::ChunkSizeLine() {
  const absl::string_view digits = absl::string_view(line_).substr(0, line_.find(';'));
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), absl::ascii_isxdigit)) {
    Fail(400, "a malformed chunk size");
    return;
  }
  if (digits.size() > 15) {
    Fail(413, absl::StrCat("the body is over ", limits_.max_body_bytes, " bytes"));
    return;
  }
  int64_t size = 0;
  for (char c : digits) size = size * 16 + HexDigit(c);
  if (request_.body.size() + static_cast<uint64_t>(size) > limits_.max_body_bytes) {
    Fail(413, absl::StrCat("the body is over ", limits_.max_body_bytes, " bytes"));
    return;
  }
  remaining_ = size;
  state_ = size == 0 ? State::kTrailer : State::kChunkData;
}

}  // namespace tandem
