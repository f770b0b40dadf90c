// The host BLAS, loaded at run time (OpenBLAS or any libblas with the CBLAS
// interface), so bronze links no BLAS and still builds without one.
#pragma once

#include <string>

namespace bronze::cpu::blas {

// Throws unless a CBLAS library was found: the one $BRONZE_BLAS_LIBRARY
// names (ValueError when it does not load), else OpenBLAS, else the system
// libblas/libcblas (NotSupportedError when none does).
void require();
std::string status();  // the library loaded, or why none was

// Row-major C = A @ B. trans_a/trans_b: the operand is stored transposed.
void sgemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
           const float* b, int ldb, float* c, int ldc);
void dgemm(bool trans_a, bool trans_b, int m, int n, int k, const double* a, int lda,
           const double* b, int ldb, double* c, int ldc);

}  // namespace bronze::cpu::blas
