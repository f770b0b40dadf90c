// The whole public C++ API of bronze.
#pragma once

#include "bronze/device.hpp"
#include "bronze/dtype.hpp"
#include "bronze/error.hpp"
#include "bronze/event.hpp"
#include "bronze/memory.hpp"
#include "bronze/profiler.hpp"
#include "bronze/random.hpp"
#include "bronze/scalar.hpp"
#include "bronze/shader.hpp"
#include "bronze/stream.hpp"
#include "bronze/tensor.hpp"
