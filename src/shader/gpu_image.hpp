// Raw CUDA modules for load_metallib: cubin (ELF), fatbin and PTX text, with
// kernel parameters from the caller's CUDA C++ declarations or, for PTX,
// from its .entry directives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shader/cuda_signatures.hpp"
#include "shader/library_impl.hpp"

namespace bronze::shader {

bool is_gpu_image(const std::uint8_t* data, std::size_t size);

// The kernels a PTX module declares (.entry), parameters typed from the PTX
// types: .u64/.b64 as buffers (device pointers), other scalars by value,
// .b8 arrays as structs of that many bytes.
std::vector<CudaKernel> parse_ptx_entries(const std::string& ptx);

std::shared_ptr<detail::LibraryImpl> load_gpu_image(const Device& device, const std::vector<std::uint8_t>& image,
                                                    const std::string& signatures);

}  // namespace bronze::shader
