// The CUDA side of the shader front end, without a GPU: CUDA C++ kernel
// signatures, PTX .entry parameters, NVRTC messages mapped to the user's
// line, and the Metal -> CUDA translation compiled by NVRTC (where present).
#include <gtest/gtest.h>

#include "backends/cuda/cuda_signatures.hpp"
#include "backends/cuda/gpu_image.hpp"
#include "backends/cuda/metal/cuda_codegen.hpp"
#include "backends/cuda/nvrtc.hpp"
#include "backends/shader_backend.hpp"
#include "bronze/error.hpp"
#include "shader/diagnostics.hpp"
#include "shader/parser.hpp"
#include "shader/preprocess.hpp"
#include "shader/module_source.hpp"
#include "shader/rewrite.hpp"

namespace bs = bronze::shader;

TEST(CudaSignatures, ReadsKernelParameters) {
  auto k = bronze::cuda::parse_cuda_kernels(R"(
    struct P { float a; int b; };
    __device__ float helper(float x) { return x; }
    extern "C" __global__ void saxpy(float* __restrict__ y, const float* x, float a, unsigned int n) {}
    template <class T> __global__ void skipped(T* x) {}
    extern "C" {
    __global__ void by_struct(P p, long long* out);
    }
    __global__ void mangled(const double* __restrict__ in, int) {}
  )", "k.cu");
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0].info.name, "saxpy");
  EXPECT_TRUE(k[0].extern_c);
  ASSERT_EQ(k[0].info.params.size(), 4u);
  EXPECT_EQ(k[0].info.params[0].kind, bronze::ParamKind::Buffer);
  EXPECT_FALSE(k[0].info.params[0].read_only);
  EXPECT_EQ(k[0].info.params[0].type, "float");
  EXPECT_TRUE(k[0].info.params[1].read_only);
  EXPECT_EQ(k[0].info.params[2].kind, bronze::ParamKind::Scalar);
  EXPECT_TRUE(k[0].info.params[2].by_value);
  EXPECT_EQ(k[0].info.params[3].type, "uint");
  EXPECT_EQ(k[0].info.params[3].size, 4u);
  EXPECT_EQ(k[1].info.name, "by_struct");
  EXPECT_TRUE(k[1].extern_c);
  EXPECT_EQ(k[1].info.params[0].type, "P");
  EXPECT_EQ(k[1].info.params[1].type, "long");
  EXPECT_EQ(k[2].info.name, "mangled");
  EXPECT_FALSE(k[2].extern_c);
  EXPECT_EQ(k[2].info.params[1].name, "arg1");
  EXPECT_EQ(k[2].info.bindings(), 2);
  EXPECT_THROW(bronze::cuda::parse_cuda_kernels("__device__ void f() {}", "k.cu"), bronze::ShaderCompileError);
  EXPECT_THROW(bronze::cuda::parse_cuda_kernels("__global__ void f(float& x) {}", "k.cu"), bronze::ShaderCompileError);
}

TEST(GpuImage, ReadsPtxEntries) {
  const char* ptx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry scale(
	.param .u64 .ptr .global .align 4 scale_param_0,
	.param .f32 scale_param_1,
	.param .u32 scale_param_2,
	.param .align 4 .b8 scale_param_3[12]
)
{ ret; }
.visible .entry empty()
{ ret; }
)";
  EXPECT_TRUE(bronze::cuda::is_gpu_image(reinterpret_cast<const std::uint8_t*>(ptx), std::strlen(ptx)));
  auto k = bronze::cuda::parse_ptx_entries(ptx);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].info.name, "scale");
  ASSERT_EQ(k[0].info.params.size(), 4u);
  EXPECT_EQ(k[0].info.params[0].kind, bronze::ParamKind::Buffer);
  EXPECT_EQ(k[0].info.params[1].type, "float");
  EXPECT_EQ(k[0].info.params[2].type, "uint");
  EXPECT_EQ(k[0].info.params[3].size, 12u);
  EXPECT_TRUE(k[1].info.params.empty());
  const std::uint8_t elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  EXPECT_TRUE(bronze::cuda::is_gpu_image(elf, sizeof elf));
  const std::uint8_t brzl[] = {'B', 'R', 'Z', 'L', 1, 0, 0, 0};
  EXPECT_FALSE(bronze::cuda::is_gpu_image(brzl, sizeof brzl));
}

TEST(CompileErrors, NvrtcMessagesPointIntoTheUsersSource) {
  std::string src = "kernel void f(device float* o) {\n  o[0] = nope;\n}\n";
  std::string log =
      "shader.metal(2): error: identifier \"nope\" is undefined\n    o[0] = nope;\n           ^\n\n"
      "1 error detected in the compilation of \"bronze-shader.cu\".\n";
  try {
    bs::raise_compile_error(log, {{"shader.metal", src}});
    FAIL();
  } catch (const bronze::ShaderCompileError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 10);
    EXPECT_NE(std::string(e.what()).find("shader.metal:2:10: error: identifier \"nope\" is undefined"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("o[0] = nope;"), std::string::npos);
  }
}

TEST(CompileErrors, ErrorsInBronzesHeadersPointAtTheUsersInstantiation) {
  std::string src = "kernel void k(device uint4* u, device half4* o) {\n  o[0] = as_type<half4>(u[0]);\n}\n";
  const std::string gcc =
      "In file included from /tmp/b/kernel.cpp:2:\n"
      "/tmp/b/bronze_metal.h: In instantiation of 'To as_type(const From&) [with To = half4; From = uint4]':\n"
      "shader.metal:2:24:   required from here\n"
      "/tmp/b/bronze_metal.h:840:28: error: static assertion failed: as_type needs types of one size\n";
  const std::string nvrtc =
      "bronze_metal.h(840): error: static assertion failed with \"as_type needs types of one size\"\n"
      "    static_assert(sizeof(To) == sizeof(From), \"as_type needs types of one size\");\n    ^\n"
      "          detected during instantiation of \"To as_type<To,From>(const From &) [with To=half4, From=uint4]\" "
      "at line 2 of shader.metal\n\n1 error detected in the compilation of \"bronze-shader.cu\".\n";
  for (const std::string& log : {gcc, nvrtc}) {
    try {
      bs::raise_compile_error(log, {{"shader.metal", src}});
      FAIL();
    } catch (const bronze::ShaderCompileError& e) {
      EXPECT_EQ(e.line(), 2) << e.what();
      EXPECT_NE(std::string(e.what()).find("as_type needs types of one size"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("o[0] = as_type<half4>(u[0]);"), std::string::npos) << e.what();
    }
  }
}

TEST(CompileErrors, GccsRefusalOfFloatToHalfSaysWhyAndWhatBuildsIt) {
  // GCC 14's words for a class with only operator float converted to half
  // implicitly (a cast builds: rules/half_conversions.cpp): a note names
  // the rule; other errors, about half too, get none.
  std::string src =
      "struct e8m0 { uchar bits; operator float() const { return 1; } };\n"
      "kernel void k(device half* o, device int* p) {\n"
      "  half h = e8m0{1}; o[0] = h; }\n";
  const std::string refused =
      "shader.metal:3:12: error: cannot convert \u2018bronze_msl::e8m0\u2019 to \u2018bronze_msl::half\u2019 {aka "
      "\u2018_Float16\u2019} in initialization\n";
  const std::string pointer =
      "shader.metal:3:25: error: cannot convert \u2018bronze_msl::half\u2019 {aka \u2018_Float16\u2019} to "
      "\u2018int*\u2019 in assignment\n";
  const std::string other = "shader.metal:3:35: error: \u2018p\u2019 was not declared in this scope\n";
  for (const auto& [log, noted] : {std::pair{refused, true}, std::pair{pointer, false}, std::pair{other, false}}) {
    try {
      bs::raise_compile_error(log, {{"shader.metal", src}});
      FAIL();
    } catch (const bronze::ShaderCompileError& e) {
      EXPECT_EQ(std::string(e.what()).find("GCC 13 and later convert float to half (_Float16) only explicitly, "
                                           "where Metal converts implicitly; a cast (half(x)) builds") != std::string::npos,
                noted)
          << e.what();
    }
  }
}

TEST(CudaTranslation, MetalKernelsCompileWithNvrtc) {
  if (!bronze::cuda::nvrtc_available()) GTEST_SKIP() << bronze::cuda::nvrtc_status();
  std::string src = R"(#include <metal_stdlib>
using namespace metal;
struct Params { float scale; uint n; };
template <typename T>
kernel void reduce(device const T* x [[buffer(0)]], device T* out [[buffer(1)]], constant Params& p [[buffer(2)]],
                   threadgroup T* scratch [[threadgroup(0)]], uint i [[thread_position_in_grid]],
                   uint l [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                   uint2 tg [[threadgroup_position_in_grid]]) {
  threadgroup atomic_uint count;
  T v = i < p.n ? x[i] * T(p.scale) : T(0);
  T s = simd_sum(v);
  if (l == 0) scratch[sg] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) out[tg.x] = simd_sum(l < 8 ? scratch[l] : T(0)) + simd_prefix_exclusive_sum(T(1));
  atomic_fetch_add_explicit(&count, 1u, memory_order_relaxed);
  half h = half(v) * 2 + 1.0h;
  float4 f = float4(h, 1.0f, float2(2.0f)).wzyx;
  out[0] += f.x + select(0.0f, 1.0f, isnan(float(h))) + fast::exp(f.y) + as_type<float>(0x3f800000u);
}
template [[host_name("reduce_f32")]] kernel void reduce<float>(device const float*, device float*, constant Params&,
    threadgroup float*, uint, uint, uint, uint2);
template [[host_name("reduce_f16")]] kernel void reduce<half>(device const half*, device half*, constant Params&,
    threadgroup half*, uint, uint, uint, uint2);
)";
  // The CUDA backend's build of the front end's CUDA C++ (NVRTC only).
  auto build = [](const bs::TranslationUnit& tu, bool ptx) {
    bs::ParsedSource ps = bs::parse(tu.text, "shader.metal");
    bronze::runtime::ModuleSource m = bs::module_source(tu, ps, {}, bronze::cuda::generate(tu.text, ps));
    m.gpu_arch = 90;
    m.ptx = ptx;
    bronze::runtime::ModuleObject o = bronze::backends::shader_backend(bronze::DeviceType::CUDA).build(m);
    if (!o.ok) bs::raise_build_error(o.diagnostics, ps, tu.files);
    return o.image;
  };
  bs::TranslationUnit tu = bs::preprocess(src, {});
  std::vector<char> cubin, ptx;
  ASSERT_NO_THROW(cubin = build(tu, false)) << "the translation must compile";
  EXPECT_EQ(std::string(cubin.data(), 4), "\x7f" "ELF");
  ASSERT_NO_THROW(ptx = build(tu, true));
  EXPECT_NE(std::string(ptx.begin(), ptx.end()).find(".entry bronze_entry_1"), std::string::npos);
  try {
    build(bs::preprocess("kernel void f(device float* o, uint i [[thread_position_in_grid]]) {\n  o[i] = nope;\n}\n", {}),
          false);
    FAIL() << "expected a compile error";
  } catch (const bronze::ShaderCompileError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 10);
  }
  try {  // ptxas names a function called but never defined by its mangled name
    build(bs::preprocess("float helper(float v);\nkernel void f(device float* o) {\n  o[0] = helper(o[0]);\n}\n", {}),
          false);
    FAIL() << "expected a compile error";
  } catch (const bronze::ShaderCompileError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_NE(std::string(e.what()).find("'helper' is called but never defined"), std::string::npos) << e.what();
  }
}

// Read-only buffers reach the compiler as __restrict__ entry parameters (their
// loads may pass the kernel's stores and use the read-only cache), unless
// the build is the one for launches whose buffers alias.
TEST(CudaTranslation, ReadOnlyBuffersAreRestrictUnlessBuiltForAliases) {
  bs::TranslationUnit tu = bs::preprocess(R"(#include <metal_stdlib>
using namespace metal;
kernel void twice(device float* out [[buffer(0)]], device const float* in [[buffer(1)]],
                  constant float& k [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = in[i] + k;
  out[i] = in[i] * k;
}
)", {});
  bs::ParsedSource ps = bs::parse(tu.text, "shader.metal");
  bs::RewriteOptions aliased;
  aliased.restrict_read_only = false;
  auto source = [&](const bs::RewriteOptions& o) {
    return bs::module_source(tu, ps, o, bronze::cuda::generate(tu.text, ps, o));
  };
  const std::string restricted = source({}).code, plain = source(aliased).code;
  EXPECT_EQ(restricted.find("> __restrict__ a0"), std::string::npos) << "out is written";
  EXPECT_NE(restricted.find("> __restrict__ a1"), std::string::npos) << restricted;
  EXPECT_NE(restricted.find("bronze_rt::value_t<bronze_rt::param_t<bronze_fn_0, 2>> a2"), std::string::npos)
      << "k is a value in parameter space";
  EXPECT_EQ(plain.find("__restrict__"), std::string::npos);
  if (!bronze::cuda::nvrtc_available()) GTEST_SKIP() << bronze::cuda::nvrtc_status();
  auto ptx = [&](const bs::RewriteOptions& o) {
    bronze::runtime::ModuleSource m = source(o);
    m.gpu_arch = 90;
    m.ptx = true;
    bronze::runtime::ModuleObject obj = bronze::backends::shader_backend(bronze::DeviceType::CUDA).build(m);
    EXPECT_TRUE(obj.ok);
    return std::string(obj.image.begin(), obj.image.end());
  };
  // Restricted, in[i] is loaded once through the read-only cache; for
  // aliases, again after the store, which may have changed it.
  const std::string fast = ptx({}), exact = ptx(aliased);
  EXPECT_NE(fast.find("ld.global.nc.f32"), std::string::npos) << fast;
  EXPECT_EQ(exact.find("ld.global.nc"), std::string::npos);
  auto count = [](const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(exact, "ld.global.f32"), 2u) << exact;
}

TEST(CudaTranslation, AliasCheckFindsReadOnlyBuffersOverWrittenOnes) {
  using U = bs::BufferUse;
  EXPECT_FALSE(bs::read_only_overlaps_written({}));
  EXPECT_FALSE(bs::read_only_overlaps_written({{0, 64, true}, {64, 128, false}}));   // adjacent
  EXPECT_TRUE(bs::read_only_overlaps_written({{0, 64, true}, {63, 128, false}}));    // one byte shared
  EXPECT_TRUE(bs::read_only_overlaps_written({U{16, 32, false}, U{0, 64, true}}));   // inside, either order
  EXPECT_FALSE(bs::read_only_overlaps_written({{0, 64, false}, {0, 64, false}}));    // both only read
  EXPECT_TRUE(bs::read_only_overlaps_written({{0, 64, false}, {0, 64, true}}));      // in place
  EXPECT_FALSE(bs::read_only_overlaps_written({{0, 64, true}, {0, 64, true}}));      // written twice: no restrict
  EXPECT_FALSE(bs::read_only_overlaps_written({{0, 0, false}, {0, 64, true}}));      // empty
}

// NVRTC refuses non-ASCII identifiers (in UTF-8, and as universal character
// names of device functions): the CUDA translation spells them in ASCII.
TEST(CudaTranslation, UnicodeIdentifiersAreSpelledInAscii) {
  bs::TranslationUnit tu =
      bs::preprocess("kernel void \xe6\xa0\xb8(device float* o, uint i [[thread_position_in_grid]]) { o[i] = 2; }\n", {});
  bs::ParsedSource ps = bs::parse(tu.text, "shader.metal");
  bronze::runtime::ModuleSource m = bs::module_source(tu, ps, {}, bronze::cuda::generate(tu.text, ps));
  EXPECT_NE(m.code.find("void bronze_u6838_("), std::string::npos);
  EXPECT_EQ(m.code.find("\xe6\xa0\xb8"), std::string::npos);
  if (!bronze::cuda::nvrtc_available()) GTEST_SKIP() << bronze::cuda::nvrtc_status();
  m.gpu_arch = 90;
  m.ptx = true;
  bronze::runtime::ModuleObject o = bronze::backends::shader_backend(bronze::DeviceType::CUDA).build(m);
  EXPECT_TRUE(o.ok) << o.diagnostics;
}
