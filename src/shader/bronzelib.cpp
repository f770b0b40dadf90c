#include "shader/bronzelib.hpp"

#include <sys/utsname.h>

#include <cstring>

#include "bronze/error.hpp"
#include "jit/sha256.hpp"

namespace bronze::shader {
namespace {
constexpr char kMagic[4] = {'B', 'R', 'Z', 'L'};
// 2: objects whose layout tables give every parameter's slot (rewrite.hpp).
// A version-1 file still loads: its objects are dropped and its source is
// built again.
constexpr std::uint32_t kVersion = 2, kOldestVersion = 1;
enum Kind : std::uint32_t { kSource = 1, kFilename = 2, kObject = 3 };

void put32(std::vector<std::uint8_t>& o, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) o.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put64(std::vector<std::uint8_t>& o, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) o.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void section(std::vector<std::uint8_t>& o, Kind k, const std::string& name, const std::uint8_t* p, std::size_t n) {
  put32(o, k);
  put32(o, static_cast<std::uint32_t>(name.size()));
  o.insert(o.end(), name.begin(), name.end());
  put64(o, n);
  o.insert(o.end(), p, p + n);
  std::uint8_t d[32];
  jit::Sha256().update(p, n).digest(d);
  o.insert(o.end(), d, d + 32);
}

struct Reader {
  const std::uint8_t* p;
  std::size_t n, pos = 0;
  void need(std::size_t k, const char* what) {
    if (k > n - pos) throw ValueError(std::string("truncated .bronzelib: ") + what + " runs past the end");
  }
  std::uint64_t get(int bytes, const char* what) {
    need(bytes, what);
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(p[pos + i]) << (8 * i);
    pos += bytes;
    return v;
  }
};
}  // namespace

std::string host_cpu_target() {
  struct utsname u;
  std::string machine = ::uname(&u) == 0 ? u.machine : "unknown";
  return "cpu-" + machine + "-linux";
}

std::vector<std::uint8_t> encode_library(const LibraryFile& f) {
  std::vector<std::uint8_t> o(kMagic, kMagic + 4);
  put32(o, kVersion);
  put32(o, static_cast<std::uint32_t>(2 + f.objects.size()));
  section(o, kSource, "", reinterpret_cast<const std::uint8_t*>(f.source.data()), f.source.size());
  section(o, kFilename, "", reinterpret_cast<const std::uint8_t*>(f.filename.data()), f.filename.size());
  for (const auto& [target, bytes] : f.objects) section(o, kObject, target, bytes.data(), bytes.size());
  return o;
}

LibraryFile decode_library(const std::uint8_t* data, std::size_t size) {
  if (size < 4 || std::memcmp(data, kMagic, 4) != 0)
    throw ValueError("not a bronze library: the data does not start with \"BRZL\"");
  Reader r{data, size};
  r.pos = 4;
  std::uint64_t version = r.get(4, "the version");
  if (version < kOldestVersion || version > kVersion)
    throw ValueError("unsupported .bronzelib version " + std::to_string(version) + " (this bronze reads " +
                     std::to_string(kOldestVersion) + " to " + std::to_string(kVersion) + ")");
  std::uint64_t count = r.get(4, "the section count");
  LibraryFile f;
  bool have_source = false;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t kind = r.get(4, "a section kind");
    std::uint64_t name_len = r.get(4, "a section name length");
    r.need(name_len, "a section name");
    std::string name(reinterpret_cast<const char*>(data + r.pos), name_len);
    r.pos += name_len;
    std::uint64_t len = r.get(8, "a section length");
    r.need(len, "a section");
    const std::uint8_t* body = data + r.pos;
    r.pos += len;
    r.need(32, "a section checksum");
    std::uint8_t d[32];
    jit::Sha256().update(body, len).digest(d);
    if (std::memcmp(d, data + r.pos, 32) != 0)
      throw ValueError("corrupt .bronzelib: checksum mismatch in section " + std::to_string(i));
    r.pos += 32;
    if (kind == kSource) {
      f.source.assign(reinterpret_cast<const char*>(body), len);
      have_source = true;
    } else if (kind == kFilename) {
      f.filename.assign(reinterpret_cast<const char*>(body), len);
    } else if (kind == kObject && version == kVersion) {
      f.objects.emplace_back(name, std::vector<std::uint8_t>(body, body + len));
    }  // unknown kinds: from a newer writer, skipped
  }
  if (!have_source) throw ValueError("corrupt .bronzelib: no source section");
  return f;
}

}  // namespace bronze::shader
