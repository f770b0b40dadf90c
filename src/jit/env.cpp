#include "jit/env.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bronze/error.hpp"

namespace bronze::jit {
namespace {

// $var, or nullptr when unset or empty.
const char* value_of(const char* var) {
  const char* v = std::getenv(var);
  return v && *v ? v : nullptr;
}

[[noreturn]] void refuse(const char* var, const char* value, const std::string& expected) {
  throw ValueError(std::string("$") + var + "='" + value + "' is not " + expected);
}

// Digits first: strtoull and strtod take leading spaces and signs ("-1" as
// 2^64 - 1), strtod also "inf", "nan" and hexadecimal.
bool starts_with_digit(const char* v) { return std::isdigit(static_cast<unsigned char>(v[0])) != 0; }

std::string lower(const char* v) {
  std::string s = v;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

unsigned long long env_size(const char* var, unsigned long long fallback) {
  const char* v = value_of(var);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  unsigned long long n = starts_with_digit(v) ? std::strtoull(v, &end, 10) : 0;
  if (errno == ERANGE) n = 0;
  std::string unit = end ? end : "";
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  unsigned long long scale = unit.empty() ? 1 : unit == "K" ? 1ull << 10 : unit == "M" ? 1ull << 20
                             : unit == "G" ? 1ull << 30 : unit == "T" ? 1ull << 40 : 0;
  if (end == v || scale == 0 || n == 0 || n > ~0ull / scale) refuse(var, v, "a size (e.g. 4G, 512M, 1073741824)");
  return n * scale;
}

bool env_bool(const char* var, bool fallback) {
  const char* v = value_of(var);
  if (!v) return fallback;
  const std::string s = lower(v);
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  refuse(var, v, "a switch (1, true, yes, on or 0, false, no, off)");
}

long long env_count(const char* var, long long fallback, long long min) {
  const char* v = value_of(var);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long n = starts_with_digit(v) ? std::strtoll(v, &end, 10) : 0;
  if (end == nullptr || *end || errno == ERANGE || n < min) refuse(var, v, "a whole number >= " + std::to_string(min));
  return n;
}

int env_choice(const char* var, int fallback, std::initializer_list<const char*> names) {
  const char* v = value_of(var);
  if (!v) return fallback;
  const std::string s = lower(v);
  std::string expected;
  int i = 0;
  for (const char* n : names) {
    if (s == n) return i;
    expected += std::string(i == 0 ? "" : i + 1 == static_cast<int>(names.size()) ? " or " : ", ") + n;
    ++i;
  }
  refuse(var, v, expected);
}

double env_seconds(const char* var, double fallback, double max) {
  const char* v = value_of(var);
  if (!v) return fallback;
  char* end = nullptr;
  const bool decimal = (starts_with_digit(v) || (v[0] == '.' && starts_with_digit(v + 1))) && !std::strpbrk(v, "xX");
  const double s = decimal ? std::strtod(v, &end) : -1;
  if (end == nullptr || *end || !(s >= 0 && s <= max)) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", max);
    refuse(var, v, std::string("a number of seconds from 0 to ") + limit + " (e.g. 10 or 0.5; 0 for none)");
  }
  return s;
}

}  // namespace bronze::jit
