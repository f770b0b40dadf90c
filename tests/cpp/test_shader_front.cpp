// The Metal front end on the constructs real kernel libraries use: the
// preprocessor (macros that make kernels and instantiations, #if, includes,
// Metal's predefined macros), kernel discovery in the expanded unit, and
// errors that keep the user's files and lines. Host compiler only, no device.
#include <gtest/gtest.h>

#include "bronze/error.hpp"
#include "shader/parser.hpp"
#include "shader/preprocess.hpp"

namespace bs = bronze::shader;

namespace {
bs::ParsedSource front(const std::string& src, bs::SourceOptions o = {}) {
  bs::TranslationUnit tu = bs::preprocess(src, o);
  return bs::parse(tu.text, o.filename);
}

std::vector<std::string> names(const bs::ParsedSource& ps) {
  std::vector<std::string> n;
  for (const auto& k : ps.kernels) n.push_back(k.info.name);
  return n;
}

const bs::ParsedKernel& kernel(const bs::ParsedSource& ps, const std::string& name) {
  for (const auto& k : ps.kernels)
    if (k.info.name == name) return k;
  throw std::runtime_error("no kernel " + name);
}

template <class F>
bronze::ShaderCompileError compile_error(F&& f) {
  try {
    f();
  } catch (const bronze::ShaderCompileError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ShaderCompileError";
  return bronze::ShaderCompileError("none");
}
}  // namespace

// Instantiation macros in the style of the big libraries: names glued from
// adjacent literals and #-stringized arguments, __VA_ARGS__, token pasting,
// the decltype form, default template arguments.
TEST(ShaderFront, MacroMadeKernelsAndInstantiations) {
  auto ps = front(R"(#include <metal_stdlib>
using namespace metal;
#define MAKE_NAME(a, b) a##_##b
#define instantiate(name, func, ...) \
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
template <typename T, int N = 4>
[[kernel]] void scale(device T* x, constant const T& s, uint i [[thread_position_in_grid]]) {
  for (int k = 0; k < N; ++k) x[i * N + k] *= s;
}
#define instantiate_scale(tname, type) instantiate("scale_" #tname, scale, type)
instantiate_scale(float32, float)
instantiate_scale(float16, half)
instantiate("scale" "_wide", scale, float, 8)
kernel void MAKE_NAME(copy, f32)(device const float* a, device float* b, uint i [[thread_position_in_grid]]) {
  b[i] = a[i];
}
)");
  EXPECT_EQ(names(ps), (std::vector<std::string>{"scale_float32", "scale_float16", "scale_wide", "copy_f32"}));
  const auto& s16 = kernel(ps, "scale_float16");
  EXPECT_EQ(s16.callee, "&::bronze_msl::scale<half>");  // the compiler fills N = 4
  EXPECT_EQ(s16.info.params[0].type, "half");
  EXPECT_EQ(s16.info.params[1].kind, bronze::ParamKind::Scalar);
  EXPECT_TRUE(s16.info.params[1].read_only);
  EXPECT_EQ(kernel(ps, "scale_wide").callee, "&::bronze_msl::scale<float, 8>");
  // The instantiation's kernel is reported at the line of the macro's use.
  EXPECT_EQ(s16.info.line, 7);
}

TEST(ShaderFront, ConditionalsChooseTheKernels) {
  auto ps = front(R"(
#if 0
kernel void gone(device float* x) { x[0] = 1; }
#endif
#if __METAL_VERSION__ >= 320 && defined(__HAVE_BFLOAT__) && defined(__METAL__)
kernel void metal32(device bfloat* x) { x[0] = bfloat(1.0f); }
#else
kernel void old(device float* x) { x[0] = 1; }
#endif
#ifdef WIDE
kernel void wide(device float4* x) { x[0] = 1; }
#elif defined(NARROW)
kernel void narrow(device float* x) { x[0] = 1; }
#endif
)");
  EXPECT_EQ(names(ps), (std::vector<std::string>{"metal32"}));
  bs::SourceOptions o;
  o.defines = {{"NARROW", "1"}};
  EXPECT_EQ(names(front("#ifdef NARROW\nkernel void narrow(device float* x) { x[0] = 1; }\n#endif\n", o)),
            (std::vector<std::string>{"narrow"}));
}

TEST(ShaderFront, NamespacesAttributesAndQualifiers) {
  auto ps = front(R"(
namespace ops {
struct Params { float a; uint n; };
static constant constexpr int kWidth = 4;
constexpr constant float kTable[2] = {1.0f, 2.0f};
template <typename T, typename U = float>
kernel void axpy(const constant Params& p [[buffer(2)]], device const T* x [[buffer(0)]],
                 device U* y [[buffer(1)]], uint [[thread_position_in_grid]]) {}
template [[host_name("axpy_h")]] kernel void axpy<half>(constant Params&, device const half*, device float*, uint);
}  // namespace ops
[[host_name("renamed")]] kernel void original(device int* out, uint2 gid [[thread_position_in_grid]]) {}
)");
  EXPECT_EQ(names(ps), (std::vector<std::string>{"axpy_h", "renamed"}));
  const auto& a = kernel(ps, "axpy_h");
  EXPECT_EQ(a.callee, "&::bronze_msl::ops::axpy<half>");
  ASSERT_EQ(a.info.params.size(), 4u);
  EXPECT_EQ(a.info.params[0].kind, bronze::ParamKind::Scalar);
  EXPECT_EQ(a.params[0].index_expr, "2");  // the compiler evaluates it (the binding plan)
  EXPECT_EQ(a.info.params[0].type, "Params");
  EXPECT_EQ(a.info.params[2].type, "float");  // the default argument, substituted
  EXPECT_EQ(a.info.params[3].kind, bronze::ParamKind::Attribute);  // unnamed
  EXPECT_EQ(kernel(ps, "renamed").callee, "&::bronze_msl::original");
}

TEST(ShaderFront, IncludesResolveAndKeepTheirFilesAndLines) {
  bs::SourceOptions o;
  o.filename = "main.metal";
  o.headers = {{"ops.h", "// ops\ninline float twice(float v) { return 2 * v; }\n#define KERNEL_OF(n) kernel void n(device float* x) { x[0] = twice(x[0]); }\n"},
               {"detail/more.h", "#include \"../ops.h\"\n"}};
  bs::TranslationUnit tu = bs::preprocess("#include \"detail/more.h\"\n\nKERNEL_OF(k1)\n", o);
  auto ps = bs::parse(tu.text, o.filename);
  ASSERT_EQ(names(ps), (std::vector<std::string>{"k1"}));
  EXPECT_EQ(ps.kernels[0].info.line, 3);
  const bs::Token* first = &ps.tokens[0];
  while (first->kind == bs::Token::Preproc) ++first;  // the #line directives
  EXPECT_EQ(ps.files[first->file], "ops.h");  // the first token comes from the header
  EXPECT_EQ(first->line, 2);
  ASSERT_NE(tu.file("ops.h"), nullptr);  // every included file's text is kept (errors, cache key)
  EXPECT_NE(tu.text.find("twice"), std::string::npos);
}

TEST(ShaderFront, LinesNoMacroTouchedKeepTheirColumns) {
  auto ps = front("kernel void f(device float* x,\n                 uint i [[thread_position_in_grid]]) {  /* a */ x[i] = 1; }\n");
  for (const auto& t : ps.tokens)
    if (t.text == "uint") {
      EXPECT_EQ(t.line, 2);
      EXPECT_EQ(t.col, 18);
    }
}

TEST(ShaderFront, PreprocessorErrorsPointAtTheUsersLine) {
  auto missing = compile_error([] { front("kernel void f(device float* x) {}\n#include \"absent.h\"\n"); });
  EXPECT_EQ(missing.line(), 2);
  EXPECT_NE(std::string(missing.what()).find("absent.h"), std::string::npos) << missing.what();
  auto err = compile_error([] { front("\n\n#error this build needs WIDE\n"); });
  EXPECT_EQ(err.line(), 3);
  EXPECT_NE(std::string(err.what()).find("this build needs WIDE"), std::string::npos);
  auto tensor = compile_error([] { front("#include <metal_stdlib>\n#include <metal_tensor>\n"); });
  EXPECT_EQ(tensor.line(), 2);
  EXPECT_NE(std::string(tensor.what()).find("Metal 4"), std::string::npos) << tensor.what();
  EXPECT_THROW(front("#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>\n"),
               bronze::ShaderNotSupportedError);
  try {  // a missing header of the user's is an error of theirs, not one bronze lacks
    front("#include \"absent.h\"\n");
  } catch (const bronze::ShaderNotSupportedError& e) {
    ADD_FAILURE() << e.what();
  } catch (const bronze::ShaderCompileError&) {
  }
  EXPECT_THROW(front("", [] {
                 bs::SourceOptions o;
                 o.headers = {{"../escape.h", ""}};
                 return o;
               }()),
               bronze::ValueError);
}

TEST(ShaderFront, KernelTemplatesWithoutInstantiationAreALibraryWithoutKernels) {
  // Valid Metal (a file of templates that others include): no kernels, and
  // the reason kept for a lookup's error.
  auto ps = front("template <typename T>\nkernel void lonely(device T* x) {}\ntemplate <typename T> T helper(T v) { return v; }\n");
  EXPECT_TRUE(ps.kernels.empty());
  EXPECT_NE(ps.no_kernels_why.find("'lonely' but instantiates none"), std::string::npos) << ps.no_kernels_why;
  // No kernel at all is a library of helpers, with nothing to explain.
  auto helpers = front("inline float helper(float v) { return v; }\n");
  EXPECT_TRUE(helpers.kernels.empty());
  EXPECT_TRUE(helpers.no_kernels_why.empty());
}

TEST(ShaderFront, CooperationThroughClassesAndTemplateArguments) {
  auto ps = front(R"(
struct SumOp { float operator()(float v) const { return simd_sum(v); } };
struct Copy { float operator()(float v) const { return v; } };
template <typename Op>
kernel void apply(device float* x, uint i [[thread_position_in_grid]]) { x[i] = Op()(x[i]); }
template [[host_name("apply_sum")]] kernel void apply<SumOp>(device float*, uint);
template [[host_name("apply_copy")]] kernel void apply<Copy>(device float*, uint);
)");
  EXPECT_TRUE(kernel(ps, "apply_sum").info.cooperative);
  EXPECT_FALSE(kernel(ps, "apply_copy").info.cooperative);
}

// Template arguments deduced from the instantiation's own parameter types,
// and '<' that compares inside template arguments (`sizeof(T) < 8`).
TEST(ShaderFront, DeducedInstantiationsAndComparisonsInTemplateArguments) {
  auto ps = front(R"(
template <int N> struct Dims { int shape[N]; };
template <typename T, metal::enable_if_t<sizeof(T) < 8, bool> = true>
inline T narrow(T v) { return v; }
template <typename T, int N>
[[kernel]] void unfold(const device T* in [[buffer(0)]], const constant Dims<N>* d [[buffer(1)]],
                       uint3 gid [[thread_position_in_grid]]) {}
template [[host_name("unfold_f2")]] [[kernel]] void unfold(const device float* in [[buffer(0)]],
    const constant Dims<2>* d [[buffer(1)]], uint3 gid [[thread_position_in_grid]]);
)");
  ASSERT_EQ(names(ps), (std::vector<std::string>{"unfold_f2"}));
  EXPECT_EQ(ps.kernels[0].callee,
            "static_cast<void(*)(const float*, const Dims<2>*, uint3)>(&::bronze_msl::unfold)");
  EXPECT_EQ(ps.kernels[0].info.params[1].kind, bronze::ParamKind::Buffer);
}

// Function constants: declarations with computed indices, their values from
// the unit's pragmas (by name or index), guarded parameters dropping out so
// two may share a slot, is_function_constant_defined answered.
TEST(ShaderFront, FunctionConstantsAndGuardedParameters) {
  const std::string src = R"(
#define FC_BASE 100
constant bool has_mask [[function_constant(FC_BASE + 0)]];
constant bool no_mask [[function_constant(FC_BASE + 1)]];
static constant constexpr const int width_ [[function_constant(FC_BASE * 2)]];
kernel void k(device float* out [[buffer(0)]],
              device const float* mask [[buffer(1), function_constant(has_mask)]],
              constant float& fill [[buffer(1), function_constant(no_mask)]],
              uint i [[thread_position_in_grid]]) {
  out[i] = is_function_constant_defined(width_) ? width_ : 0;
}
)";
  bs::SourceOptions o;
  o.constants = {{"has_mask", "true"}, {"200", "4"}};
  auto ps = front(src, o);
  // The front end reads the declarations and the values given; the
  // compiler evaluates indices and values (the binding plan).
  ASSERT_EQ(ps.function_constants.size(), 3u);
  EXPECT_EQ(ps.function_constants[0].index_expr, "100 + 0");
  EXPECT_EQ(ps.function_constants[2].index_expr, "100* 2");
  EXPECT_EQ(ps.function_constants[2].type, "int");
  ASSERT_EQ(ps.given.size(), 2u);
  EXPECT_TRUE(ps.given[1].by_index());
  EXPECT_FALSE(ps.given[0].by_index());
  const auto& k = ps.kernels[0];
  EXPECT_EQ(k.params[1].constant, "has_mask");
  EXPECT_EQ(k.params[2].constant, "no_mask");
  EXPECT_EQ(k.params[2].index_expr, "1");
  ASSERT_EQ(ps.defined_queries.size(), 1u);
  EXPECT_EQ(ps.tokens[ps.defined_queries[0].name].text, "width_");
  o.constants = {{"nope", "1"}};
  EXPECT_THROW(front(src, o), bronze::ValueError);
}
