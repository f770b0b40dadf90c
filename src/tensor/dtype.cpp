#include "bronze/dtype.hpp"

#include "bronze/error.hpp"

namespace bronze {

std::size_t element_size(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8: return 1;
    case DType::Int16:
    case DType::UInt16:
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Int32:
    case DType::UInt32:
    case DType::Float32: return 4;
    case DType::Int64:
    case DType::UInt64:
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
    case DType::UInt16: return "uint16";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
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
               {"double", DType::Float64},  {"uint16", DType::UInt16},   {"uint32", DType::UInt32},
               {"uint64", DType::UInt64}};
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
  // Integers: the wider of two of one signedness; an unsigned type with a
  // signed one needs a signed type wider than the unsigned (torch's rule
  // for uint8); none holds uint64 with a signed type.
  auto is_unsigned = [](DType t) {
    return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
  };
  if (is_unsigned(a) == is_unsigned(b)) return element_size(a) >= element_size(b) ? a : b;
  DType u = is_unsigned(a) ? a : b, s = is_unsigned(a) ? b : a;
  if (element_size(s) > element_size(u)) return s;
  switch (element_size(u)) {
    case 1: return DType::Int16;
    case 2: return DType::Int32;
    case 4: return DType::Int64;
  }
  throw TypeError(std::string("no integer type holds both ") + dtype_name(a) + " and " + dtype_name(b));
}

}  // namespace bronze
