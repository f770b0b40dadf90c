// Where bronze's warnings go: a degraded compile cache, a kernel argument
// bound against its declared type. stderr unless a handler is set; the
// Python module routes them to `warnings`.
#pragma once

#include <string>

namespace bronze::jit {

using WarningHandler = void (*)(const std::string&);
void set_warning_handler(WarningHandler h);
void warn(const std::string& message);

}  // namespace bronze::jit
