#include "bronze/dtype.hpp"

#include "bronze/error.hpp"

namespace bronze {

std::size_t element_size(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8: return 1;
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Int32:
    case DType::Float32: return 4;
    case DType::Int64:
    case DType::Float64: return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
  }
  return "?";
}

DType dtype_from_name(const std::string& name) {
  static const struct {
    const char* name;
    DType t;
  } table[] = {{"bool", DType::Bool},       {"uint8", DType::UInt8},     {"int8", DType::Int8},
               {"int16", DType::Int16},     {"short", DType::Int16},     {"int32", DType::Int32},
               {"int", DType::Int32},       {"int64", DType::Int64},     {"long", DType::Int64},
               {"float16", DType::Float16}, {"half", DType::Float16},    {"bfloat16", DType::BFloat16},
               {"float32", DType::Float32}, {"float", DType::Float32},   {"float64", DType::Float64},
               {"double", DType::Float64}};
  for (const auto& e : table)
    if (name == e.name) return e.t;
  throw TypeError("unknown dtype '" + name + "'");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  auto rank = [](DType t) {  // category order: bool < integers < floats
    return t == DType::Bool ? 0 : is_floating(t) ? 2 : 1;
  };
  if (rank(a) != rank(b)) return rank(a) > rank(b) ? a : b;
  if (rank(a) == 2) {
    if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
      return DType::Float32;
    return element_size(a) >= element_size(b) ? a : b;
  }
  // Integers: uint8 with a signed type needs the next wider signed type.
  auto is_u8 = [](DType t) { return t == DType::UInt8; };
  if (is_u8(a) || is_u8(b)) {
    DType other = is_u8(a) ? b : a;
    return other == DType::Int8 ? DType::Int16 : other;
  }
  return element_size(a) >= element_size(b) ? a : b;
}

}  // namespace bronze
