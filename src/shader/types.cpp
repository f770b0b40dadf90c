#include "shader/types.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "bronze/error.hpp"

namespace bronze::shader {

ScalarType scalar_type(const std::string& type_in) {
  std::string t = type_in;
  for (const char* prefix : {"metal::", "::", "packed_", "atomic_"})
    if (t.rfind(prefix, 0) == 0) t = t.substr(std::strlen(prefix));
  if (t.rfind("atomic<", 0) == 0 && t.back() == '>') t = t.substr(7, t.size() - 8);
  // metal::array<T, N>: its elements are T (a list of N of them packs it).
  if (t.rfind("array<", 0) == 0 && t.back() == '>' && t.rfind(',') != std::string::npos) {
    std::string elem = t.substr(6, t.rfind(',') - 6);
    while (!elem.empty() && elem.back() == ' ') elem.pop_back();
    return scalar_type(elem);
  }
  ScalarType st;
  char last = t.empty() ? ' ' : t.back();
  if (last >= '2' && last <= '4') {
    std::string base = t.substr(0, t.size() - 1);
    if (base != "int" && base != "uint" && base != "int1" && base != "int3") {
      // "int32_t"/"uint64_t" end in digits but are scalars; vectors are name+N.
      st = scalar_type(base);
      if (st.known) st.lanes = last - '0';
      if (st.known) return st;
    } else if (t == "int2" || t == "int3" || t == "int4" || t == "uint2" || t == "uint3" || t == "uint4") {
      st = scalar_type(base);
      st.lanes = last - '0';
      return st;
    }
  }
  static const struct {
    const char* name;
    DType dtype;
    bool is_unsigned;
  } table[] = {
      {"float", DType::Float32, false},   {"half", DType::Float16, false},    {"bfloat", DType::BFloat16, false},
      {"double", DType::Float64, false},  {"int", DType::Int32, false},       {"int32_t", DType::Int32, false},
      {"uint", DType::UInt32, true},      {"uint32_t", DType::UInt32, true},  {"unsigned", DType::UInt32, true},
      {"short", DType::Int16, false},     {"int16_t", DType::Int16, false},   {"ushort", DType::UInt16, true},
      {"uint16_t", DType::UInt16, true},   {"char", DType::Int8, false},       {"int8_t", DType::Int8, false},
      {"uchar", DType::UInt8, true},      {"uint8_t", DType::UInt8, true},    {"bool", DType::Bool, false},
      {"long", DType::Int64, false},      {"int64_t", DType::Int64, false},   {"ulong", DType::UInt64, true},
      {"uint64_t", DType::UInt64, true},  {"size_t", DType::UInt64, true},
  };
  for (const auto& e : table)
    if (t == e.name) {
      st.known = true;
      st.dtype = e.dtype;
      st.is_unsigned = e.is_unsigned;
      return st;
    }
  return st;
}

std::string type_name(unsigned long long code) {
  static const char* const scalars[] = {"",      "float", "half",   "bfloat", "double", "char", "uchar",
                                        "short", "ushort", "int",   "uint",   "long",   "ulong", "bool"};
  unsigned long long scalar = code & 15, lanes = (code >> 4) & 7;
  if (scalar == 0 || scalar > 13) return "";
  std::string s = scalars[scalar];
  if (lanes) s += std::to_string(lanes);
  if (code & 128) s = "packed_" + s;
  if (code & 256) s = "atomic_" + s;
  return s;
}

void apply_layout(KernelInfo& info, const unsigned long long* layout) {
  std::vector<std::pair<long long, int>> slots;  // (slot, parameter) of the present bindings
  for (std::size_t i = 0; i < info.params.size(); ++i) {
    KernelParam& p = info.params[i];
    const unsigned long long* w = layout + 4 * i;
    const auto slot = static_cast<long long>(w[0]);
    p.size = static_cast<std::size_t>(w[2]);
    std::string resolved = type_name(w[3]);
    if (!resolved.empty()) p.type = resolved;
    p.binding = -1;
    p.index = -1;
    if (p.kind == ParamKind::ThreadgroupBuffer) p.index = slot < 0 ? 0 : static_cast<int>(slot);
    if (enters(p) && w[1]) {
      p.index = static_cast<int>(slot);
      slots.emplace_back(slot, static_cast<int>(i));
    }
  }
  std::stable_sort(slots.begin(), slots.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  info.bound.clear();
  for (const auto& [slot, i] : slots) {
    info.params[i].binding = static_cast<int>(info.bound.size());
    info.bound.push_back(i);
  }
}

std::string arg_label(const KernelParam& p) {
  return "argument " + std::to_string(p.binding) + " ('" + p.name + "', " + p.type + ")";
}

bool buffer_dtype_matches(const KernelParam& p, DType t) {
  ScalarType st = scalar_type(p.type);
  if (!st.known) return true;  // structs, void: any bytes
  // llama.cpp's kernels take every buffer as device char*, as Metal's
  // untyped buffers allow.
  bool bytes = st.dtype == DType::Int8 || st.dtype == DType::UInt8;
  return t == st.dtype || bytes ||
         (element_size(t) == element_size(st.dtype) && !is_floating(t) && !is_floating(st.dtype));
}

void append_element(const ScalarType& st, const Scalar& v, std::vector<std::uint8_t>& out) {
  std::uint8_t buf[8];
  std::size_t n = element_size(st.dtype);
  switch (st.dtype) {
    case DType::Float32: {
      float f = static_cast<float>(v.to_double());
      std::memcpy(buf, &f, 4);
      break;
    }
    case DType::Float64: {
      double d = v.to_double();
      std::memcpy(buf, &d, 8);
      break;
    }
    case DType::Float16: {
      std::uint16_t h = Half::from_float(static_cast<float>(v.to_double()));
      std::memcpy(buf, &h, 2);
      break;
    }
    case DType::BFloat16: {
      std::uint16_t b = BFloat16::from_float(static_cast<float>(v.to_double()));
      std::memcpy(buf, &b, 2);
      break;
    }
    case DType::Bool:
      buf[0] = v.to_double() != 0.0;
      break;
    default: {
      // Integers: a float argument is truncated, as a C++ conversion would.
      std::int64_t i = v.is_integral() ? v.to_int() : static_cast<std::int64_t>(v.to_double());
      std::memcpy(buf, &i, n);  // little-endian: the low bytes
      break;
    }
  }
  out.insert(out.end(), buf, buf + n);
}

std::vector<std::uint8_t> pack_scalar(const KernelParam& p, const Scalar& v) {
  ScalarType st = scalar_type(p.type);
  if (!st.known)
    throw TypeError(arg_label(p) + " is not a number type: pass its bytes (" + std::to_string(p.size) + " bytes)");
  check_fits(v, st.dtype, arg_label(p));
  std::vector<std::uint8_t> out;
  for (int i = 0; i < st.lanes; ++i) append_element(st, v, out);
  // Padded vectors (float3 is 16 bytes): fill to the compiled size.
  if (p.size > out.size()) out.resize(p.size, 0);
  return out;
}

}  // namespace bronze::shader
