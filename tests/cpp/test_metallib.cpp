// The .metallib container reader (src/air/metallib): the layout Apple's
// tools write, and every malformed offset or size a clear ValueError.
// (Reading the AIR modules needs libLLVM: tests/python/test_metallib.py.)
#include "air/metallib.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "bronze/error.hpp"

using bronze::ValueError;
namespace air = bronze::air;

namespace {
using Bytes = std::vector<std::uint8_t>;

template <class T> void put(Bytes& b, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
template <class T> void set(Bytes& b, std::size_t at, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void tag(Bytes& b, const char* name, const Bytes& data) {
  b.insert(b.end(), name, name + 4);
  put<std::uint16_t>(b, static_cast<std::uint16_t>(data.size()));
  b.insert(b.end(), data.begin(), data.end());
}

// Two functions, the second's module in a bitcode wrapper, as Apple's are.
Bytes library() {
  const Bytes raw = {'B', 'C', 0xC0, 0xDE, 1, 2, 3, 4};
  Bytes wrapped;
  put<std::uint32_t>(wrapped, 0x0B17C0DE);
  put<std::uint32_t>(wrapped, 0);
  put<std::uint32_t>(wrapped, 20);
  put<std::uint32_t>(wrapped, static_cast<std::uint32_t>(raw.size()));
  put<std::uint32_t>(wrapped, 0xFFFFFFFF);
  wrapped.insert(wrapped.end(), raw.begin(), raw.end());
  Bytes modules = raw;
  modules.insert(modules.end(), wrapped.begin(), wrapped.end());
  Bytes list;
  std::uint64_t offset = 0;
  for (const auto& [name, module] : {std::pair<std::string, Bytes>{"first", raw}, {"second_kernel", wrapped}}) {
    Bytes f;
    tag(f, "NAME", Bytes(name.begin(), name.end() + 1));
    tag(f, "TYPE", {2});
    tag(f, "HASH", Bytes(32, 0xAB));
    Bytes offt;
    put<std::uint64_t>(offt, 0);
    put<std::uint64_t>(offt, 0);
    put<std::uint64_t>(offt, offset);
    tag(f, "OFFT", offt);
    Bytes mdsz;
    put<std::uint64_t>(mdsz, module.size());
    tag(f, "MDSZ", mdsz);
    tag(f, "VERS", {2, 0, 6, 0, 3, 0, 1, 0});
    f.insert(f.end(), {'E', 'N', 'D', 'T'});
    put<std::uint32_t>(list, static_cast<std::uint32_t>(f.size() + 4));
    list.insert(list.end(), f.begin(), f.end());
    offset += module.size();
  }
  Bytes b = {'M', 'T', 'L', 'B'};
  put<std::uint16_t>(b, 0x8001);
  put<std::uint16_t>(b, 2);
  put<std::uint16_t>(b, 7);
  b.push_back(0);
  b.push_back(0x81);  // macOS
  put<std::uint16_t>(b, 14);
  put<std::uint16_t>(b, 0);
  const std::uint64_t list_off = 88, bc_off = list_off + 4 + list.size();
  put<std::uint64_t>(b, bc_off + modules.size());
  for (std::uint64_t v : {list_off, std::uint64_t(list.size()), bc_off, std::uint64_t(0), bc_off, std::uint64_t(0),
                          bc_off, std::uint64_t(modules.size())})
    put<std::uint64_t>(b, v);
  put<std::uint32_t>(b, 2);
  b.insert(b.end(), list.begin(), list.end());
  b.insert(b.end(), modules.begin(), modules.end());
  return b;
}

std::string error_of(const Bytes& b) {
  try {
    air::read_metallib(b.data(), b.size());
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(Metallib, ReadsTheFunctionListAndUnwrapsBitcode) {
  const Bytes b = library();
  ASSERT_TRUE(air::is_metallib(b.data(), b.size()));
  const air::Metallib lib = air::read_metallib(b.data(), b.size());
  EXPECT_EQ(lib.platform, "macOS 14.0");
  EXPECT_EQ(lib.file_major, 2);
  EXPECT_EQ(lib.file_minor, 7);
  ASSERT_EQ(lib.functions.size(), 2u);
  for (const air::Function& f : lib.functions) {
    EXPECT_EQ(f.type, air::FunctionType::Kernel);
    std::string ab;
    for (int i = 0; i < 32; ++i) ab += "ab";
    EXPECT_EQ(f.hash, ab);
    EXPECT_EQ(f.air_major * 10 + f.air_minor, 26);
    EXPECT_EQ(f.language_major * 10 + f.language_minor, 31);
    ASSERT_EQ(f.bitcode_size, 8u);  // the module alone, wrapped or not
    EXPECT_EQ(std::memcmp(f.bitcode, "BC\xC0\xDE\x01\x02\x03\x04", 8), 0);
  }
  EXPECT_EQ(lib.functions[0].name, "first");
  EXPECT_EQ(lib.functions[1].name, "second_kernel");
}

TEST(Metallib, EveryBadOffsetOrSizeIsAValueError) {
  const Bytes good = library();
  auto with = [&](auto edit) {
    Bytes b = good;
    edit(b);
    return error_of(b);
  };
  EXPECT_NE(with([](Bytes& b) { b.resize(20); }).find("runs past the end"), std::string::npos);
  EXPECT_NE(with([](Bytes& b) { b.pop_back(); }).find("truncated"), std::string::npos);
  EXPECT_NE(with([](Bytes& b) { set<std::uint64_t>(b, 24, ~0ull - 2); }).find("the function count"), std::string::npos);
  EXPECT_NE(with([](Bytes& b) { set<std::uint64_t>(b, 32, 1ull << 62); }).find("the function list"), std::string::npos);
  EXPECT_NE(with([](Bytes& b) { set<std::uint32_t>(b, 88, 0xFFFFFFFF); }).find("cannot fit"), std::string::npos);
  EXPECT_NE(with([](Bytes& b) { set<std::uint32_t>(b, 92, 3); }).find("does not fit"), std::string::npos);
  EXPECT_NE(with([](Bytes& b) { set<std::uint32_t>(b, 92, 0x7FFFFFFF); }).find("does not fit"), std::string::npos);
  // The first field's size (NAME's) past its entry.
  EXPECT_NE(with([](Bytes& b) { set<std::uint16_t>(b, 100, 0xFFFF); }).find("runs past its entry"), std::string::npos);
  // The bitcode offset (OFFT's third value) and size (MDSZ) out of the section.
  const std::size_t offt = std::string(good.begin(), good.end()).find("OFFT") + 6 + 16;
  EXPECT_NE(with([&](Bytes& b) { set<std::uint64_t>(b, offt, ~0ull); }).find("the bitcode of 'first'"), std::string::npos);
  const std::size_t mdsz = std::string(good.begin(), good.end()).find("MDSZ") + 6;
  EXPECT_NE(with([&](Bytes& b) { set<std::uint64_t>(b, mdsz, 1ull << 40); }).find("the bitcode of 'first'"),
            std::string::npos);
  // The module is not bitcode.
  EXPECT_NE(with([](Bytes& b) { b[b.size() - 28 - 8] = 'X'; }).find("is not LLVM bitcode"), std::string::npos);
  // A field list without ENDT runs into the next entry's bounds.
  const std::size_t endt = std::string(good.begin(), good.end()).find("ENDT");
  EXPECT_NE(with([&](Bytes& b) { std::memcpy(&b[endt], "XXXX", 4); }).find("past its entry"), std::string::npos);
  EXPECT_EQ(error_of(Bytes{'B', 'R', 'Z', 'L'}), "not a .metallib (no MTLB magic)");
}

TEST(Metallib, AFatFileIsReadThroughItsMetalSlice) {
  const Bytes lib = library();
  Bytes fat;
  auto be32 = [&](std::uint32_t v) {
    for (int i = 3; i >= 0; --i) fat.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  be32(0xCAFEBABE);
  be32(2);
  const std::uint32_t first = 48, second = first + 16;
  for (auto [off, size] : {std::pair<std::uint32_t, std::uint32_t>{first, 16}, {second, std::uint32_t(lib.size())}}) {
    be32(0x01000013);
    be32(0);
    be32(off);
    be32(size);
    be32(4);
  }
  fat.resize(first, 0);
  fat.resize(second, 0x11);  // a slice that is not a Metal library
  fat.insert(fat.end(), lib.begin(), lib.end());
  ASSERT_TRUE(air::is_metallib(fat.data(), fat.size()));
  EXPECT_EQ(air::read_metallib(fat.data(), fat.size()).functions.size(), 2u);
  fat[8 + 20 + 12] = 0x7F;  // the second slice's size past the file
  EXPECT_FALSE(air::is_metallib(fat.data(), fat.size()));
  EXPECT_NE(error_of(fat).find("a fat slice"), std::string::npos);
}
