// The CUDA backend's runtime (skipped without a GPU; scripts/gpu-check runs
// it on the GPU machine).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "backends/cuda/cuda_kernels.hpp"
#include "backends/cuda/driver_api.hpp"
#include "backends/cuda/nvrtc.hpp"
#include "backends/cuda/toolkit_paths.hpp"
#include "bronze/bronze.hpp"

namespace {
const bronze::Device kCuda(bronze::DeviceType::CUDA, 0);

#define REQUIRE_CUDA() \
  if (!bronze::is_available(bronze::DeviceType::CUDA)) GTEST_SKIP() << bronze::cuda_status()
}  // namespace

TEST(Cuda, StatusExplainsAvailability) {
  EXPECT_FALSE(bronze::cuda_status().empty());
  EXPECT_EQ(bronze::is_available(bronze::DeviceType::CUDA), bronze::device_count(bronze::DeviceType::CUDA) > 0);
}

TEST(Cuda, PropertiesAndMemory) {
  REQUIRE_CUDA();
  auto p = bronze::get_device_properties(kCuda);
  EXPECT_GT(p.total_memory, 1ull << 30);
  EXPECT_EQ(p.simd_width, 32);
  auto base = bronze::current_allocated_memory(kCuda);
  {
    auto t = bronze::empty({1 << 20}, bronze::DType::Float32, kCuda);
    EXPECT_EQ(bronze::current_allocated_memory(kCuda), base + (4u << 20));
  }
  EXPECT_EQ(bronze::current_allocated_memory(kCuda), base);
}

TEST(Cuda, HostRoundTripAndFill) {
  REQUIRE_CUDA();
  std::vector<float> host(1000);
  for (int i = 0; i < 1000; ++i) host[i] = static_cast<float>(i);
  auto t = bronze::from_host(host.data(), {1000}, bronze::DType::Float32, kCuda);
  auto back = t.to(bronze::Device()).to_double_vector();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(back[i], i);
  auto f = bronze::full({10}, 1.0, bronze::DType::Float64, kCuda);
  for (double v : f.to_double_vector()) EXPECT_EQ(v, 1.0);
  auto sum = bronze::add(t, 1.0).to_double_vector();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sum[i], i + 1.0);
  auto a = bronze::mm(t.reshape({10, 100}), t.reshape({100, 10})).to_double_vector();
  auto ref = bronze::mm(bronze::from_host(host.data(), {10, 100}, bronze::DType::Float32),
                        bronze::from_host(host.data(), {100, 10}, bronze::DType::Float32)).to_double_vector();
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], ref[i], 1e-3 * std::abs(ref[i]) + 1e-3);
}

TEST(Cuda, HostVisibleMemoryIsMappedAndPooledApart) {
  REQUIRE_CUDA();
  bronze::synchronize(kCuda);
  const auto device_base = bronze::current_allocated_memory(kCuda);
  const auto host_base = bronze::host_visible_memory_stats(kCuda).allocated_bytes;
  {
    auto t = bronze::empty({256}, bronze::DType::Float32, kCuda, /*host_visible=*/true);
    EXPECT_TRUE(t.is_host_visible());
    EXPECT_FALSE(bronze::empty({4}, bronze::DType::Float32, kCuda).is_host_visible());
    EXPECT_EQ(bronze::host_visible_memory_stats(kCuda).allocated_bytes, host_base + 1024);
    EXPECT_EQ(bronze::current_allocated_memory(kCuda), device_base);
    t.fill_(5.0);
    bronze::synchronize(kCuda);
    auto* p = static_cast<float*>(t.data_ptr());  // the host reads what the GPU wrote, in place
    EXPECT_EQ(p[0], 5.0f);
    EXPECT_EQ(p[255], 5.0f);
    p[3] = -1.0f;
    auto sum = bronze::add(t, 1.0).to_double_vector();  // and the GPU reads what the host wrote
    EXPECT_EQ(sum[3], 0.0);
    EXPECT_EQ(sum[4], 6.0);
  }
  EXPECT_EQ(bronze::host_visible_memory_stats(kCuda).allocated_bytes, host_base);
}

TEST(Cuda, EventsTimeStreamWork) {
  REQUIRE_CUDA();
  bronze::Stream s(kCuda);
  bronze::Event a(true), b(true);
  a.record(s);
  {
    bronze::StreamGuard g(s);
    auto x = bronze::full({1 << 24}, 2.0f, bronze::DType::Float32, kCuda);
  }
  b.record(s);
  EXPECT_GE(a.elapsed_time(b), 0.0);
  EXPECT_TRUE(b.query());
  bronze::synchronize(kCuda);
}

// Another library's CUstream (as PyTorch's current stream reaches bronze.torch):
// bronze's work is queued on it, and dropping the bronze Stream leaves it alive.
TEST(Cuda, ExternalStreamQueuesWorkWithoutOwningIt) {
  EXPECT_THROW(bronze::Stream::external(0, bronze::Device(bronze::DeviceType::CPU, 0)), bronze::NotSupportedError);
  REQUIRE_CUDA();
  bronze::synchronize(kCuda);  // the device's primary context is now current on this thread
  using bronze::cuda::CUDA_SUCCESS;
  const bronze::cuda::Driver* d = bronze::cuda::driver();
  bronze::cuda::CUstream raw = nullptr;
  ASSERT_EQ(d->cuStreamCreate(&raw, 0), CUDA_SUCCESS);
  bronze::Tensor x;
  {
    bronze::Stream s = bronze::Stream::external(reinterpret_cast<std::uintptr_t>(raw), kCuda);
    EXPECT_EQ(s.device(), kCuda);
    bronze::StreamGuard g(s);
    x = bronze::full({1 << 20}, 2.0f, bronze::DType::Float32, kCuda);
    x = bronze::add(x, 1.0);
    s.synchronize();
  }
  auto v = x.to_double_vector();
  EXPECT_EQ(v.front(), 3.0);
  EXPECT_EQ(v.back(), 3.0);
  EXPECT_EQ(d->cuStreamQuery(raw), CUDA_SUCCESS);  // still a stream: bronze did not destroy it
  EXPECT_EQ(d->cuStreamDestroy(raw), CUDA_SUCCESS);
}

// The generated kernel sources compile with NVRTC for sm_90 wherever NVRTC
// is installed, with or without a GPU (a subset that covers every code path).
TEST(CudaKernels, GeneratedSourcesCompileWithNvrtc) {
  if (!bronze::cuda::nvrtc_available()) GTEST_SKIP() << bronze::cuda::nvrtc_status();
  using bronze::DType;
  const DType all[] = {DType::Bool,    DType::UInt8,    DType::Int8,    DType::Int16,  DType::Int32,
                       DType::Int64,   DType::Float16,  DType::BFloat16, DType::Float32, DType::Float64};
  std::vector<std::pair<std::string, bool>> sources;
  for (DType t : all) {
    for (DType s : {DType::Bool, DType::Float16, DType::Int64, DType::Float32}) sources.push_back({bronze::cuda::copy_source(t, s), false});
    for (bool integer : {false, true}) sources.push_back({bronze::cuda::arange_source(t, integer), false});
    for (bool vec : {false, true}) {
      sources.push_back({bronze::cuda::binary_source(t, bronze::runtime::BinaryOp::Div, false, vec), false});
      sources.push_back({bronze::cuda::binary_source(t, bronze::runtime::BinaryOp::RSub, true, vec), false});
    }
    for (auto k : {bronze::runtime::RandomKind::Uniform, bronze::runtime::RandomKind::Int})
      sources.push_back({bronze::cuda::random_source(t, k, t == DType::Float64, false), true});
    for (bool standard : {false, true})
      sources.push_back({bronze::cuda::random_source(t, bronze::runtime::RandomKind::Normal, t == DType::Float64, standard), true});
  }
  sources.push_back({bronze::cuda::random_source(DType::Int64, bronze::runtime::RandomKind::Int, true, false), true});
  for (unsigned bytes : {1u, 2u, 4u, 8u}) sources.push_back({bronze::cuda::fill_source(bytes), false});
  for (const auto& [src, exact] : sources) {
    std::vector<char> cubin;
    ASSERT_NO_THROW(cubin = bronze::cuda::compile_tensor_kernel(src, 90, exact)) << src;
    EXPECT_GT(cubin.size(), 100u);
  }
}

// The toolkit libraries are looked for on the library path, then in pip's
// NVIDIA wheels (which the Python package names), then the toolkit's folders.
TEST(ToolkitPaths, PipWheelsComeAfterTheLibraryPathAndBeforeTheToolkit) {
  const auto saved = bronze::cuda::pip_library_dirs();
  bronze::cuda::set_pip_library_dirs({"/sp/nvidia/cu13/lib", "/sp/nvidia/cuda_nvrtc/lib/"});
  ::unsetenv("BRONZE_TEST_LIBRARY");
  const auto names = bronze::cuda::toolkit_library_candidates("BRONZE_TEST_LIBRARY", "libnvrtc");
  bronze::cuda::set_pip_library_dirs(saved);
  auto at = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  ASSERT_LT(at("/sp/nvidia/cu13/lib/libnvrtc.so.13"), (long)names.size());
  EXPECT_LT(at("libnvrtc.so.12"), at("/sp/nvidia/cu13/lib/libnvrtc.so.13"));
  EXPECT_LT(at("/sp/nvidia/cu13/lib/libnvrtc.so.12"), at("/sp/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"));
  EXPECT_LT(at("/sp/nvidia/cuda_nvrtc/lib/libnvrtc.so"), at("/usr/local/cuda/lib64/libnvrtc.so.13"));
  ::setenv("BRONZE_TEST_LIBRARY", "/x/libnvrtc.so", 1);
  EXPECT_EQ(bronze::cuda::toolkit_library_candidates("BRONZE_TEST_LIBRARY", "libnvrtc"),
            std::vector<std::string>{"/x/libnvrtc.so"});
  ::unsetenv("BRONZE_TEST_LIBRARY");
}

// bronze-nvrtc's files (backends/cuda/nvrtc_worker.cpp): a request and a
// result read back as written, any bytes included; a cut file is refused.
TEST(NvrtcWorker, RequestAndResultRoundTrip) {
  bronze::cuda::NvrtcRequest rq;
  rq.source = std::string("kernel\0with a NUL 12:34 ", 24);
  rq.filename = "a b.cu";
  rq.headers = {{"h.h", "#define X 1\n"}, {"", ""}};
  rq.arch = 90;
  rq.ptx = true;
  rq.syntax_only = true;
  rq.options = {"-lineinfo", "--ftz=true"};
  const std::string data = bronze::cuda::encode_request(rq);
  auto back = bronze::cuda::decode_request(data);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->source, rq.source);
  EXPECT_EQ(back->filename, rq.filename);
  EXPECT_EQ(back->headers, rq.headers);
  EXPECT_EQ(back->options, rq.options);
  EXPECT_TRUE(back->arch == 90 && back->ptx && back->syntax_only);
  EXPECT_FALSE(bronze::cuda::decode_request(data.substr(0, data.size() - 3)));
  bronze::cuda::NvrtcResult r;
  r.ok = true;
  r.log = "warning: x";
  r.image = {'\x7f', 'E', 'L', 'F', '\0', ' ', ':'};
  auto result = bronze::cuda::decode_result(bronze::cuda::encode_result(r));
  ASSERT_TRUE(result);
  EXPECT_TRUE(result->ok);
  EXPECT_EQ(result->log, r.log);
  EXPECT_EQ(result->image, r.image);
}
