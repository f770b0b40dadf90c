// The metal_stdlib emulation that every generated unit includes, embedded
// into libbronze at build time (src/shader/metal/bronze_metal.h); each
// backend adds its own device header (barriers, simdgroup functions,
// atomics) beside it.
#pragma once

namespace bronze::embedded {
extern const char* const bronze_metal_h;
}  // namespace bronze::embedded
