#include "common.hpp"

NB_MODULE(_C, m) {
  m.doc() = "bronze's C++ core (the Python package wraps it thinly)";
  bronze::py::bind_errors(m);
  bronze::py::bind_runtime(m);
  bronze::py::bind_tensor(m);
  bronze::py::bind_shader(m);
  bronze::py::bind_log(m);
  bronze::py::bind_metallib(m);
  m.def("_quiet_leaks", [] { nanobind::set_leak_warnings(false); },
        "Turns off nanobind's report of objects alive at exit (bronze.torch: torch keeps the functions of its "
        "registered ops, and the libraries they hold, to the end).");
}
