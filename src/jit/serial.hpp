// A plain record format for what bronze keeps in files it writes and reads
// back itself (the compile cache's unit records, the NVRTC worker's request
// and result): strings as "<length>:<bytes>" (any bytes), numbers as
// decimals, each followed by a space.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string>

namespace bronze::jit {

class RecordWriter {
 public:
  RecordWriter& str(const std::string& s) {
    out += std::to_string(s.size()) + ":";
    out.append(s);
    out += ' ';
    return *this;
  }
  RecordWriter& num(long long v) {
    out += std::to_string(v) + " ";
    return *this;
  }
  std::string out;
};

// Reads what RecordWriter wrote; any mismatch makes ok false and every read
// after it empty (the record is then not used).
class RecordReader {
 public:
  explicit RecordReader(const std::string& in) : in_(in) {}
  long long num() {
    if (!ok) return 0;
    char* end = nullptr;
    const long long v = std::strtoll(in_.c_str() + at_, &end, 10);
    if (end == in_.c_str() + at_ || *end != ' ') return fail();
    at_ = static_cast<std::size_t>(end - in_.c_str()) + 1;
    return v;
  }
  std::string str() {
    if (!ok) return {};
    char* end = nullptr;
    const unsigned long long n = std::strtoull(in_.c_str() + at_, &end, 10);
    const std::size_t b = static_cast<std::size_t>(end - in_.c_str()) + 1;
    if (end == in_.c_str() + at_ || *end != ':' || n >= in_.size() || b + n >= in_.size() || in_[b + n] != ' ') {
      fail();
      return {};
    }
    at_ = b + n + 1;
    return in_.substr(b, n);
  }
  bool ok = true;

 private:
  long long fail() {
    ok = false;
    at_ = in_.size();
    return 0;
  }
  const std::string& in_;
  std::size_t at_ = 0;
};

}  // namespace bronze::jit
