// Settings from the environment ($BRONZE_*), each parsed strictly by one of
// these: unset or empty is the default; any other value that does not parse
// is a ValueError naming the variable and the value, never a default. They
// are read where the setting is used (importing bronze reads none), so the
// error is the error of the call that needed it, and `bronze info` says it.
#pragma once

#include <initializer_list>

namespace bronze::jit {

// A byte count: "1073741824", "512M", "1G", "2GiB" (K, M, G, T: powers of
// 1024), above 0.
unsigned long long env_size(const char* var, unsigned long long fallback);

// A switch: 1, true, yes, on or 0, false, no, off (in any case).
bool env_bool(const char* var, bool fallback);

// A whole number >= min, in decimal digits (one past long long is refused
// too, never wrapped).
long long env_count(const char* var, long long fallback, long long min);

// One of `names` (in any case): its index.
int env_choice(const char* var, int fallback, std::initializer_list<const char*> names);

// Seconds: a decimal number ("10", "0.5", "1e3") in [0, max].
double env_seconds(const char* var, double fallback, double max);

}  // namespace bronze::jit
