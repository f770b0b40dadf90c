// Raw CUDA modules for load_metallib: telling a cubin (ELF), fatbin or PTX
// text from a .bronzelib, and reading PTX's .entry directives, which give
// the kernels' parameters when the caller gives no CUDA declarations.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_signatures.hpp"

namespace bronze::cuda {

bool is_gpu_image(const std::uint8_t* data, std::size_t size);
bool is_ptx(const std::uint8_t* data, std::size_t size);

// The kernels a PTX module declares (.entry), parameters typed from the PTX
// types: .u64/.b64 as buffers (device pointers), other scalars by value,
// .b8 arrays as structs of that many bytes.
std::vector<CudaKernel> parse_ptx_entries(const std::string& ptx);

}  // namespace bronze::cuda
