// nvJitLink, loaded at run time like NVRTC (toolkit_paths.hpp): links
// relocatable device code into one cubin without a GPU or a context. An
// Apple .metallib kernel on CUDA is two such parts: the PTX LLVM built from
// its AIR and the entry and runtime functions NVRTC built (backends/cuda/air).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace bronze::cuda {

bool nvjitlink_available();
std::string nvjitlink_status();  // the library and version loaded, or why none

enum class LinkInput { Cubin, Ptx };

// The options nvjitlink() links with (part of a linked cubin's cache key).
std::vector<std::string> nvjitlink_options(int arch);

// A cubin for sm_<arch> linked from the parts (kind, name, bytes). Throws
// NotSupportedError without nvJitLink, Error with the linker's log when the
// parts do not link.
std::vector<char> nvjitlink(const std::vector<std::pair<LinkInput, std::pair<std::string, std::string>>>& parts,
                            int arch);

}  // namespace bronze::cuda
