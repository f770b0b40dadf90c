// Source files embedded into libbronze at build time (cmake/embed.cmake)
// for the compilers bronze runs at run time; each layer declares its own.
// These are the runtime's: the launch ABI every generated kernel shares, and
// the Philox generator the CUDA backend compiles with NVRTC.
#pragma once

namespace bronze::embedded {
extern const char* const launch_abi_h;         // runtime/launch_abi.h
extern const char* const philox_hpp;           // runtime/philox.hpp
extern const char* const ziggurat_tables_hpp;  // runtime/ziggurat_tables.hpp, which it includes
}  // namespace bronze::embedded
