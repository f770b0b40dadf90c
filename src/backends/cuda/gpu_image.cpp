#include "backends/cuda/gpu_image.hpp"

#include <algorithm>
#include <cstring>

#include "bronze/error.hpp"

namespace bronze::cuda {
bool is_ptx(const std::uint8_t* p, std::size_t n) {
  std::string head(reinterpret_cast<const char*>(p), std::min<std::size_t>(n, 4096));
  return head.find(".version") != std::string::npos && head.find(".target") != std::string::npos;
}

namespace {
// ".param .u64 .ptr .global .align 4 name" -> (type, name, array bytes)
KernelParam ptx_param(const std::string& decl, int binding) {
  KernelParam p;
  p.binding = p.index = binding;
  std::vector<std::string> words;
  std::size_t pos = 0;
  while (pos < decl.size()) {
    std::size_t b = decl.find_first_not_of(" \t\r\n", pos);
    if (b == std::string::npos) break;
    std::size_t e = decl.find_first_of(" \t\r\n", b);
    words.push_back(decl.substr(b, e == std::string::npos ? std::string::npos : e - b));
    pos = e == std::string::npos ? decl.size() : e;
  }
  std::string type, name = words.empty() ? "" : words.back();
  bool ptr = false;
  for (const auto& w : words) {
    if (w == ".ptr") ptr = true;
    if (w.size() > 2 && w[0] == '.' && (w[1] == 'u' || w[1] == 's' || w[1] == 'f' || w[1] == 'b') &&
        std::isdigit(static_cast<unsigned char>(w[2])))
      type = w.substr(1);
  }
  std::size_t bracket = name.find('[');
  p.name = name.substr(0, bracket);
  if (bracket != std::string::npos) {  // .b8 name[16]: a struct passed by value
    p.kind = ParamKind::Scalar;
    p.by_value = true;
    p.type = "bytes";
    p.size = std::strtoull(name.c_str() + bracket + 1, nullptr, 10);
    return p;
  }
  static const struct { const char* ptx; const char* type; std::size_t size; } table[] = {
      {"f32", "float", 4}, {"f64", "double", 8}, {"s32", "int", 4},    {"u32", "uint", 4},   {"b32", "uint", 4},
      {"s16", "short", 2}, {"u16", "ushort", 2}, {"b16", "ushort", 2}, {"s8", "char", 1},    {"u8", "uchar", 1},
      {"b8", "uchar", 1},  {"s64", "long", 8}};
  if (ptr || type == "u64" || type == "b64") {
    p.kind = ParamKind::Buffer;
    p.type = "void";
    return p;
  }
  for (const auto& e : table)
    if (type == e.ptx) {
      p.kind = ParamKind::Scalar;
      p.by_value = true;
      p.type = e.type;
      p.size = e.size;
      return p;
    }
  throw ValueError("PTX parameter '" + decl + "' has a type bronze does not read; pass signatures=");
}
}  // namespace

bool is_gpu_image(const std::uint8_t* p, std::size_t n) {
  static const std::uint8_t elf[] = {0x7f, 'E', 'L', 'F'}, fatbin[] = {0x50, 0xed, 0x55, 0xba};
  return n >= 4 && (std::memcmp(p, elf, 4) == 0 || std::memcmp(p, fatbin, 4) == 0 || is_ptx(p, n));
}

std::vector<CudaKernel> parse_ptx_entries(const std::string& ptx) {
  std::vector<CudaKernel> out;
  for (std::size_t pos = ptx.find(".entry"); pos != std::string::npos; pos = ptx.find(".entry", pos + 6)) {
    std::size_t open = ptx.find('(', pos), brace = ptx.find('{', pos);
    std::size_t name_begin = ptx.find_first_not_of(" \t", pos + 6);
    std::size_t name_end = ptx.find_first_of(" \t\r\n(", name_begin);
    CudaKernel k;
    k.extern_c = true;
    k.info.name = ptx.substr(name_begin, name_end - name_begin);
    if (open != std::string::npos && open < brace) {
      std::size_t close = ptx.find(')', open);
      std::string list = ptx.substr(open + 1, close - open - 1);
      std::size_t b = 0;
      while (b < list.size()) {
        std::size_t e = list.find(',', b);
        std::string decl = list.substr(b, e == std::string::npos ? std::string::npos : e - b);
        if (decl.find(".param") != std::string::npos)
          k.info.params.push_back(ptx_param(decl, static_cast<int>(k.info.params.size())));
        b = e == std::string::npos ? list.size() : e + 1;
      }
    }
    for (std::size_t i = 0; i < k.info.params.size(); ++i) k.info.bound.push_back(static_cast<int>(i));
    out.push_back(std::move(k));
  }
  if (out.empty()) throw ValueError("the PTX module declares no .entry kernel");
  return out;
}

}  // namespace bronze::cuda
