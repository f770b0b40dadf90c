#include "air/metallib.hpp"

#include <cstring>

#include "bronze/error.hpp"

namespace bronze::air {
namespace {

// A bounds-checked view of the file: every read names what it reads, and a
// read past the end is the file's error.
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  void need(std::size_t off, std::size_t n, const char* what) const {
    if (off > size_ || n > size_ - off)
      throw ValueError(std::string("not a valid .metallib: ") + what + " at byte " + std::to_string(off) +
                       " runs past the end of the file (" + std::to_string(size_) + " bytes)");
  }
  template <class T> T le(std::size_t off, const char* what) const {  // little-endian
    need(off, sizeof(T), what);
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(data_[off + i]) << (8 * i));
    return v;
  }
  template <class T> T be(std::size_t off, const char* what) const {  // big-endian (fat headers)
    need(off, sizeof(T), what);
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>((v << 8) | data_[off + i]);
    return v;
  }
  const std::uint8_t* at(std::size_t off) const { return data_ + off; }
  std::size_t size() const { return size_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
};

bool magic(const std::uint8_t* p, std::size_t n, const char* m) { return n >= 4 && std::memcmp(p, m, 4) == 0; }

constexpr std::uint32_t kFat = 0xCAFEBABE, kFat64 = 0xCAFEBABF;

std::string platform_name(std::uint8_t os, std::uint16_t major, std::uint16_t minor) {
  static const char* names[] = {"unknown", "macOS", "iOS", "tvOS", "watchOS", "bridgeOS", "Mac Catalyst",
                                "iOS simulator", "tvOS simulator", "watchOS simulator", "visionOS",
                                "visionOS simulator"};
  const unsigned i = os & 0x7F;
  std::string name = i < sizeof names / sizeof *names ? names[i] : "platform " + std::to_string(i);
  return name + " " + std::to_string(major) + "." + std::to_string(minor);
}

std::string hex(const std::uint8_t* p, std::size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

// The slice of a fat file that is a .metallib, else the bytes themselves.
Reader thin(const Reader& r) {
  if (r.size() < 8) return r;
  const std::uint32_t m = r.be<std::uint32_t>(0, "the magic");
  if (m != kFat && m != kFat64) return r;
  const std::uint32_t n = r.be<std::uint32_t>(4, "the fat header's slice count");
  const std::size_t entry = m == kFat ? 20 : 32;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::size_t at = 8 + static_cast<std::size_t>(i) * entry;
    const std::uint64_t off = m == kFat ? r.be<std::uint32_t>(at + 8, "a fat slice's offset")
                                        : r.be<std::uint64_t>(at + 8, "a fat slice's offset");
    const std::uint64_t size = m == kFat ? r.be<std::uint32_t>(at + 12, "a fat slice's size")
                                         : r.be<std::uint64_t>(at + 16, "a fat slice's size");
    r.need(off, size, "a fat slice");
    if (magic(r.at(off), size, "MTLB")) return Reader(r.at(off), size);
  }
  throw ValueError("not a valid .metallib: a fat file with no Metal library among its " + std::to_string(n) +
                   " slices");
}

// One function's tagged fields: tag (4 bytes), size (u16), data; ENDT ends them.
Function read_function(const Reader& r, std::size_t at, std::size_t end, const Reader& bitcode,
                       std::size_t index) {
  Function f;
  bool has_name = false, has_offset = false, has_size = false;
  std::uint64_t bc_offset = 0, bc_size = 0;
  const std::string which = "function " + std::to_string(index);
  for (std::size_t p = at;;) {
    if (p + 4 > end) throw ValueError("not a valid .metallib: " + which + "'s fields run past its entry");
    if (magic(r.at(p), 4, "ENDT")) break;
    const std::string tag(reinterpret_cast<const char*>(r.at(p)), 4);
    const std::uint16_t n = r.le<std::uint16_t>(p + 4, "a field's size");
    const std::size_t v = p + 6;
    if (v + n > end) throw ValueError("not a valid .metallib: " + which + "'s field " + tag + " runs past its entry");
    if (tag == "NAME") {
      const char* s = reinterpret_cast<const char*>(r.at(v));
      f.name.assign(s, strnlen(s, n));
      has_name = true;
    } else if (tag == "TYPE" && n >= 1) {
      f.type = static_cast<FunctionType>(*r.at(v));
    } else if (tag == "HASH" && n >= 32) {
      f.hash = hex(r.at(v), 32);
    } else if (tag == "OFFT" && n >= 24) {
      bc_offset = r.le<std::uint64_t>(v + 16, "the bitcode offset");  // after the two metadata offsets
      has_offset = true;
    } else if (tag == "MDSZ" && n >= 8) {
      bc_size = r.le<std::uint64_t>(v, "the bitcode size");
      has_size = true;
    } else if (tag == "VERS" && n >= 8) {
      f.air_major = r.le<std::uint16_t>(v, "VERS");
      f.air_minor = r.le<std::uint16_t>(v + 2, "VERS");
      f.language_major = r.le<std::uint16_t>(v + 4, "VERS");
      f.language_minor = r.le<std::uint16_t>(v + 6, "VERS");
    }
    p = v + n;
  }
  if (!has_name || !has_offset || !has_size)
    throw ValueError("not a valid .metallib: " + which + " lacks its " +
                     (!has_name ? "name" : !has_offset ? "offsets" : "bitcode size"));
  bitcode.need(bc_offset, bc_size, ("the bitcode of '" + f.name + "'").c_str());
  const Reader m(bitcode.at(bc_offset), bc_size);
  // The bitcode wrapper (0x0B17C0DE): magic, version, offset, size, CPU type.
  if (bc_size >= 20 && m.le<std::uint32_t>(0, "the bitcode wrapper") == 0x0B17C0DEu) {
    const std::uint32_t off = m.le<std::uint32_t>(8, "the wrapped bitcode's offset");
    const std::uint32_t size = m.le<std::uint32_t>(12, "the wrapped bitcode's size");
    m.need(off, size, ("the wrapped bitcode of '" + f.name + "'").c_str());
    f.bitcode = m.at(off);
    f.bitcode_size = size;
  } else {
    f.bitcode = m.at(0);
    f.bitcode_size = bc_size;
  }
  if (!magic(f.bitcode, f.bitcode_size, "BC\xC0\xDE"))
    throw ValueError("not a valid .metallib: the bitcode of '" + f.name + "' is not LLVM bitcode");
  return f;
}

}  // namespace

bool is_metallib(const std::uint8_t* data, std::size_t size) {
  if (magic(data, size, "MTLB")) return true;
  if (size < 8) return false;
  const std::uint32_t m = (std::uint32_t(data[0]) << 24) | (std::uint32_t(data[1]) << 16) |
                          (std::uint32_t(data[2]) << 8) | data[3];
  if (m != kFat && m != kFat64) return false;
  try {
    thin(Reader(data, size));
    return true;
  } catch (const ValueError&) {
    return false;
  }
}

Metallib read_metallib(const std::uint8_t* data, std::size_t size) {
  const Reader r = thin(Reader(data, size));
  if (!magic(r.at(0), r.size(), "MTLB")) throw ValueError("not a .metallib (no MTLB magic)");
  Metallib lib;
  // Header: magic, platform (u16), version (u16 major, u16 minor), library
  // type (u8), OS (u8), OS version (u16, u16), file size (u64), then
  // offset/size pairs (u64) of the function list, public metadata, private
  // metadata and bitcode.
  lib.file_major = r.le<std::uint16_t>(6, "the file version");
  lib.file_minor = r.le<std::uint16_t>(8, "the file version");
  lib.platform = platform_name(r.le<std::uint8_t>(11, "the target OS"), r.le<std::uint16_t>(12, "the OS version"),
                               r.le<std::uint16_t>(14, "the OS version"));
  const std::uint64_t file_size = r.le<std::uint64_t>(16, "the file size");
  if (file_size > r.size())
    throw ValueError("not a valid .metallib: its header says " + std::to_string(file_size) + " bytes, the file has " +
                     std::to_string(r.size()) + " (truncated?)");
  const std::uint64_t list_off = r.le<std::uint64_t>(24, "the function list's offset");
  const std::uint64_t list_size = r.le<std::uint64_t>(32, "the function list's size");
  const std::uint64_t bc_off = r.le<std::uint64_t>(72, "the bitcode section's offset");
  const std::uint64_t bc_size = r.le<std::uint64_t>(80, "the bitcode section's size");
  // The list: a u32 count, then `list_size` bytes of entries.
  r.need(list_off, 4, "the function count");
  r.need(list_off + 4, list_size, "the function list");
  r.need(bc_off, bc_size, "the bitcode section");
  const Reader bitcode(r.at(bc_off), bc_size);
  const std::size_t list_end = list_off + 4 + list_size;
  const std::uint32_t count = r.le<std::uint32_t>(list_off, "the function count");
  if (count > list_size / 8)  // each entry is at least its size and ENDT
    throw ValueError("not a valid .metallib: " + std::to_string(count) + " functions cannot fit its function list (" +
                     std::to_string(list_size) + " bytes)");
  lib.functions.reserve(count);
  std::size_t p = list_off + 4;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t entry = r.le<std::uint32_t>(p, "a function entry's size");
    if (entry < 8 || entry > list_end - p)
      throw ValueError("not a valid .metallib: function " + std::to_string(i) + "'s entry (" + std::to_string(entry) +
                       " bytes) does not fit the function list");
    lib.functions.push_back(read_function(r, p + 4, p + entry, bitcode, i));
    p += entry;
  }
  return lib;
}

const char* function_type_name(FunctionType t) {
  switch (t) {
    case FunctionType::Vertex: return "vertex";
    case FunctionType::Fragment: return "fragment";
    case FunctionType::Kernel: return "kernel";
    case FunctionType::Unqualified: return "unqualified";
    case FunctionType::Visible: return "visible";
    case FunctionType::Extern: return "extern";
    case FunctionType::Intersection: return "intersection";
    case FunctionType::Mesh: return "mesh";
    case FunctionType::Object: return "object";
  }
  return "unknown";
}

}  // namespace bronze::air
