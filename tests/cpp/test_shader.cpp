#include <dlfcn.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>

#include "bronze/bronze.hpp"
#include "jit/disk_cache.hpp"
#include "jit/host_compiler.hpp"
#include "jit/sha256.hpp"
#include "shader/bronzelib.hpp"
#include "shader/lexer.hpp"
#include "shader/diagnostics.hpp"
#include "shader/parser.hpp"
#include "backends/cpu/metal/cpu_codegen.hpp"
#include "shader/types.hpp"

using bronze::ParamKind;
using bronze::shader::parse;

// The stack-usage reports of GCC (file:line:col:signature) and Clang
// (file:line:mangled name): only the user's file counts, 512 KiB passes.
TEST(StackUsage, AFunctionOverTheLimitIsACompileErrorAtItsLine) {
  const std::string src = "kernel void a() {}\nkernel void b() {}\n";
  const std::string fine =
      "shader.metal:1:13:void bronze_msl::a()\t524288\tstatic\n"
      "bronze_metal_cpu.h:300:6:void bronze_rt::fiber_main()\t9000000\tstatic\n";
  const std::vector<bronze::shader::SourceFile> files = {{"shader.metal", src}};
  EXPECT_NO_THROW(bronze::shader::check_stack_usage(fine, files));
  for (const std::string over : {"shader.metal:2:13:void bronze_msl::b()\t1204048\tstatic\n",
                                 "shader.metal:2:_ZN10bronze_msl1bEv\t1204048\tstatic\n"}) {
    try {
      bronze::shader::check_stack_usage(fine + over, files);
      FAIL() << over;
    } catch (const bronze::ShaderCompileError& e) {
      EXPECT_EQ(e.line(), 2);
      EXPECT_NE(std::string(e.what()).find("needs 1176 KiB of stack per thread"), std::string::npos) << e.what();
    }
  }
  // Clang inlines a kernel into its entry: the entry's frame is the kernel's, at its definition.
  const bronze::shader::ParsedSource ps = parse(src, "shader.metal");
  try {
    bronze::shader::check_stack_usage(fine + "bronze-entry:9:bronze_entry_1\t1204048\tstatic\n", files, &ps);
    FAIL() << "an entry over the limit";
  } catch (const bronze::ShaderCompileError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_NE(std::string(e.what()).find("kernel 'b' needs 1176 KiB"), std::string::npos) << e.what();
  }
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(bronze::jit::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(bronze::jit::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Lexer, PositionsCommentsAndErrors) {
  auto t = bronze::shader::lex("#include <metal_stdlib>\n/* c */ kernel void f(float x[[buffer(0)]]) { a::b = 1.5e-3f; }");
  EXPECT_EQ(t[0].kind, bronze::shader::Token::Preproc);
  EXPECT_EQ(t[1].text, "kernel");
  EXPECT_EQ(t[1].line, 2);
  EXPECT_EQ(t[1].col, 9);
  bool number = false, scope = false;
  for (const auto& x : t) {
    number |= x.text == "1.5e-3f";
    scope |= x.text == "::";
  }
  EXPECT_TRUE(number);
  EXPECT_TRUE(scope);
  try {
    bronze::shader::lex("a\n  \"unterminated");
    FAIL();
  } catch (const bronze::ShaderCompileError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 3);
  }
}

TEST(Parser, ReflectsSignature) {
  auto ps = parse(R"(
    kernel void k(device const float* in [[buffer(1)]], device half4* out [[buffer(0)]],
                  constant uint& n, threadgroup float* scratch [[threadgroup(0)]],
                  uint3 gid [[thread_position_in_grid]], ushort lane [[thread_index_in_simdgroup]]) {
      out[gid.x] = half4(in[gid.x]);
    })", "t.metal");
  ASSERT_EQ(ps.kernels.size(), 1u);
  const auto& k = ps.kernels[0].info;
  EXPECT_EQ(k.name, "k");
  ASSERT_EQ(k.params.size(), 6u);
  EXPECT_EQ(k.params[0].kind, ParamKind::Buffer);
  EXPECT_TRUE(k.params[0].read_only);
  EXPECT_EQ(k.params[0].type, "float");
  EXPECT_EQ(ps.kernels[0].params[0].index_expr, "1");  // evaluated by the compiler: below
  EXPECT_FALSE(k.params[1].read_only);
  EXPECT_EQ(k.params[2].kind, ParamKind::Scalar);
  EXPECT_EQ(k.params[3].kind, ParamKind::ThreadgroupBuffer);
  EXPECT_EQ(k.params[4].attribute, "thread_position_in_grid");
  EXPECT_EQ(k.params[5].type, "ushort");
  EXPECT_FALSE(k.cooperative);
}

// Indices are constant expressions the compiler evaluates (an enum's
// constant, arithmetic); implicit slots take the free ones in declaration
// order, and the call's arguments follow the slots.
TEST(Parser, TheCompilerEvaluatesIndicesAndSlots) {
  auto lib = bronze::compile_shader(R"(
    namespace ops { enum { kIn = 0, kOut = 3 }; }
    namespace ops {
    kernel void k(device float* out [[buffer(kOut)]], device const float* in [[buffer(kIn)]],
                  constant uint& n, device const float* b [[buffer(4 - 2)]],
                  threadgroup float* scratch [[threadgroup(1 + 1)]], uint gid [[thread_position_in_grid]]) {}
    })", {});
  const auto& k = lib.kernel("k").info();
  ASSERT_EQ(k.bindings(), 4);
  EXPECT_EQ(k.params[1].binding, 0);  // in: 0
  EXPECT_EQ(k.params[2].binding, 1);  // n: the first free slot, 1
  EXPECT_EQ(k.params[2].index, 1);
  EXPECT_EQ(k.params[3].binding, 2);  // b: 4 - 2
  EXPECT_EQ(k.params[0].binding, 3);  // out: 3
  EXPECT_EQ(k.params[4].index, 2);    // scratch's threadgroup index
  EXPECT_EQ(k.params[5].type, "uint");
}

// Collectives are Metal's functions by name: a library's helper whose name
// only starts like one is no collective.
TEST(Parser, OnlyMetalsCollectivesMakeAKernelCooperative) {
  auto ps = parse(R"(
    inline float simd_twice(float v) { return 2 * v; }
    inline float quad_helper(float v) { return v; }
    kernel void a(device float* x, uint i [[thread_position_in_grid]]) { x[i] = simd_twice(quad_helper(x[i])); }
    kernel void b(device float* x, uint i [[thread_position_in_grid]]) { x[i] = simd_prefix_exclusive_sum(x[i]); }
  )", "t.metal");
  ASSERT_EQ(ps.kernels.size(), 2u);
  EXPECT_FALSE(ps.kernels[0].info.cooperative);
  EXPECT_TRUE(ps.kernels[1].info.cooperative);
}

TEST(Parser, TemplatesAndCooperation) {
  auto ps = parse(R"(
    inline float reduce(float v) { return simd_sum(v); }
    inline float helper(float v) { return reduce(v); }
    template <typename T>
    kernel void a(device T* x, uint i [[thread_position_in_grid]]) { x[i] = T(helper(float(x[i]))); }
    template <typename T>
    kernel void b(device T* x, uint i [[thread_position_in_grid]]) { x[i] = x[i]; }
    template [[host_name("a_f")]] kernel void a<float>(device float*, uint);
    template [[host_name("b_h")]] kernel void b<half>(device half*, uint);
  )", "t.metal");
  ASSERT_EQ(ps.kernels.size(), 2u);
  EXPECT_EQ(ps.kernels[0].info.name, "a_f");
  EXPECT_EQ(ps.kernels[0].callee, "&::bronze_msl::a<float>");
  EXPECT_EQ(ps.kernels[0].info.params[0].type, "float");
  EXPECT_TRUE(ps.kernels[0].info.cooperative);  // through helper -> reduce -> simd_sum
  EXPECT_EQ(ps.kernels[1].info.params[0].type, "half");
  EXPECT_FALSE(ps.kernels[1].info.cooperative);
}

// A unit built in parts: a part's code has the entries of its kernels and
// drops the other kernels' explicit instantiations, so its compiler
// instantiates only its own.
TEST(Rewrite, APartHasItsKernelsEntriesAndInstantiations) {
  const std::string src = R"(
    template <typename T>
    kernel void a(device T* x, uint i [[thread_position_in_grid]]) { x[i] = x[i] + T(1); }
    kernel void plain(device float* x, uint i [[thread_position_in_grid]]) { x[i] = 0; }
    template [[host_name("a_f")]] kernel void a<float>(device float*, uint);
    template [[host_name("a_i")]] kernel void a<int>(device int*, uint);
  )";
  auto ps = parse(src, "t.metal");
  ASSERT_EQ(ps.kernels.size(), 3u);
  bronze::shader::RewriteOptions second;
  second.first_kernel = 1;
  second.last_kernel = 2;
  std::string all = bronze::cpu::generate(src, ps), part = bronze::cpu::generate(src, ps, second);
  auto has = [](const std::string& s, const std::string& x) { return s.find(x) != std::string::npos; };
  const std::string* names[] = {&ps.kernels[0].info.name, &ps.kernels[1].info.name, &ps.kernels[2].info.name};
  ASSERT_EQ(*names[0], "plain");  // a function kernel comes where it is defined
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(has(all, "bronze_entry_" + std::to_string(k)));
  EXPECT_FALSE(has(part, "bronze_entry_0"));
  EXPECT_TRUE(has(part, "bronze_entry_1"));
  EXPECT_FALSE(has(part, "bronze_entry_2"));
  EXPECT_TRUE(has(all, "a<int>"));
  EXPECT_TRUE(has(part, "a<float>"));
  EXPECT_FALSE(has(part, "a<int>"));  // instantiated only in the part that has it
  // Dropped text keeps its lines: the compiler's lines are the user's.
  auto body_lines = [](const std::string& s) {
    return std::count(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(s.find("bronze-entry")), '\n');
  };
  EXPECT_EQ(body_lines(all), body_lines(part));
}

TEST(Parser, RejectsWhatItCannotRun) {
  auto expect_error = [](const char* src, const char* what, int line) {
    try {
      parse(src, "t.metal");
      FAIL() << src;
    } catch (const bronze::ShaderCompileError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_EQ(e.line(), line);
    }
  };
  expect_error("kernel void f(\n texture2d<float> t) {}", "textures", 2);
  expect_error("kernel void f(device float* x) {}\nkernel void f(device float* y) {}", "defined twice", 2);
  expect_error("kernel void f(device float* x,\n uint i [[thread_positon_in_grid]]) {}",
               "did you mean [[thread_position_in_grid]]", 2);
  expect_error("kernel void f(float* x) {}", "without an address space", 1);
  expect_error("kernel void f(device float* x [[buffer(0), thread_position_in_grid]]) {}", "is not one", 1);
  // What only the compiler can tell, it reports at the user's line.
  try {
    bronze::compile_shader("kernel void f(device float* a [[buffer(0)]],\n device float* b [[buffer(1 - 1)]]) {}", {});
    FAIL();
  } catch (const bronze::ShaderCompileError& e) {
    EXPECT_NE(std::string(e.what()).find("another parameter's too"), std::string::npos) << e.what();
    EXPECT_EQ(e.line(), 1);
  }
}

TEST(ShaderTypes, ScalarTypes) {
  auto f4 = bronze::shader::scalar_type("metal::float4");
  EXPECT_TRUE(f4.known);
  EXPECT_EQ(f4.lanes, 4);
  EXPECT_EQ(f4.dtype, bronze::DType::Float32);
  EXPECT_EQ(bronze::shader::scalar_type("uint32_t").dtype, bronze::DType::UInt32);
  EXPECT_EQ(bronze::shader::scalar_type("int").dtype, bronze::DType::Int32);
  EXPECT_EQ(bronze::shader::scalar_type("uint3").lanes, 3);
  EXPECT_EQ(bronze::shader::scalar_type("atomic_uint").dtype, bronze::DType::UInt32);
  EXPECT_EQ(bronze::shader::scalar_type("packed_half3").lanes, 3);
  EXPECT_FALSE(bronze::shader::scalar_type("MyParams").known);
}

TEST(ShaderDispatch, ArgumentBufferFromATensorVector) {
  auto lib = bronze::compile_shader(
      "struct Pair { device const float* a; device float* b; };\n"
      "kernel void add1(constant Pair& p, uint i [[thread_position_in_grid]]) { p.b[i] = p.a[i] + 1; }");
  std::vector<bronze::Tensor> pair = {bronze::full({8}, 2.0), bronze::zeros({8})};
  bronze::DispatchOptions o;
  o.threads = bronze::Dim3{8, 1, 1};
  lib.kernel("add1").dispatch({pair}, o);
  for (double v : pair[1].to_double_vector()) EXPECT_EQ(v, 3.0);
  std::vector<bronze::Tensor> one = {pair[0]};
  EXPECT_THROW(lib.kernel("add1").dispatch({one}, o), bronze::ValueError);
}

// A function constant's value is a C++ expression, as the code sees it: a
// parameter it guards is there exactly when the value is true ("0u", "(0)"
// and "0.0" are false).
TEST(ShaderDispatch, AGuardedParameterFollowsTheConstantsValueAsTheCodeSeesIt) {
  const std::string src =
      "constant bool on [[function_constant(0)]];\n"
      "kernel void f(device float* o [[buffer(0)]], constant float& v [[buffer(1), function_constant(on)]],\n"
      "              uint i [[thread_position_in_grid]]) { o[i] = on ? v : -1.0f; }";
  auto o = bronze::zeros({2});
  for (const char* off : {"0u", "(0)", "0.0", "false", "1 - 1"}) {
    bronze::CompileOptions c;
    c.constants = {{"on", off}};
    auto k = bronze::compile_shader(src, c).kernel("f");
    EXPECT_EQ(k.info().bindings(), 1) << off;
    k.dispatch({o});
    for (double v : o.to_double_vector()) EXPECT_EQ(v, -1.0) << off;
  }
  for (const char* on : {"1u", "(1)", "0.5", "true"}) {
    bronze::CompileOptions c;
    c.constants = {{"0", on}};
    auto k = bronze::compile_shader(src, c).kernel("f");
    EXPECT_EQ(k.info().bindings(), 2) << on;
    k.dispatch({o, bronze::Scalar(3.0)});
    for (double v : o.to_double_vector()) EXPECT_EQ(v, 3.0) << on;
  }
}

TEST(ShaderDispatch, CompileAndRunFromCpp) {
  auto lib = bronze::compile_shader(
      "kernel void full(device float* out, constant float& val, uint idx [[thread_position_in_grid]]) { out[idx] = val; }");
  auto t = bronze::empty({16});
  lib.kernel("full").dispatch({t, bronze::Scalar(2.5)});
  for (double v : t.to_double_vector()) EXPECT_EQ(v, 2.5);
  EXPECT_THROW(lib.kernel("nope"), bronze::KernelNotFoundError);
  EXPECT_THROW(lib.kernel("full").dispatch({t}), bronze::TypeError);
  EXPECT_THROW(lib.kernel("full").dispatch({bronze::Scalar(1.0), bronze::Scalar(1.0)}), bronze::KernelArgumentError);
  // A grid rounded up to whole threadgroups past the buffer is valid: the
  // kernel guards its tail.
  auto guarded = bronze::compile_shader(
      "kernel void fill(device float* out, constant uint& n, uint i [[thread_position_in_grid]]) {\n"
      "  if (i < n) out[i] = 7.0f;\n}");
  bronze::DispatchOptions rounded;
  rounded.threads = bronze::Dim3{64, 1, 1};
  rounded.group_size = bronze::Dim3{32, 1, 1};
  guarded.kernel("fill").dispatch({t, bronze::Scalar(std::int64_t{16})}, rounded);
  for (double v : t.to_double_vector()) EXPECT_EQ(v, 7.0);
  try {
    bronze::compile_shader("kernel void f(device float* o) {\n  o[0] = nope;\n}");
    FAIL();
  } catch (const bronze::ShaderCompileError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_NE(std::string(e.what()).find("o[0] = nope;"), std::string::npos);
  }
}

// A fault or a runaway in a kernel fails its launch (DeviceError at the
// synchronize) and the device goes on; C++ callers get the same guard.
TEST(ShaderDispatch, FaultsAndRunawaysFailOnlyTheirLaunch) {
  auto lib = bronze::compile_shader(
      "kernel void wild(device int* o, uint i [[thread_position_in_grid]]) { *(device int*)(64 + i) = 1; }\n"
      "kernel void spin(volatile device int* f, uint i [[thread_position_in_grid]]) { while (f[0] == 0) {} }\n"
      "kernel void fill(device int* o, uint i [[thread_position_in_grid]]) { o[i] = 3; }\n");
  auto t = bronze::zeros({8}, bronze::DType::Int32);
  lib.kernel("wild").dispatch({t});
  try {
    bronze::synchronize();
    FAIL() << "the fault was not reported";
  } catch (const bronze::DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'wild' stopped at an invalid memory access at 0x40"), std::string::npos)
        << e.what();
  }
#ifndef __SANITIZE_THREAD__  // TSan defers signals to its interceptors, which a spinning kernel never calls
  bronze::set_kernel_time_limit(0.2);
  lib.kernel("spin").dispatch({t});
  EXPECT_THROW(bronze::synchronize(), bronze::DeviceError);
  bronze::set_kernel_time_limit(0);
#endif
  EXPECT_THROW(bronze::set_kernel_time_limit(-1), bronze::ValueError);
  lib.kernel("fill").dispatch({t});
  for (double v : t.to_double_vector()) EXPECT_EQ(v, 3.0);
}

// Inputs the fuzzer once crashed on (tests/fuzz/regressions): each must now
// parse or fail with a bronze error, under any build.
TEST(Parser, FuzzRegressionsDoNotCrash) {
  for (const char* name : {"shader-unclosed-attribute", "shader-instantiation-without-semicolon",
                           "shader-threadgroup-initializer-without-semicolon"}) {
    std::ifstream f(std::string(BRONZE_SOURCE_DIR) + "/tests/fuzz/regressions/" + name, std::ios::binary);
    ASSERT_TRUE(f) << name;
    std::string src((std::istreambuf_iterator<char>(f)), {});
    try {
      auto ps = parse(src, "fuzz.metal");
      (void)bronze::cpu::generate(src, ps);
    } catch (const bronze::Error&) {
    }
  }
}

// A .bronzelib whose object was built from another source than the one it
// carries is refused: its kernels would read a value's bytes as a pointer.
// rebuild=true ignores the object and builds the source it carries.
TEST(Bronzelib, AnObjectThatDoesNotMatchItsSourceIsRefusedOrRebuilt) {
  auto a = bronze::compile_library("kernel void k(device float* o, constant float& v) { o[0] = v; }");
  auto b = bronze::compile_library("kernel void k(device float* o, device float* p, constant float& v) { o[0] = v; }");
  auto fa = bronze::shader::decode_library(a.data(), a.size());
  auto fb = bronze::shader::decode_library(b.data(), b.size());
  fa.objects = fb.objects;
  auto doctored = bronze::shader::encode_library(fa);
  try {
    bronze::load_metallib(doctored, bronze::Device{bronze::DeviceType::CPU, 0});
    FAIL() << "a mismatched object loaded";
  } catch (const bronze::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("does not match its source"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(bronze::load_metallib(a, bronze::Device{bronze::DeviceType::CPU, 0}));
  auto rebuilt = bronze::load_metallib(doctored, bronze::Device{bronze::DeviceType::CPU, 0}, "", true);
  EXPECT_EQ(rebuilt.kernel("k").info().params.size(), 2u);  // the carried source's signature
}

// N27: another process trimming the cache may remove an entry between its
// lookup and the dlopen; what is loaded is this process's pin of it.
TEST(CompileCache, AnEntryTrimmedAfterItsLookupStillLoads) {
  auto& cache = bronze::jit::DiskCache::instance();
  if (!cache.writable() || !bronze::jit::HostCompiler::get().available()) GTEST_SKIP() << "no writable cache";
  const std::string src = "extern \"C\" int bronze_pin_probe() { return " +
                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000) +
                          "; }\n";
  const std::vector<std::string> flags = {"-shared", "-fPIC"};
  for (bool hit : {false, true}) {
    auto r = bronze::jit::build_shared_object(src, {}, flags, nullptr);
    ASSERT_FALSE(r.so_path.empty()) << r.diagnostics;
    EXPECT_EQ(r.cache_hit, hit);
    // The trim: every name of that file in the cache folder goes.
    struct stat built;
    ASSERT_EQ(::stat(r.so_path.c_str(), &built), 0);
    DIR* d = ::opendir(cache.dir().c_str());
    ASSERT_NE(d, nullptr);
    while (dirent* e = ::readdir(d)) {
      const std::string p = cache.dir() + "/" + e->d_name;
      struct stat st;
      if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == built.st_ino) ::unlink(p.c_str());
    }
    ::closedir(d);
    void* h = ::dlopen(r.so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << ::dlerror();
    EXPECT_NE(::dlsym(h, "bronze_pin_probe"), nullptr);
    ::dlclose(h);
    if (!hit) {  // stored again, for the lookup that follows
      auto again = bronze::jit::build_shared_object(src, {}, flags, nullptr);
      ASSERT_FALSE(again.cache_hit);
    }
  }
}
