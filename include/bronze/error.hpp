// Exception types thrown by bronze. Every failure the user can cause (bad
// argument, compile error, allocation over the limit, failed queued work) is
// one of these, so callers can catch bronze::Error and keep going.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace bronze {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A value is out of range or inconsistent (Python: ValueError).
class ValueError : public Error {
 public:
  using Error::Error;
};

// An argument has the wrong type or dtype (Python: TypeError).
class TypeError : public Error {
 public:
  using Error::Error;
};

// A kernel call's argument of the wrong kind (a number for a buffer, a
// tensor for a value): a TypeError that is also a RuntimeError in Python,
// as torch.mps raises RuntimeError there.
class KernelArgumentError : public TypeError {
 public:
  using TypeError::TypeError;
};

// The requested feature is not available on this device or build.
class NotSupportedError : public Error {
 public:
  using Error::Error;
};

// Work queued on a stream failed; raised at the next synchronization point.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// An allocation did not fit under the memory limit or in device memory.
class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(const std::string& what, std::size_t requested, std::size_t allocated,
                   std::size_t reserved, std::size_t limit)
      : Error(what), requested_(requested), allocated_(allocated), reserved_(reserved),
        limit_(limit) {}
  std::size_t requested() const { return requested_; }
  std::size_t allocated() const { return allocated_; }
  std::size_t reserved() const { return reserved_; }
  std::size_t limit() const { return limit_; }

 private:
  std::size_t requested_, allocated_, reserved_, limit_;
};

// A shader failed to compile. line/column point into the user's source
// (1-based; 0 when the compiler gave no position).
class ShaderCompileError : public Error {
 public:
  ShaderCompileError(const std::string& what, int line = 0, int column = 0)
      : Error(what), line_(line), column_(column) {}
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_, column_;
};

// A shader includes a part of Metal that bronze has no emulation of (Metal
// 4's <metal_tensor> and <MetalPerformancePrimitives>), reported at the
// user's #include. Python raises it as both ShaderCompileError and
// NotSupportedError.
class ShaderNotSupportedError : public ShaderCompileError {
 public:
  using ShaderCompileError::ShaderCompileError;
};

// A library has no kernel of the requested name.
class KernelNotFoundError : public Error {
 public:
  using Error::Error;
};

}  // namespace bronze
