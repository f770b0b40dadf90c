// Argument conversions shared by the bindings: a wrong type or a value out of
// range is a short Python exception naming the argument.
#include <string>

#include <nanobind/stl/string.h>

#include "bronze/error.hpp"
#include "common.hpp"

namespace bronze::py {

std::string argument_types(const nb::args& args, const nb::kwargs& kwargs) {
  std::string s;
  for (nb::handle a : args) s += (s.empty() ? "" : ", ") + std::string(Py_TYPE(a.ptr())->tp_name);
  for (auto [k, v] : kwargs)
    s += (s.empty() ? "" : ", ") + nb::cast<std::string>(nb::str(k)) + "=" + Py_TYPE(v.ptr())->tp_name;
  return s;
}

double number_arg(nb::handle h, const char* what) {
  if (!PyUnicode_Check(h.ptr()) && !PyBytes_Check(h.ptr())) {
    const double d = PyFloat_AsDouble(h.ptr());  // float, int, or anything with __float__
    if (!(d == -1.0 && PyErr_Occurred())) return d;
    PyErr_Clear();
  }
  throw TypeError(std::string(what) + " must be a number, got " + Py_TYPE(h.ptr())->tp_name);
}

std::string text_arg(nb::handle h, const char* what) {
  if (!PyUnicode_Check(h.ptr())) throw TypeError(std::string(what) + " must be a str, got " + Py_TYPE(h.ptr())->tp_name);
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(h.ptr(), &n);
  if (!s) {  // a lone surrogate (os.fsdecode of undecodable bytes, "\udcff"): no UTF-8 for it
    PyErr_Clear();
    throw ValueError(std::string(what) + " is not valid text: it holds a lone surrogate, which has no UTF-8 form");
  }
  return std::string(s, static_cast<std::size_t>(n));
}

std::int64_t integer_arg(nb::handle h, const char* what) {
  if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr()))
    throw TypeError(std::string(what) + " must be an int, got " + Py_TYPE(h.ptr())->tp_name);
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow) throw ValueError(std::string(what) + " = " + nb::cast<std::string>(nb::str(h)) + " does not fit in int64");
  return n;
}

}  // namespace bronze::py
