// Metal type names as kernels write them, mapped to bronze dtypes: which
// tensors a buffer accepts, and how a number becomes a scalar's bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bronze/dtype.hpp"
#include "bronze/scalar.hpp"
#include "bronze/shader.hpp"

namespace bronze::shader {

struct ScalarType {
  bool known = false;
  DType dtype = DType::Float32;  // the dtype of its elements
  bool is_unsigned = false;
  int lanes = 1;  // float4 -> 4
};
// "float", "metal::half4", "atomic_uint", "packed_float3", "metal::array<int, 3>" (int) ...
ScalarType scalar_type(const std::string& type);

// The Metal type name of a layout table's type code (bronze_rt::type_code
// in bronze_metal.h: "float4", "packed_half3", "atomic_uint"), or "" for
// other types (structs).
std::string type_name(unsigned long long code);
// Whether a parameter takes an argument of the call (a buffer or a value),
// unless its function constant removes it.
inline bool enters(const KernelParam& p) { return p.kind == ParamKind::Buffer || p.kind == ParamKind::Scalar; }
// From a kernel's layout table (rewrite.hpp: per parameter its slot, whether
// it is present, its size and type code, as the compiler evaluated them):
// each parameter's size, its type where the compiler resolved a numeric
// one, its index, and the call's bindings in slot order.
void apply_layout(KernelInfo& info, const unsigned long long* layout);

// How errors name a parameter: "argument 1 ('a', constant float&)". Built
// only when an error is raised: the checks below run on every launch.
std::string arg_label(const KernelParam& p);
// Whether a tensor of `t` has the element type the buffer parameter
// declares. torch.mps binds any tensor's bytes to any buffer; bronze does
// too, and warns where this is false (api/shader.cpp), or refuses under
// validate=True. C++'s character types address any object's bytes, and
// integers of one width take each other's tensors.
bool buffer_dtype_matches(const KernelParam& p, DType t);
// The bytes of `v` as the parameter's type (vectors splat); TypeError when
// the type is not numeric (a struct: pass bytes).
std::vector<std::uint8_t> pack_scalar(const KernelParam& p, const Scalar& v);
// One element of the parameter's element type, appended to `out`.
void append_element(const ScalarType& st, const Scalar& v, std::vector<std::uint8_t>& out);

}  // namespace bronze::shader
