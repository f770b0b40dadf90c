// The rewrite rules (src/shader/rules), each alone: golden input -> output.
// Every rule keeps the unit's lines; the columns move only where a rule
// must write more than it replaces.
#include <gtest/gtest.h>

#include "shader/parser.hpp"
#include "shader/rules/conditional_operands.hpp"
#include "shader/rules/divergent_shuffles.hpp"
#include "shader/rules/rules.hpp"

namespace bs = bronze::shader;
namespace rules = bronze::shader::rules;

namespace {
const bs::TargetSpelling kCpu{"static thread_local", false, false}, kCuda{"__shared__", true, true};

std::string run(rules::Rule rule, const std::string& src, const bs::RewriteOptions& options = {},
                const bs::TargetSpelling& spelling = kCpu) {
  const bs::ParsedSource ps = bs::parse(src, "t.metal");
  rules::Edits edits;
  rule(rules::make_input(src, ps, options, spelling), edits);
  return rules::apply_edits(src, std::move(edits));
}
}  // namespace

TEST(RewriteRule, EditsCombineInsertionsFirstThenTheCoveringReplacement) {
  const std::string src = "abcdef";
  EXPECT_EQ(rules::apply_edits(src, {{2, 1, "X"}, {2, 3, "___"}, {2, 0, "<"}, {3, 0, "!"}, {5, 0, ">"}}), "ab<___>f");
}

TEST(RewriteRule, CheckedBuffers) {
  const std::string src =
      "kernel void k(device float* o [[buffer(0)]], constant uint& n [[buffer(1)]]) {\n"
      "  reinterpret_cast<device int*>(o)[0] = n; }\n";
  bs::RewriteOptions checked;
  checked.validate = true;
  EXPECT_EQ(run(rules::checked_buffers, src), src) << "only under validate=True";
  EXPECT_EQ(run(rules::checked_buffers, src, checked),
            "kernel void k(bronze_bounded<float> o, constant uint& n [[buffer(1)]]) {\n"
            "  reinterpret_cast<device int*>(bronze_rt::raw(o))[0] = n; }\n");
}

TEST(RewriteRule, DroppedDeclarations) {
  const std::string src =
      "template <typename T> kernel void k(device T* o) { o[0] = 1; }\n"
      "template [[host_name(\"a\")]] kernel void k<float>(device float*);\n"
      "template [[host_name(\"b\")]] kernel void k<int>(\n device int*);\n";
  bs::RewriteOptions second;
  second.first_kernel = 1, second.last_kernel = 2;
  EXPECT_EQ(run(rules::dropped_declarations, src, second),
            "template <typename T> kernel void k(device T* o) { o[0] = 1; }\n" + std::string(64, ' ') + "\n" +
                "template [[host_name(\"b\")]] kernel void k<int>(\n device int*);\n")
      << "the other part's instantiation is spaces, its lines kept";
}

TEST(RewriteRule, FunctionConstants) {
  const std::string src =
      "constant bool has_bias [[function_constant(1)]];\n"
      "kernel void k(device float* o) { if (is_function_constant_defined(has_bias)) o[0] = 1; }\n"
      "#pragma bronze_function_constant 1 true\n";
  EXPECT_EQ(run(rules::function_constants, src),
            "constexpr constant bool has_bias [[function_constant(1)]] = (static_cast<long long>(1) == 1 ? "
            "(bool)(true) : bool()); constexpr bool bronze_fc_defined_has_bias = (static_cast<long long>(1) == 1 || "
            "false); constexpr long long bronze_fc_index_has_bias = static_cast<long long>(1);\n"
            "kernel void k(device float* o) { if ((bronze_fc_defined_has_bias)) o[0] = 1; }\n"
            "#pragma bronze_function_constant 1 true\n");
}

TEST(RewriteRule, UnrollPragmas) {
  const std::string src = "kernel void k(device float* o) {\n#pragma unroll (MIN(N, 4))\n"
                          "for (int i = 0; i < 4; ++i) o[i] = 0;\n#pragma unroll 4\nfor (;;) {} }\n";
  EXPECT_EQ(run(rules::unroll_pragmas, src), "kernel void k(device float* o) {\n#pragma unroll\n"
                                             "for (int i = 0; i < 4; ++i) o[i] = 0;\n#pragma unroll 4\nfor (;;) {} }\n");
  // Clang's loop pragmas (as _Pragma leaves them): NVRTC's own on CUDA,
  // kept for the host compiler; options it does not know stay.
  const std::string clang_loops = "kernel void k(device float* o) {\n#pragma clang loop unroll(full)\n"
                                  "for (int i = 0; i < 4; ++i) o[i] = 0;\n#pragma clang loop unroll_count(2)\n"
                                  "for (int i = 0; i < 4; ++i) o[i] = 1;\n#pragma clang loop vectorize(enable) unroll(disable)\n"
                                  "for (int i = 0; i < 4; ++i) o[i] = 2;\n#pragma clang loop vectorize(enable)\n"
                                  "for (int i = 0; i < 4; ++i) o[i] = 3; }\n";
  EXPECT_EQ(run(rules::unroll_pragmas, clang_loops), clang_loops);
  EXPECT_EQ(run(rules::unroll_pragmas, clang_loops, {}, kCuda),
            "kernel void k(device float* o) {\n#pragma unroll\n"
            "for (int i = 0; i < 4; ++i) o[i] = 0;\n#pragma unroll 2\n"
            "for (int i = 0; i < 4; ++i) o[i] = 1;\n#pragma unroll 1\n"
            "for (int i = 0; i < 4; ++i) o[i] = 2;\n#pragma clang loop vectorize(enable)\n"
            "for (int i = 0; i < 4; ++i) o[i] = 3; }\n");
}

TEST(RewriteRule, FloatLiterals) {
  EXPECT_EQ(run(rules::float_literals, "kernel void k(device half* o) { o[0] = 1.5h * 2.0 + 1e3 + 0x1.0p0 + 3 + 2.f; }"),
            "kernel void k(device half* o) { o[0] = ((half)1.5) * 2.0f + 1e3f + 0x1.0p0 + 3 + 2.f; }");
}

TEST(RewriteRule, GlobalNamespace) {
  EXPECT_EQ(run(rules::global_namespace, "kernel void k(device ::ns::T* o) { ::f(o); a::b(o); }"),
            "kernel void k(device ::bronze_msl::ns::T* o) { ::bronze_msl::f(o); a::b(o); }");
}

TEST(RewriteRule, DesignatedArrays) {
  EXPECT_EQ(run(rules::designated_arrays, "kernel void k(device float* o) { float s[8] = { [0 ... 7] = 0.5, [3] = 1 }; }"),
            "kernel void k(device float* o) { float s[8] = {}; bronze_rt::fill_range(s, 0, 7, (0.5f )); s[3] = (1 ); }");
}

TEST(RewriteRule, Attributes) {
  EXPECT_EQ(run(rules::attributes, "kernel void k(device float* o [[buffer(0)]],\n uint i [[ thread_position_in_grid ]]) {}"),
            "kernel void k(device float* o              ,\n uint i                              ) {}");
}

TEST(RewriteRule, CompoundLiterals) {
  EXPECT_EQ(run(rules::compound_literals,
                "struct S { int a, b; };\n"
                "kernel void k(device float2* o) { o[0] = (float2){ 1, 2 }; S s = (S){ .a = 1, .b = 2 }; if (x) {} }"),
            "struct S { int a, b; };\n"
            "kernel void k(device float2* o) { o[0] =  float2 { 1, 2 }; S s = [&]() { S bronze_literal{};  "
            "bronze_literal.a = 1; bronze_literal.b = 2 ; return bronze_literal; }(); if (x) {} }");
}

TEST(RewriteRule, AddressSpaces) {
  EXPECT_EQ(run(rules::address_spaces,
                "constant float c = 1;\nconstant constexpr int d = 2;\n"
                "kernel void k(device float* o, constant uint& n, threadgroup float* t, "
                "volatile coherent(system) device int* f) { thread float* p = o; device::x(); __extension__ union {}; }"),
            "const    float c = 1;\n         constexpr int d = 2;\n"
            "inline void k(       float* o, const    uint& n,             float* t, "
            "volatile                         int* f) {        float* p = o; device::x(); __extension__ union {}; }");
  EXPECT_EQ(run(rules::address_spaces,
                "template <typename T> kernel void k(device T* o) {}\n"
                "template [[host_name(\"f\")]] kernel void k<float>(device float*);\n"
                "static inline kernel void g() {}\n"),
            "template <typename T> inline void k(       T* o) {}\n"
            "template [[host_name(\"f\")]]        void k<float>(       float*);\n"
            "static inline        void g() {}\n")
      << "a kernel is inline (only the kernels a build's entries call are compiled), but not in an explicit "
         "instantiation, nor twice";
  EXPECT_NE(run(rules::address_spaces, "kernel void k(device int* o) { __extension__ union {}; }", {}, kCuda)
                .find("{               union {}; }"),
            std::string::npos)
      << "NVRTC refuses __extension__ there";
}

TEST(RewriteRule, ThreadgroupVariables) {
  const std::string src =
      "kernel void k(device float* o, threadgroup float* tb [[threadgroup(0)]]) {\n"
      "  threadgroup float s[64];\n  threadgroup int n = 0;\n  threadgroup float* p = s; }\n";
  EXPECT_EQ(run(rules::threadgroup_variables, src),
            "kernel void k(device float* o, threadgroup float* tb [[threadgroup(0)]]) {\n"
            "  static thread_local float s[64];\n"
            "  static thread_local int n ; { int bronze_tg_init = 0 ; bronze_rt::tg_store(n, bronze_tg_init); }\n"
            "  threadgroup float* p = s; }\n")
      << "pointers and parameters are address_spaces'";
  EXPECT_NE(run(rules::threadgroup_variables, src, {}, kCuda).find("  __shared__ float s[64];\n"), std::string::npos);
  bs::RewriteOptions carve;
  carve.carve_threadgroup = true;
  EXPECT_NE(run(rules::threadgroup_variables, src, carve, kCuda)
                .find("              float (&s)[64]= bronze_rt::tg_carve<float [ 64 ] >() ;\n"),
            std::string::npos)
      << run(rules::threadgroup_variables, src, carve, kCuda);
}

TEST(RewriteRule, CallChains) {
  const std::string src =
      "float total(float v) { return simd_sum(v); }\n"
      "void sync() { threadgroup_barrier(mem_flags::mem_threadgroup); }\n"
      "struct Acc { float top(float v) const { return simd_max(v); } float plain(float v) { return v; } };\n"
      "float declared(float v);\n"
      "float declared(float v) { return simd_sum(v); }\n"
      "constexpr float folded(float v) { return simd_sum(v); }\n"
      "template <class... T> float packed(T... v) { return simd_sum((v + ...)); }\n"
      "template <typename T> T valued(T v) { return simd_sum(v); }\n"
      "typedef decltype(valued<float>) valued_t;\n"
      "float twice(float v) { return 2 * total(v); }\n"
      "kernel void k(device float* o) { o[0] = twice(o[0]); sync(); }\n";
  EXPECT_EQ(run(rules::call_chains, src),
            "float total(float v BRONZE_CALLER) { BRONZE_FRAME return simd_sum(v); }\n"
            "void sync(BRONZE_CALLER_ONLY) { BRONZE_FRAME threadgroup_barrier(mem_flags::mem_threadgroup); }\n"
            "struct Acc { float top(float v BRONZE_CALLER) const { BRONZE_FRAME return simd_max(v); } "
            "float plain(float v) { return v; } };\n"
            "float declared(float v);\n"
            "float declared(float v) { return simd_sum(v); }\n"
            "constexpr float folded(float v) { return simd_sum(v); }\n"
            "template <class... T> float packed(T... v) { return simd_sum((v + ...)); }\n"
            "template <typename T> T valued(T v) { return simd_sum(v); }\n"
            "typedef decltype(valued<float>) valued_t;\n"
            "float twice(float v BRONZE_CALLER) { BRONZE_FRAME return 2 * total(v); }\n"
            "kernel void k(device float* o) { o[0] = twice(o[0]); sync(); }\n")
      << "helpers reaching a collective take their caller; kernels, declared, constexpr, variadic ones and those "
         "named outside a call (whose function type counts) do not";
}

TEST(RewriteRule, HalfConversions) {
  EXPECT_EQ(run(rules::half_conversions,
                "struct A { operator double() const; operator float() thread constant { return 1; }\n};\n"
                "template <typename T> struct B { operator float() && noexcept { return T(); } };\n"),
            "struct A { operator double() const; operator float() thread constant { return 1; } "
            "BRONZE_HALF_THROUGH(float, const)\n};\n"
            "template <typename T> struct B { operator float() && noexcept { return T(); } BRONZE_HALF_THROUGH(float, &&) };\n")
      << "one per class, through float before double, with the qualifiers of `this` but its address space";
  EXPECT_EQ(run(rules::half_conversions, "struct D { operator double(); };\n"),
            "struct D { operator double(); BRONZE_HALF_THROUGH(double,) };\n");
  const std::string untouched =
      "struct E { explicit operator float() const { return 1; } };\n"  // Metal casts through it to float only
      "struct F { operator float() = delete; };\n"
      "struct G { operator float() const; template <class T> operator T() const; };\n"  // the two would tie
      "struct H { int f(); };\n"
      "H::operator float() const { return 1; }\n"
      "inline float g(thread A& a) { return a.operator float() + operator float(); }\n"
      "kernel void k(device float* o) { struct L { operator float() { return 1; } }; o[0] = L(); }\n";
  EXPECT_EQ(run(rules::half_conversions, untouched), untouched)
      << "explicit, deleted, beside a conversion template, outside a class, or in a local class (no member templates)";
}

TEST(RewriteRule, DivergentShufflesRunBeforeTheirBranch) {
  using bronze::shader::rules::hoist_divergent_shuffles;
  EXPECT_EQ(hoist_divergent_shuffles("if (lane >= 1) x += simd_shuffle_up(x, 1);"),
            "{ auto bronze_shuffled_0 = simd_shuffle_up(x, 1); if (lane >= 1) x += bronze_shuffled_0; }");
  EXPECT_EQ(hoist_divergent_shuffles("if (l < 16) { v = max(v, simd_shuffle_xor(v,\n 16)); }\nw = 1;"),
            "{ auto bronze_shuffled_0 = simd_shuffle_xor(v,  16); if (l < 16) { v = max(v, bronze_shuffled_0\n); } }\nw = 1;");
  // Left where they are: an else, a condition or operand with side effects,
  // two statements, reductions over the active lanes.
  for (const char* kept : {"if (a) x = simd_shuffle(x, 1); else x = 0;", "if (f(a)) x = simd_shuffle(x, 1);",
                           "if (a) x = simd_shuffle(x++, 1);", "if (a == (b = c)) x = simd_shuffle(x, 1);",
                           "if (a) { y = 1; x = simd_shuffle(x, 1); }", "if (a) x += simd_sum(x);",
                           "if (a) x = simd_shuffle(g(x), 1);", "if (a) x = simd_broadcast_first(x);"})
    EXPECT_EQ(hoist_divergent_shuffles(kept), kept);
  EXPECT_EQ(hoist_divergent_shuffles("if (a <= b && c != d) q = quad_shuffle_down(p[i], 1);"),
            "{ auto bronze_shuffled_0 = quad_shuffle_down(p[i], 1); if (a <= b && c != d) q = bronze_shuffled_0; }");
}

TEST(RewriteRule, ConditionalOperandsKeepMetalsConversions) {
  using bronze::shader::rules::convert_conditional_operands;
  EXPECT_EQ(convert_conditional_operands("void f() { y = c ? h : 0; }"),
            "void f() { y = c ? bronze_rt::cond<decltype((0))>((h)) : bronze_rt::cond<decltype((h))>((0)); }");
  EXPECT_EQ(convert_conditional_operands("void f() { v = (asc ? a < b : a > b); }"),
            "void f() { v = (asc ? bronze_rt::cond<decltype((a > b))>((a < b)) : "
            "bronze_rt::cond<decltype((a < b))>((a > b))); }");
  EXPECT_EQ(convert_conditional_operands("void f() { y = c ? h :\n x / 16.f; }"),
            "void f() { y = c ? bronze_rt::cond<decltype((x / 16.f))>((h)) :\n"
            " bronze_rt::cond<decltype((h))>((x / 16.f)); }");
  // Outside function bodies, two literals, a template argument: as written.
  for (const char* kept : {"constant int k = c ? a : b;", "void f() { vec<T, N ? 1 : 2> v; }",
                           "void f() { x = c ? 1 : 2; }"})
    EXPECT_EQ(convert_conditional_operands(kept), kept);
}
