// Sizes from the environment: "1073741824", "512M", "1G", "2GiB".
#pragma once

namespace bronze::jit {

// $var as a byte count, `fallback` when unset or empty; ValueError naming
// the variable when it is not a size.
unsigned long long env_size(const char* var, unsigned long long fallback);

}  // namespace bronze::jit
