// bronze's emulation of Metal Shading Language's compute subset: one header
// for both compilers, the host C++ compiler (CPU backend) and NVRTC (CUDA).
// Everything lives in namespace bronze_msl, and so does the user's kernel
// source, so Metal's names (float4, max, sqrt) hide CUDA's built-in vector
// types and the C library's math. The few compiler-specific primitives are
// the BRONZE_* macros below; barriers, simdgroup functions and atomic
// operations come from bronze_metal_cpu.h or bronze_metal_cuda.h.
#pragma once
#include "launch_abi.h"
#if defined(__CUDACC_RTC__)
#define BRONZE_CUDA 1
#define BRONZE_M(f) ::f            /* CUDA's device math library */
#define BRONZE_FAST(f) ::__##f     /* its fast intrinsics: __expf, __sinf, __fdividef */
#define BRONZE_SQRT_RN(x) ::__fsqrt_rn(x)    /* IEEE whatever --prec-sqrt says */
#define BRONZE_DIV_RN(a, b) ::__fdiv_rn(a, b)
#define BRONZE_FAST_DIVIDE(a, b) ::__fdividef(a, b)
#define BRONZE_FAST_RSQRT(x) ::rsqrtf(x)
#define BRONZE_MEMCPY ::memcpy
#define BRONZE_INF __builtin_bit_cast(float, 0x7f800000u)  /* constant: libraries write constexpr x = -INFINITY */
#define BRONZE_QNAN __builtin_bit_cast(float, 0x7fc00000u)
#define BRONZE_POPCOUNT64(x) __popcll(x)
#define BRONZE_CLZ64(x) __clzll(x)
#define BRONZE_CTZ64(x) (__ffsll(x) - 1)
#else
#define BRONZE_CUDA 0
#include <stddef.h>
#include <stdint.h>
#define BRONZE_M(f) __builtin_##f  /* builtins only: no libc names leak into kernels */
#define BRONZE_FAST(f) __builtin_##f  /* no faster libm on the host: fast is libm's too */
#if defined(__clang__) && !__has_builtin(__builtin_exp10f)
// Clang before 18 has no __builtin_exp10: libm's, under a name of bronze's.
extern "C" float bronze_libm_exp10f(float) __asm__("exp10f");
extern "C" double bronze_libm_exp10(double) __asm__("exp10");
#define __builtin_exp10f bronze_libm_exp10f
#define __builtin_exp10 bronze_libm_exp10
#endif
#define BRONZE_SQRT_RN(x) __builtin_sqrtf(x)
// -freciprocal-math (fast mode) may turn a / b into a * (1 / b); b through
// memory keeps precise::divide one IEEE division.
#define BRONZE_DIV_RN(a, b) ::bronze_msl::bronze_rt::div_rn(a, b)
#define BRONZE_FAST_DIVIDE(a, b) ((a) / (b))
#define BRONZE_FAST_RSQRT(x) (1.0f / __builtin_sqrtf(x))
#define BRONZE_MEMCPY __builtin_memcpy
#define BRONZE_INF __builtin_inff()
#define BRONZE_QNAN __builtin_nanf("")
#define BRONZE_POPCOUNT64(x) __builtin_popcountll(x)
#define BRONZE_CLZ64(x) __builtin_clzll(x)
#define BRONZE_CTZ64(x) __builtin_ctzll(x)
#endif

namespace bronze_msl {
template <bool B, class T = void> struct bronze_if_ {};
template <class T> struct bronze_if_<true, T> { typedef T type; };
// A class that converts to bool (MLX's _NoMask masks): Metal's builtin half
// and bfloat take it in one step through bool, an integer type; these
// classes need a constructor for it.
#define BRONZE_FROM_BOOL_CLASS(T)                                                                      \
  template <class U, class = typename bronze_if_<__is_class(U), decltype(static_cast<bool>(*(const U*)0))>::type, \
            class = typename bronze_if_<!bronze_numeric_class_<U>::value>::type>                      \
  constexpr T(const U& u) : T(static_cast<bool>(u)) {}  // NOLINT
template <class U> struct bronze_numeric_class_ { static constexpr bool value = false; };
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;
#if BRONZE_CUDA
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;

// half as Metal has it: implicit conversions both ways; half op half and
// half op integer give half, half op float gives float. Arithmetic goes
// through float, which rounds +-*/ exactly as native half arithmetic.
// The conversions by hand, for constant expressions (MLX checks half
// arithmetic in static_asserts); at run time one instruction does each.
constexpr unsigned short bronze_f32_to_f16(float f) {  // round to nearest even
  const unsigned int x = __builtin_bit_cast(unsigned int, f), sign = (x >> 16) & 0x8000u;
  const unsigned int exp = (x >> 23) & 0xffu;
  unsigned int mant = x & 0x7fffffu;
  if (exp == 0xffu) return (unsigned short)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  const int e = (int)exp - 112;  // the half's biased exponent
  if (e >= 31) return (unsigned short)(sign | 0x7c00u);
  if (e <= 0) {  // a subnormal half, or zero
    if (e < -11) return (unsigned short)sign;
    mant |= 0x800000u;
    const unsigned int shift = (unsigned int)(14 - e), m = mant >> shift, rest = mant & ((1u << shift) - 1u),
                       halfway = 1u << (shift - 1u);
    return (unsigned short)(sign | (m + (rest > halfway || (rest == halfway && (m & 1u)))));
  }
  const unsigned int h = sign | ((unsigned int)e << 10) | (mant >> 13), rest = mant & 0x1fffu;
  return (unsigned short)(h + (rest > 0x1000u || (rest == 0x1000u && (h & 1u))));  // a carry rounds up to inf
}
constexpr float bronze_f16_to_f32(unsigned short h) {
  const unsigned int sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu;
  unsigned int mant = h & 0x3ffu;
  if (exp == 0x1fu) return __builtin_bit_cast(float, sign | 0x7f800000u | (mant << 13));
  if (exp) return __builtin_bit_cast(float, sign | ((exp + 112u) << 23) | (mant << 13));
  if (!mant) return __builtin_bit_cast(float, sign);
  unsigned int e = 113;  // a subnormal half is a normal float
  while (!(mant & 0x400u)) {
    mant <<= 1;
    --e;
  }
  return __builtin_bit_cast(float, sign | (e << 23) | ((mant & 0x3ffu) << 13));
}
inline unsigned short bronze_cvt_f16(float f) {
  unsigned short b;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
}
inline float bronze_cvt_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

struct half {
  unsigned short bits;
  half() = default;
  constexpr half(float f)  // NOLINT
      : bits(__builtin_is_constant_evaluated() ? bronze_f32_to_f16(f) : bronze_cvt_f16(f)) {}
  constexpr half(double d) : half((float)d) {}                             // NOLINT
  constexpr half(int i) : half((float)i) {}                                // NOLINT
  constexpr half(unsigned int i) : half((float)i) {}                       // NOLINT
  constexpr half(long i) : half((float)i) {}                               // NOLINT
  constexpr half(unsigned long i) : half((float)i) {}                      // NOLINT
  constexpr half(long long i) : half((float)i) {}                          // NOLINT
  constexpr half(unsigned long long i) : half((float)i) {}                 // NOLINT
  constexpr half(short i) : half((float)i) {}                              // NOLINT
  constexpr half(unsigned short i) : half((float)i) {}                     // NOLINT
  constexpr half(bool b) : half(b ? 1.0f : 0.0f) {}                        // NOLINT
  BRONZE_FROM_BOOL_CLASS(half)
  constexpr operator float() const {
    return __builtin_is_constant_evaluated() ? bronze_f16_to_f32(bits) : bronze_cvt_f32(bits);
  }
};
template <> struct bronze_numeric_class_<half> { static constexpr bool value = true; };
template <class U> struct half_mix;  // the result of half (op) U, for arithmetic U
template <> struct half_mix<float> { typedef float type; };
template <> struct half_mix<double> { typedef double type; };
#define BRONZE_HALF_INT(T) template <> struct half_mix<T> { typedef half type; };
BRONZE_HALF_INT(int) BRONZE_HALF_INT(unsigned int) BRONZE_HALF_INT(long) BRONZE_HALF_INT(unsigned long)
BRONZE_HALF_INT(long long) BRONZE_HALF_INT(unsigned long long) BRONZE_HALF_INT(short)
BRONZE_HALF_INT(unsigned short) BRONZE_HALF_INT(char) BRONZE_HALF_INT(signed char) BRONZE_HALF_INT(unsigned char)
#undef BRONZE_HALF_INT
template <class R> struct half_calc { typedef float type; };  // compute in float, double for double
template <> struct half_calc<double> { typedef double type; };
#define BRONZE_HALF_OP(op)                                                                              \
  constexpr half operator op(half a, half b) { return half(float(a) op float(b)); }                     \
  template <class U, class R = typename half_mix<U>::type> constexpr R operator op(half a, U b) {        \
    typedef typename half_calc<R>::type C;                                                              \
    return R(C(float(a)) op C(b));                                                                      \
  }                                                                                                     \
  template <class U, class R = typename half_mix<U>::type> constexpr R operator op(U a, half b) {        \
    typedef typename half_calc<R>::type C;                                                              \
    return R(C(a) op C(float(b)));                                                                      \
  }                                                                                                     \
  constexpr half& operator op##=(half& a, half b) { return a = a op b; }                                \
  template <class U, class = typename half_mix<U>::type> constexpr half& operator op##=(half& a, U b) {  \
    return a = half(float(a) op float(b));                                                              \
  }
BRONZE_HALF_OP(+) BRONZE_HALF_OP(-) BRONZE_HALF_OP(*) BRONZE_HALF_OP(/)
#undef BRONZE_HALF_OP
#define BRONZE_HALF_CMP(op)                                                                             \
  constexpr bool operator op(half a, half b) { return float(a) op float(b); }                           \
  template <class U, class = typename half_mix<U>::type> constexpr bool operator op(half a, U b) {       \
    typedef typename half_calc<typename half_mix<U>::type>::type C;                                     \
    return C(float(a)) op C(b);                                                                         \
  }                                                                                                     \
  template <class U, class = typename half_mix<U>::type> constexpr bool operator op(U a, half b) {       \
    typedef typename half_calc<typename half_mix<U>::type>::type C;                                     \
    return C(a) op C(float(b));                                                                         \
  }
BRONZE_HALF_CMP(<) BRONZE_HALF_CMP(>) BRONZE_HALF_CMP(<=) BRONZE_HALF_CMP(>=) BRONZE_HALF_CMP(==) BRONZE_HALF_CMP(!=)
#undef BRONZE_HALF_CMP
constexpr half operator-(half a) {
  half r{};
  r.bits = (unsigned short)(a.bits ^ 0x8000u);
  return r;
}
constexpr half operator+(half a) { return a; }
#else
typedef _Float16 half;
#endif

// A class's conversion to float or double reaches half in a cast, as in
// Metal: the rewrite puts this beside it (shader/rules/half_conversions.cpp).
// GCC 13 and later take float -> _Float16 (a lower rank, C++23's rule) as
// no standard conversion, so `static_cast<half>(x)` or `T(x)` with T = half
// found no way for MLX's fp8_e8m0. Explicit, so only casts consider it
// (`f(x)` with f(float) beside f(half) still takes f(float)); a template,
// so a conversion the class declares to half wins over it. CUDA's half
// takes the float through its constructor.
#if BRONZE_CUDA
#define BRONZE_HALF_THROUGH(from, ...)
#else
#define BRONZE_HALF_THROUGH(from, ...)                                                                   \
  template <class bronze_H, class = typename ::bronze_msl::bronze_if_<__is_same(bronze_H, ::bronze_msl::half)>::type> \
  constexpr explicit operator bronze_H() __VA_ARGS__ { return bronze_H(this->operator from()); }
#endif

// bfloat as Metal's compiler takes it: it converts implicitly to float, and
// from integers (libraries write `x = 0`), not from float or half; bfloat op
// bfloat and bfloat op integer give bfloat, bfloat op float gives float.
// Arithmetic goes through float. constexpr: kernels make bfloat constants.
struct bfloat {
  unsigned short bits;
  bfloat() = default;
  constexpr explicit bfloat(float f) : bits(round(__builtin_bit_cast(unsigned int, f))) {}  // round to nearest even
  constexpr explicit bfloat(double d) : bfloat((float)d) {}
  constexpr explicit bfloat(half h) : bfloat((float)h) {}
#define BRONZE_BF_FROM(T) constexpr bfloat(T i) : bfloat((float)i) {}  // NOLINT
  BRONZE_BF_FROM(int) BRONZE_BF_FROM(unsigned int) BRONZE_BF_FROM(long) BRONZE_BF_FROM(unsigned long)
  BRONZE_BF_FROM(long long) BRONZE_BF_FROM(unsigned long long) BRONZE_BF_FROM(short)
  BRONZE_BF_FROM(unsigned short) BRONZE_BF_FROM(signed char) BRONZE_BF_FROM(unsigned char) BRONZE_BF_FROM(char)
  BRONZE_BF_FROM(bool)
#undef BRONZE_BF_FROM
  BRONZE_FROM_BOOL_CLASS(bfloat)
  constexpr operator float() const { return __builtin_bit_cast(float, (unsigned int)bits << 16); }
#if !BRONZE_CUDA
  // static_cast<half>(b): GCC 13 takes float -> _Float16 (a lower rank) as no
  // implicit conversion, so operator float alone leaves no way there.
  constexpr explicit operator half() const { return (half)float(*this); }
#endif
  static constexpr unsigned short round(unsigned int x) {  // NaN stays NaN
    return (x & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((x >> 16) | 0x40u)
                                           : (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  }
};
template <> struct bronze_numeric_class_<bfloat> { static constexpr bool value = true; };
#undef BRONZE_FROM_BOOL_CLASS
template <class U> struct bfloat_mix { typedef bfloat type; };  // integers
template <> struct bfloat_mix<float> { typedef float type; };
template <> struct bfloat_mix<double> { typedef double type; };
template <class U> struct bfloat_arith { static constexpr bool value = false; };
#define BRONZE_BF_ARITH(T) template <> struct bfloat_arith<T> { static constexpr bool value = true; };
BRONZE_BF_ARITH(float) BRONZE_BF_ARITH(double) BRONZE_BF_ARITH(int) BRONZE_BF_ARITH(unsigned int)
BRONZE_BF_ARITH(long) BRONZE_BF_ARITH(unsigned long) BRONZE_BF_ARITH(long long)
BRONZE_BF_ARITH(unsigned long long) BRONZE_BF_ARITH(short) BRONZE_BF_ARITH(unsigned short)
BRONZE_BF_ARITH(signed char) BRONZE_BF_ARITH(unsigned char) BRONZE_BF_ARITH(char)
#undef BRONZE_BF_ARITH
// The exact-match templates win over the built-in operators on float, so a
// mix never meets two equally good conversions.
#define BRONZE_BF_OP(op)                                                                                \
  constexpr bfloat operator op(bfloat a, bfloat b) { return bfloat(float(a) op float(b)); }              \
  template <class U, class R = typename bronze_if_<bfloat_arith<U>::value, typename bfloat_mix<U>::type>::type> \
  constexpr R operator op(bfloat a, U b) { return R(float(a) op b); }                                    \
  template <class U, class R = typename bronze_if_<bfloat_arith<U>::value, typename bfloat_mix<U>::type>::type> \
  constexpr R operator op(U a, bfloat b) { return R(a op float(b)); }                                    \
  constexpr bfloat& operator op##=(bfloat& a, bfloat b) { return a = bfloat(float(a) op float(b)); }     \
  template <class U, class = typename bronze_if_<bfloat_arith<U>::value>::type>                          \
  constexpr bfloat& operator op##=(bfloat& a, U b) { return a = bfloat(float(a) op b); }
BRONZE_BF_OP(+) BRONZE_BF_OP(-) BRONZE_BF_OP(*) BRONZE_BF_OP(/)
#undef BRONZE_BF_OP
#define BRONZE_BF_CMP(op)                                                                               \
  constexpr bool operator op(bfloat a, bfloat b) { return float(a) op float(b); }                       \
  template <class U, class = typename bronze_if_<bfloat_arith<U>::value>::type>                          \
  constexpr bool operator op(bfloat a, U b) { return float(a) op b; }                                    \
  template <class U, class = typename bronze_if_<bfloat_arith<U>::value>::type>                          \
  constexpr bool operator op(U a, bfloat b) { return a op float(b); }
BRONZE_BF_CMP(<) BRONZE_BF_CMP(>) BRONZE_BF_CMP(<=) BRONZE_BF_CMP(>=) BRONZE_BF_CMP(==) BRONZE_BF_CMP(!=)
#undef BRONZE_BF_CMP
constexpr bfloat operator-(bfloat a) { return bfloat(-float(a)); }
constexpr bfloat operator+(bfloat a) { return a; }

// ---------------------------------------------------------------- vectors
template <class T, int N> struct vec;
template <class T> struct is_vec_ { static constexpr bool value = false; };
template <class T, int N> struct is_vec_<vec<T, N>> { static constexpr bool value = true; };
template <class T> struct vec_traits { typedef T elem; static constexpr int n = 1; };
template <class T, int N> struct vec_traits<vec<T, N>> { typedef T elem; static constexpr int n = N; };

// A swizzle (v.xy, v.zyx): a view over the vector's storage.
template <class T, int S, int... I> struct swz;
template <class U> struct bronze_not_swz { typedef int type; };
template <class T, int S, int... I> struct bronze_not_swz<swz<T, S, I...>> {};
template <class T, int S, int... I>
struct swz {
  T s_[S];
  typedef vec<T, (int)sizeof...(I)> result;
  // Members naming `result` are defined after vec: a vector's swizzles are
  // instantiated while the vector itself is still incomplete (NVRTC's front
  // end checks return types there; GCC waits).
  operator result() const;
  result operator()() const;
  swz& operator=(const result& v);
  swz& operator=(const swz& o);
  template <class U> swz& operator+=(const U& o) { return *this = result(*this) + o; }
  template <class U> swz& operator-=(const U& o) { return *this = result(*this) - o; }
  template <class U> swz& operator*=(const U& o) { return *this = result(*this) * o; }
  template <class U> swz& operator/=(const U& o) { return *this = result(*this) / o; }
};
template <class T, int S, int... I> struct vec_traits<swz<T, S, I...>> { typedef T elem; static constexpr int n = sizeof...(I); };

#define BRONZE_S2(S, a, b, A, B) swz<T, S, A, B> a##b;
#define BRONZE_S3(S, a, b, c, A, B, C) swz<T, S, A, B, C> a##b##c;
#define BRONZE_S4(S, a, b, c, d, A, B, C, D) swz<T, S, A, B, C, D> a##b##c##d;
// All two-component swizzles of xy(zw), the common three/four-component ones.
#define BRONZE_SWIZZLES2(S, x, y)                                                      \
  BRONZE_S2(S, x, x, 0, 0) BRONZE_S2(S, x, y, 0, 1) BRONZE_S2(S, y, x, 1, 0) BRONZE_S2(S, y, y, 1, 1)
#define BRONZE_SWIZZLES3(S, x, y, z)                                                   \
  BRONZE_SWIZZLES2(S, x, y) BRONZE_S2(S, x, z, 0, 2) BRONZE_S2(S, z, x, 2, 0) BRONZE_S2(S, y, z, 1, 2) \
  BRONZE_S2(S, z, y, 2, 1) BRONZE_S2(S, z, z, 2, 2) BRONZE_S3(S, x, y, z, 0, 1, 2) BRONZE_S3(S, z, y, x, 2, 1, 0) \
  BRONZE_S3(S, x, x, x, 0, 0, 0) BRONZE_S3(S, y, z, x, 1, 2, 0) BRONZE_S3(S, z, x, y, 2, 0, 1) \
  BRONZE_S3(S, x, z, y, 0, 2, 1) BRONZE_S3(S, y, x, z, 1, 0, 2)
#define BRONZE_SWIZZLES4(S, x, y, z, w)                                                \
  BRONZE_SWIZZLES3(S, x, y, z) BRONZE_S2(S, x, w, 0, 3) BRONZE_S2(S, y, w, 1, 3) BRONZE_S2(S, z, w, 2, 3) \
  BRONZE_S2(S, w, x, 3, 0) BRONZE_S2(S, w, z, 3, 2) BRONZE_S2(S, w, w, 3, 3) BRONZE_S3(S, y, z, w, 1, 2, 3) \
  BRONZE_S3(S, x, y, w, 0, 1, 3) BRONZE_S3(S, w, z, y, 3, 2, 1) BRONZE_S4(S, x, y, z, w, 0, 1, 2, 3) \
  BRONZE_S4(S, w, z, y, x, 3, 2, 1, 0) BRONZE_S4(S, y, z, w, x, 1, 2, 3, 0) BRONZE_S4(S, x, x, x, x, 0, 0, 0, 0) \
  BRONZE_S4(S, z, w, x, y, 2, 3, 0, 1) BRONZE_S4(S, x, y, x, y, 0, 1, 0, 1)

// raw_: the storage as one aligned aggregate, which vec's assignment copies
// whole (one 128-bit access for a float4).
// vec_base(bronze_zeroed{}) starts the storage as the union's active member,
// so vec's value constructors are constexpr (C++17 wants every member
// initialized there); the default constructor stays trivial.
struct bronze_zeroed {};
template <class T, int N> struct vec_base;
template <class T> struct alignas(2 * sizeof(T)) vec_base<T, 2> {  // Metal aligns a 2-vector to its size
  vec_base() = default;
  constexpr explicit vec_base(bronze_zeroed) : s{} {}
  union { T s[2]; struct { T x, y; }; struct { T r, g; }; BRONZE_SWIZZLES2(2, x, y) BRONZE_SWIZZLES2(2, r, g)
          struct alignas(2 * sizeof(T)) { T v[2]; } raw_; };
};
template <class T> struct alignas(4 * sizeof(T)) vec_base<T, 3> {  // padded to 4, as Metal
  vec_base() = default;
  constexpr explicit vec_base(bronze_zeroed) : s{} {}
  union { T s[4]; struct { T x, y, z; }; struct { T r, g, b; }; BRONZE_SWIZZLES3(4, x, y, z) BRONZE_SWIZZLES3(4, r, g, b)
          struct alignas(4 * sizeof(T)) { T v[4]; } raw_; };
};
template <class T> struct alignas(4 * sizeof(T)) vec_base<T, 4> {
  vec_base() = default;
  constexpr explicit vec_base(bronze_zeroed) : s{} {}
  union { T s[4]; struct { T x, y, z, w; }; struct { T r, g, b, a; }; BRONZE_SWIZZLES4(4, x, y, z, w) BRONZE_SWIZZLES4(4, r, g, b, a)
          struct alignas(4 * sizeof(T)) { T v[4]; } raw_; };
};

template <class T> constexpr void bronze_fill_(T* d, int& k, const T& v) { d[k++] = v; }
template <class T, class U> constexpr void bronze_fill_(T* d, int& k, const U& v) {
  if constexpr (is_vec_<U>::value) { for (int i = 0; i < vec_traits<U>::n; ++i) d[k++] = T(v.s[i]); }
  else if constexpr (vec_traits<U>::n > 1) { bronze_fill_(d, k, typename U::result(v)); }
  else { d[k++] = T(v); }
}

template <class T, int N> struct packed_vec;
// Defined for a scalar U that converts to T.
template <class T, class U>
using bronze_scalar_t = typename bronze_if_<vec_traits<U>::n == 1 && sizeof(T(U{})) != 0, int>::type;
template <class T, int N>
struct vec : vec_base<T, N> {
  typedef T value_type;
  vec() = default;  // uninitialized, as in Metal (and trivial: threadgroup arrays of vectors)
  constexpr vec(T v) : vec_base<T, N>(bronze_zeroed{}) {  // NOLINT: Metal widens scalars
    for (int i = 0; i < N; ++i) this->s[i] = v;
  }
  // ... of any type, as one conversion (`c ? half4_value : 0.0f` is a half4).
  template <class U, class = bronze_scalar_t<T, U>>
  constexpr vec(U v) : vec(T(v)) {}  // NOLINT
  // Whole-vector copies: one access for a float4 in memory, not four. The
  // swizzles' assignment deletes the union's implicit one, so assignment
  // copies raw_ (a memcpy would lose the alignment on NVRTC and copy bytes).
  // Operators take their operands by value for the same reason: a load
  // through a reference goes element by element.
  vec(const vec& o) = default;
  template <class A, class B, class... C>
  constexpr vec(const A& a, const B& b, const C&... c) : vec_base<T, N>(bronze_zeroed{}) {
    // Fewer components zero the rest: `uint4 k = {a, b, c}` is valid Metal
    // (braces and a constructor call are one overload here).
    static_assert(vec_traits<A>::n + vec_traits<B>::n + (0 + ... + vec_traits<C>::n) <= N,
                  "vector constructor: too many components");
    int k = 0;
    bronze_fill_(this->s, k, a);
    bronze_fill_(this->s, k, b);
    (bronze_fill_(this->s, k, c), ...);
    for (; k < N; ++k) this->s[k] = T(0);
  }
  template <class U>
  constexpr explicit vec(const vec<U, N>& o) : vec_base<T, N>(bronze_zeroed{}) {
    for (int i = 0; i < N; ++i) this->s[i] = T(o.s[i]);
  }
  template <class U>  // float4(packed_char4): a conversion, as from the unpacked vector
  constexpr explicit vec(const packed_vec<U, N>& o) : vec_base<T, N>(bronze_zeroed{}) {
    for (int i = 0; i < N; ++i) this->s[i] = T(o.s[i]);
  }
  // int2(uint4.zw): a conversion of a swizzle, as of the vector it reads.
  template <class U, int S, int... I, class = typename bronze_if_<sizeof...(I) == N>::type>
  constexpr explicit vec(const swz<U, S, I...>& o) : vec(o()) {}
  vec& operator=(const vec& o) {
    this->raw_ = o.raw_;
    return *this;
  }
  // Constant expressions read a vector by index (.x names another union member).
  constexpr T& operator[](int i) { return this->s[i]; }
  constexpr const T& operator[](int i) const { return this->s[i]; }

#define BRONZE_VEC_OP(op)                                                                          \
  friend vec operator op(vec a, vec b) { for (int i = 0; i < N; ++i) a.s[i] = a.s[i] op b.s[i]; return a; } \
  friend vec operator op(vec a, T b) { for (int i = 0; i < N; ++i) a.s[i] = a.s[i] op b; return a; }     \
  friend vec operator op(T a, vec b) { for (int i = 0; i < N; ++i) b.s[i] = a op b.s[i]; return b; }     \
  vec& operator op##=(vec b) { return *this = *this op b; }                                         \
  vec& operator op##=(T b) { return *this = *this op b; }                                           \
  /* A scalar of another type converts to T (half4 * float is half4). */                           \
  template <class U, class = bronze_scalar_t<T, U>> friend vec operator op(vec a, U b) { return a op T(b); } \
  template <class U, class = bronze_scalar_t<T, U>> friend vec operator op(U a, vec b) { return T(a) op b; } \
  template <class U, class = bronze_scalar_t<T, U>> vec& operator op##=(U b) { return *this = *this op T(b); }
  BRONZE_VEC_OP(+) BRONZE_VEC_OP(-) BRONZE_VEC_OP(*) BRONZE_VEC_OP(/)
#undef BRONZE_VEC_OP
#define BRONZE_VEC_IOP(op)                                                                         \
  template <class U = T, class = decltype(U(1) op U(1))>                                            \
  friend vec operator op(vec a, vec b) { for (int i = 0; i < N; ++i) a.s[i] = a.s[i] op b.s[i]; return a; } \
  template <class U = T, class = decltype(U(1) op U(1))>                                            \
  friend vec operator op(vec a, T b) { for (int i = 0; i < N; ++i) a.s[i] = a.s[i] op b; return a; }     \
  template <class U = T, class = decltype(U(1) op U(1))>                                            \
  friend vec operator op(T a, vec b) { for (int i = 0; i < N; ++i) b.s[i] = a op b.s[i]; return b; }     \
  template <class U = T, class = decltype(U(1) op U(1))> vec& operator op##=(vec b) { return *this = *this op b; } \
  template <class U = T, class = decltype(U(1) op U(1))> vec& operator op##=(T b) { return *this = *this op b; }
  BRONZE_VEC_IOP(%) BRONZE_VEC_IOP(&) BRONZE_VEC_IOP(|) BRONZE_VEC_IOP(^) BRONZE_VEC_IOP(<<) BRONZE_VEC_IOP(>>)
#undef BRONZE_VEC_IOP
  friend vec operator-(vec a) { for (int i = 0; i < N; ++i) a.s[i] = -a.s[i]; return a; }
  friend vec operator+(vec a) { return a; }
  template <class U = T, class = decltype(~U(1))>
  friend vec operator~(vec a) { for (int i = 0; i < N; ++i) a.s[i] = T(~a.s[i]); return a; }
  // Logical operators work per lane and give a bool vector.
  friend vec<bool, N> operator!(const vec& a) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = !a.s[i]; return r; }
  friend vec<bool, N> operator&&(const vec& a, const vec& b) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = a.s[i] && b.s[i]; return r; }
  friend vec<bool, N> operator||(const vec& a, const vec& b) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = a.s[i] || b.s[i]; return r; }
#define BRONZE_VEC_CMP(op)                                                                         \
  friend vec<bool, N> operator op(const vec& a, const vec& b) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = a.s[i] op b.s[i]; return r; } \
  friend vec<bool, N> operator op(const vec& a, T b) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = a.s[i] op b; return r; }
  BRONZE_VEC_CMP(<) BRONZE_VEC_CMP(>) BRONZE_VEC_CMP(<=) BRONZE_VEC_CMP(>=) BRONZE_VEC_CMP(==) BRONZE_VEC_CMP(!=)
#undef BRONZE_VEC_CMP
};

template <class T, int S, int... I> inline swz<T, S, I...>::operator typename swz<T, S, I...>::result() const {
  return result(s_[I]...);
}
template <class T, int S, int... I> inline typename swz<T, S, I...>::result swz<T, S, I...>::operator()() const {
  return *this;
}
template <class T, int S, int... I> inline swz<T, S, I...>& swz<T, S, I...>::operator=(const result& v) {
  int k = 0;
  ((s_[I] = v.s[k++]), ...);
  return *this;
}
template <class T, int S, int... I> inline swz<T, S, I...>& swz<T, S, I...>::operator=(const swz& o) {
  return *this = result(o);
}
template <class T, int S, int... I> inline typename swz<T, S, I...>::result operator-(const swz<T, S, I...>& a) {
  return -typename swz<T, S, I...>::result(a);
}
// Swizzle arithmetic and comparisons: as on the vector the swizzle reads.
#define BRONZE_SWZ_OP(op)                                                                          \
  template <class T, int S, int... I, class U, class = typename bronze_not_swz<U>::type>            \
  inline auto operator op(const swz<T, S, I...>& a, const U& b)                                     \
      -> decltype(typename swz<T, S, I...>::result(a) op b) {                                       \
    return typename swz<T, S, I...>::result(a) op b;                                                \
  }                                                                                                 \
  template <class T, int S, int... I, class U, class = typename bronze_not_swz<U>::type>            \
  inline auto operator op(const U& b, const swz<T, S, I...>& a)                                     \
      -> decltype(b op typename swz<T, S, I...>::result(a)) {                                       \
    return b op typename swz<T, S, I...>::result(a);                                                \
  }                                                                                                 \
  template <class T, int S, int... I, int S2, int... J>                                             \
  inline auto operator op(const swz<T, S, I...>& a, const swz<T, S2, J...>& b)                      \
      -> decltype(typename swz<T, S, I...>::result(a) op typename swz<T, S2, J...>::result(b)) {     \
    return typename swz<T, S, I...>::result(a) op typename swz<T, S2, J...>::result(b);             \
  }
BRONZE_SWZ_OP(+) BRONZE_SWZ_OP(-) BRONZE_SWZ_OP(*) BRONZE_SWZ_OP(/)
BRONZE_SWZ_OP(<) BRONZE_SWZ_OP(>) BRONZE_SWZ_OP(<=) BRONZE_SWZ_OP(>=) BRONZE_SWZ_OP(==) BRONZE_SWZ_OP(!=)
#undef BRONZE_SWZ_OP

// packed_T3 etc.: no padding (12 bytes for packed_float3).
template <class T, int N> struct packed_base;
template <class T> struct packed_base<T, 2> { union { T s[2]; struct { T x, y; }; }; };
template <class T> struct packed_base<T, 3> { union { T s[3]; struct { T x, y, z; }; }; };
template <class T> struct packed_base<T, 4> { union { T s[4]; struct { T x, y, z, w; }; }; };
template <class T, int N>
struct packed_vec : packed_base<T, N> {
  using packed_base<T, N>::s;
  packed_vec() { for (int i = 0; i < N; ++i) s[i] = T(0); }
  packed_vec(const vec<T, N>& v) { for (int i = 0; i < N; ++i) s[i] = v.s[i]; }  // NOLINT
  template <class... A> packed_vec(const A&... a) : packed_vec(vec<T, N>(a...)) {}
  operator vec<T, N>() const { vec<T, N> v; for (int i = 0; i < N; ++i) v.s[i] = s[i]; return v; }
  T& operator[](int i) { return s[i]; }
  const T& operator[](int i) const { return s[i]; }
};

#define BRONZE_VEC_TYPES(T)                                                                        \
  typedef vec<T, 2> T##2; typedef vec<T, 3> T##3; typedef vec<T, 4> T##4;                             \
  typedef packed_vec<T, 2> packed_##T##2; typedef packed_vec<T, 3> packed_##T##3; typedef packed_vec<T, 4> packed_##T##4;
BRONZE_VEC_TYPES(float) BRONZE_VEC_TYPES(half) BRONZE_VEC_TYPES(int) BRONZE_VEC_TYPES(uint)
BRONZE_VEC_TYPES(short) BRONZE_VEC_TYPES(ushort) BRONZE_VEC_TYPES(char) BRONZE_VEC_TYPES(uchar)
BRONZE_VEC_TYPES(bool) BRONZE_VEC_TYPES(long) BRONZE_VEC_TYPES(ulong) BRONZE_VEC_TYPES(bfloat)
#undef BRONZE_VEC_TYPES

// ------------------------------------------------------------ type traits
// metal_type_traits: C++'s traits, with half and bfloat floating point and
// Metal's vector traits.
namespace metal {
template <class T, T v> struct integral_constant {
  static constexpr T value = v;
  typedef T value_type;
  typedef integral_constant type;
  constexpr operator T() const { return v; }
  constexpr T operator()() const { return v; }
};
template <bool B> using bool_constant = integral_constant<bool, B>;
typedef bool_constant<true> true_type;
typedef bool_constant<false> false_type;
template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> constexpr bool is_same_v = is_same<A, B>::value;
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;
template <class T> struct type_identity { typedef T type; };
template <class... B> struct disjunction : false_type {};
template <class B, class... R> struct disjunction<B, R...> : conditional_t<bool(B::value), B, disjunction<R...>> {};
template <class... B> struct conjunction : true_type {};
template <class B, class... R> struct conjunction<B, R...> : conditional_t<bool(B::value), conjunction<R...>, B> {};
template <class B> struct negation : bool_constant<!bool(B::value)> {};
template <class... B> constexpr bool disjunction_v = disjunction<B...>::value;
template <class... B> constexpr bool conjunction_v = conjunction<B...>::value;
template <class B> constexpr bool negation_v = negation<B>::value;
// The spellings Metal's own headers use (#pragma METAL internals; MLX too).
template <class... B> using _disjunction = disjunction<B...>;
template <class... B> using _conjunction = conjunction<B...>;
#define BRONZE_STRIP(name, pattern)                                                                 \
  template <class T> struct name { typedef T type; };                                               \
  template <class T> struct name<pattern> { typedef T type; };                                      \
  template <class T> using name##_t = typename name<T>::type;
BRONZE_STRIP(remove_const, const T) BRONZE_STRIP(remove_volatile, volatile T) BRONZE_STRIP(remove_pointer, T*)
#undef BRONZE_STRIP
template <class T> struct remove_reference { typedef T type; };
template <class T> struct remove_reference<T&> { typedef T type; };
template <class T> struct remove_reference<T&&> { typedef T type; };
template <class T> using remove_reference_t = typename remove_reference<T>::type;
template <class T> struct remove_cv { typedef remove_volatile_t<remove_const_t<T>> type; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> struct remove_cvref { typedef remove_cv_t<remove_reference_t<T>> type; };
template <class T> using remove_cvref_t = typename remove_cvref<T>::type;
// One address space here: removing it leaves the type.
template <class T> struct remove_address_space { typedef T type; };
template <class T> using remove_address_space_t = T;
template <class T> using uniform = T;  // Metal marks values uniform across threads; a value here
template <class T> constexpr T make_uniform(T v) { return v; }  // constexpr: MLX sizes arrays with it
template <class T> struct remove_addrspace { typedef T type; };
template <class T> using remove_addrspace_t = T;
template <class T> struct decay { typedef remove_cvref_t<T> type; };
template <class T> using decay_t = typename decay<T>::type;
template <class T> struct add_const { typedef const T type; };
template <class T> using add_const_t = const T;
template <class T> T&& declval();
#define BRONZE_SET(name, ...)                                                                       \
  template <class T> struct name : false_type {};                                                  \
  template <class T> struct name<const T> : name<T> {};                                            \
  template <class T> struct name<volatile T> : name<T> {};                                         \
  template <class T> struct name<const volatile T> : name<T> {};                                   \
  template <class T> constexpr bool name##_v = name<T>::value;
#define BRONZE_IN_SET(name, T) template <> struct name<T> : true_type {};
BRONZE_SET(is_floating_point)
BRONZE_IN_SET(is_floating_point, float) BRONZE_IN_SET(is_floating_point, half)
BRONZE_IN_SET(is_floating_point, bfloat) BRONZE_IN_SET(is_floating_point, double)
BRONZE_SET(is_integral)
BRONZE_IN_SET(is_integral, bool) BRONZE_IN_SET(is_integral, char) BRONZE_IN_SET(is_integral, signed char)
BRONZE_IN_SET(is_integral, unsigned char) BRONZE_IN_SET(is_integral, short) BRONZE_IN_SET(is_integral, unsigned short)
BRONZE_IN_SET(is_integral, int) BRONZE_IN_SET(is_integral, unsigned int) BRONZE_IN_SET(is_integral, long)
BRONZE_IN_SET(is_integral, unsigned long) BRONZE_IN_SET(is_integral, long long)
BRONZE_IN_SET(is_integral, unsigned long long)
BRONZE_SET(is_void) BRONZE_IN_SET(is_void, void)
#undef BRONZE_SET
#undef BRONZE_IN_SET
template <class T> struct is_arithmetic : bool_constant<is_integral<T>::value || is_floating_point<T>::value> {};
template <class T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> struct is_signed : bool_constant<is_floating_point<T>::value || (is_integral<T>::value && T(-1) < T(0))> {};
template <class T> constexpr bool is_signed_v = is_signed<T>::value;
template <class T> struct is_unsigned : bool_constant<is_integral<T>::value && !is_signed<T>::value> {};
template <class T> constexpr bool is_unsigned_v = is_unsigned<T>::value;
template <class T> struct is_pointer : false_type {};
template <class T> struct is_pointer<T*> : true_type {};
template <class T> constexpr bool is_pointer_v = is_pointer<T>::value;
template <class T> struct is_scalar : bool_constant<is_arithmetic<T>::value || is_pointer<T>::value> {};
template <class T> constexpr bool is_scalar_v = is_scalar<T>::value;
// float and double convert to half implicitly, as in Metal: GCC 13 and
// later take float -> _Float16 (a lower rank, C++23's rule) as no implicit
// conversion, which would hide conversions that libraries enable by this
// trait (MLX's complex64_t to half).
template <class From, class To> struct is_convertible {
  template <class T> static void take(T);
  template <class F, class T, class = decltype(take<T>(declval<F>()))> static true_type test(int);
  template <class, class> static false_type test(...);
  static constexpr bool value = decltype(test<From, To>(0))::value ||
                                (is_same<remove_cv_t<To>, half>::value &&
                                 (is_same<remove_cvref_t<From>, float>::value || is_same<remove_cvref_t<From>, double>::value));
};
template <class From, class To> constexpr bool is_convertible_v = is_convertible<From, To>::value;
#define BRONZE_SIGN_PAIR(S, U)                                                                      \
  template <> struct make_signed<U> { typedef S type; };                                            \
  template <> struct make_signed<S> { typedef S type; };                                            \
  template <> struct make_unsigned<S> { typedef U type; };                                          \
  template <> struct make_unsigned<U> { typedef U type; };
template <class T> struct make_signed;
template <class T> struct make_unsigned;
template <> struct make_signed<char> { typedef signed char type; };
template <> struct make_unsigned<char> { typedef unsigned char type; };
BRONZE_SIGN_PAIR(signed char, unsigned char) BRONZE_SIGN_PAIR(short, unsigned short)
BRONZE_SIGN_PAIR(int, unsigned int) BRONZE_SIGN_PAIR(long, unsigned long)
BRONZE_SIGN_PAIR(long long, unsigned long long)
#undef BRONZE_SIGN_PAIR
template <class T> using make_signed_t = typename make_signed<T>::type;
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;
using ::bronze_msl::vec;  // metal::vec<T, N>
// metal::array: an aggregate (array<T, 2>{a, b}), indexable in any address space.
template <class T, unsigned long N> struct array {
  T elems_[N > 0 ? N : 1];
  constexpr T& operator[](unsigned long i) { return elems_[i]; }
  constexpr const T& operator[](unsigned long i) const { return elems_[i]; }
  constexpr unsigned long size() const { return N; }
  constexpr bool empty() const { return N == 0; }
  constexpr T* data() { return elems_; }
  constexpr const T* data() const { return elems_; }
  constexpr T* begin() { return elems_; }
  constexpr const T* begin() const { return elems_; }
  constexpr T* end() { return elems_ + N; }
  constexpr const T* end() const { return elems_ + N; }
};
// Vector traits: is_vector_v, vec_elements<T>::value.
template <class T> struct is_vector : false_type {};
template <class T, int N> struct is_vector<vec<T, N>> : true_type {};
template <class T> constexpr bool is_vector_v = is_vector<remove_cv_t<T>>::value;
template <class T> struct vec_elements { static constexpr int value = vec_traits<remove_cv_t<T>>::n; };
template <class T> using vec_element_t = typename vec_traits<remove_cv_t<T>>::elem;
}  // namespace metal

// ------------------------------------------------------------------- math
namespace metal {
template <class T> using elem_t = typename vec_traits<T>::elem;

// Math modes: precise:: holds Metal's precise functions, fast:: its fast
// ones (CUDA's intrinsics; on the host, libm's, which has nothing faster),
// and metal:: those of the unit's mode: fast unless the unit is compiled
// with math_mode="safe" (the backend defines BRONZE_FAST_MATH). Each
// namespace holds the functions themselves (using-declarations, not a
// using-directive): a library that adds its own overloads to one of them
// (MLX's bfloat math) still finds these by qualified lookup.
//
// Metal's set: no erf, log1p, expm1 or cbrt (libraries define their own, and
// a second definition here would make their calls ambiguous). No bfloat
// overloads, as in Metal: a bfloat argument converts to float.
#define BRONZE_MATH1(name, f32, f64)                                                               \
  inline float name(float x) { return f32(x); }                                                     \
  inline half name(half x) { return (half)f32((float)x); }                                          \
  inline double name(double x) { return f64(x); }                                                  \
  template <class T, int N> inline vec<T, N> name(vec<T, N> v) { for (int i = 0; i < N; ++i) v.s[i] = T(name(v.s[i])); return v; }
// Metal converts a scalar argument to the vector type of the other
// (pow(float4, 2)): the scalar's type is not deduced (bronze_same_t).
template <class T> using bronze_same_t = typename type_identity<T>::type;
#define BRONZE_MATH2(name, f32)                                                                          \
  inline float name(float a, float b) { return f32(a, b); }                                              \
  inline half name(half a, half b) { return (half)f32((float)a, (float)b); }                             \
  template <class T, int N> inline vec<T, N> name(vec<T, N> a, vec<T, N> b) { for (int i = 0; i < N; ++i) a.s[i] = T(name(a.s[i], b.s[i])); return a; } \
  template <class T, int N> inline vec<T, N> name(vec<T, N> a, bronze_same_t<T> b) { return name(a, vec<T, N>(b)); }     \
  template <class T, int N> inline vec<T, N> name(bronze_same_t<T> a, vec<T, N> b) { return name(vec<T, N>(a), b); }
#define BRONZE_PRECISE1(name) BRONZE_MATH1(name, BRONZE_M(name##f), BRONZE_M(name))
#if !BRONZE_CUDA
}  // namespace metal
namespace bronze_rt {
inline float div_rn(float a, float b) {
  __asm__("" : "+m"(b));
  return a / b;
}
}  // namespace bronze_rt
namespace metal {
#endif
// What differs between the modes: these, and sqrt, rsqrt, divide, pow, powr.
#define BRONZE_FAST_NAMES(X) X(exp) X(exp10) X(log) X(log2) X(log10) X(sin) X(cos) X(tan)
#define BRONZE_PRECISE_ONLY_NAMES(X)                                                                    \
  X(exp2) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(floor) X(ceil) X(round) X(rint) X(trunc)  \
  X(fabs) X(asinh) X(acosh) X(atanh)
#define BRONZE_MODE_NAMES(X) BRONZE_FAST_NAMES(X) BRONZE_PRECISE_ONLY_NAMES(X) X(sqrt) X(rsqrt) X(divide) X(pow) X(powr)
namespace precise {
BRONZE_FAST_NAMES(BRONZE_PRECISE1)
BRONZE_PRECISE_ONLY_NAMES(BRONZE_PRECISE1)
BRONZE_MATH1(sqrt, BRONZE_SQRT_RN, BRONZE_M(sqrt))
inline float bronze_rsqrt(float x) { return BRONZE_DIV_RN(1.0f, BRONZE_SQRT_RN(x)); }
inline float bronze_divide(float a, float b) { return BRONZE_DIV_RN(a, b); }
BRONZE_MATH1(rsqrt, bronze_rsqrt, 1.0 / BRONZE_M(sqrt))
BRONZE_MATH2(divide, bronze_divide)
BRONZE_MATH2(pow, BRONZE_M(powf))
BRONZE_MATH2(powr, BRONZE_M(powf))
inline double pow(double a, double b) { return BRONZE_M(pow)(a, b); }
}  // namespace precise
namespace fast {
#define BRONZE_FAST1(name) BRONZE_MATH1(name, BRONZE_FAST(name##f), BRONZE_M(name))
BRONZE_FAST_NAMES(BRONZE_FAST1)
#undef BRONZE_FAST1
#define BRONZE_USING_PRECISE(name) using precise::name;
BRONZE_PRECISE_ONLY_NAMES(BRONZE_USING_PRECISE)
#undef BRONZE_USING_PRECISE
BRONZE_MATH1(sqrt, BRONZE_M(sqrtf), BRONZE_M(sqrt))  // approximate under fast and relaxed compile options
BRONZE_MATH1(rsqrt, BRONZE_FAST_RSQRT, 1.0 / BRONZE_M(sqrt))
BRONZE_MATH2(divide, BRONZE_FAST_DIVIDE)
BRONZE_MATH2(pow, BRONZE_FAST(powf))
BRONZE_MATH2(powr, BRONZE_FAST(powf))
inline double pow(double a, double b) { return BRONZE_M(pow)(a, b); }
}  // namespace fast
#if defined(BRONZE_FAST_MATH)
#define BRONZE_USING_MODE(name) using fast::name;
#else
#define BRONZE_USING_MODE(name) using precise::name;
#endif
BRONZE_MODE_NAMES(BRONZE_USING_MODE)
#undef BRONZE_USING_MODE
#undef BRONZE_PRECISE1
#undef BRONZE_MATH2
#undef BRONZE_MATH1
#if BRONZE_CUDA
// log1p for half, on CUDA only. A library's own log1p(float) beside a
// log1p(complex64_t) with a converting constructor (MLX's) is a tie for a
// class-type half, while Metal's builtin half reaches float by a standard
// conversion and picks log1p(float); this exact match picks the same math.
inline half log1p(half x) { return half(::log1pf(float(x))); }
#endif
// sin(pi x), cos(pi x), tan(pi x): exact at integers and half-integers.
template <class T> inline T sinpi(T x) { return T(sin(float(x - 2 * rint(x / 2)) * 3.14159265358979f)); }
template <class T> inline T cospi(T x) { return sinpi(T(x + T(0.5f))); }
template <class T> inline T tanpi(T x) { return T(float(sinpi(x)) / float(cospi(x))); }
template <class T> inline T fract(T x) { return x - floor(x); }
template <class T> inline T sign(T x) { return T((elem_t<T>(0) < x) - (x < elem_t<T>(0))); }
inline float sign(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : x; }

template <class T> constexpr T abs(T x) { return x < T(0) ? T(-x) : x; }
template <class T, int N> inline vec<T, N> abs(vec<T, N> v) { for (int i = 0; i < N; ++i) v.s[i] = abs(v.s[i]); return v; }
// Not for bfloat: Metal has no max/min of bfloat (MLX's bf16_math.h and
// PyTorch's c10/metal/utils.h declare their own).
template <class T> constexpr typename bronze_if_<!is_same<T, bfloat>::value, T>::type max(T a, T b) { return a < b ? b : a; }
template <class T> constexpr typename bronze_if_<!is_same<T, bfloat>::value, T>::type min(T a, T b) { return b < a ? b : a; }
inline float max(float a, float b) { return BRONZE_M(fmaxf)(a, b); }
inline float min(float a, float b) { return BRONZE_M(fminf)(a, b); }
// Not templates, as Metal declares them: they win over a library's own
// template (PyTorch's c10::metal::max<T> under `using namespace`). A NaN
// loses to a number, as in fmax.
constexpr half max(half a, half b) { return a != a ? b : b != b ? a : a < b ? b : a; }
constexpr half min(half a, half b) { return a != a ? b : b != b ? a : b < a ? b : a; }
template <class T, int N> inline vec<T, N> max(vec<T, N> a, const vec<T, N>& b) { for (int i = 0; i < N; ++i) a.s[i] = max(a.s[i], b.s[i]); return a; }
template <class T, int N> inline vec<T, N> min(vec<T, N> a, const vec<T, N>& b) { for (int i = 0; i < N; ++i) a.s[i] = min(a.s[i], b.s[i]); return a; }
template <class T, int N> inline vec<T, N> max(vec<T, N> a, bronze_same_t<T> b) { return max(a, vec<T, N>(b)); }
template <class T, int N> inline vec<T, N> min(vec<T, N> a, bronze_same_t<T> b) { return min(a, vec<T, N>(b)); }
template <class T, int N> inline vec<T, N> max(bronze_same_t<T> a, vec<T, N> b) { return max(vec<T, N>(a), b); }
template <class T, int N> inline vec<T, N> min(bronze_same_t<T> a, vec<T, N> b) { return min(vec<T, N>(a), b); }
// fmax and fmin: max and min of floating types, with their mixed forms.
inline float fmax(float a, float b) { return max(a, b); }
inline float fmin(float a, float b) { return min(a, b); }
inline half fmax(half a, half b) { return max(a, b); }
inline half fmin(half a, half b) { return min(a, b); }
template <class T, int N> inline vec<T, N> fmax(vec<T, N> a, vec<T, N> b) { return max(a, b); }
template <class T, int N> inline vec<T, N> fmin(vec<T, N> a, vec<T, N> b) { return min(a, b); }
template <class T, int N> inline vec<T, N> fmax(vec<T, N> a, bronze_same_t<T> b) { return max(a, vec<T, N>(b)); }
template <class T, int N> inline vec<T, N> fmin(vec<T, N> a, bronze_same_t<T> b) { return min(a, vec<T, N>(b)); }
template <class T, int N> inline vec<T, N> fmax(bronze_same_t<T> a, vec<T, N> b) { return max(vec<T, N>(a), b); }
template <class T, int N> inline vec<T, N> fmin(bronze_same_t<T> a, vec<T, N> b) { return min(vec<T, N>(a), b); }
template <class T> inline T max3(T a, T b, T c) { return max(max(a, b), c); }
template <class T> inline T min3(T a, T b, T c) { return min(min(a, b), c); }
template <class T> inline T median3(T a, T b, T c) { return max(min(a, b), min(max(a, b), c)); }
template <class T> inline T fmax3(T a, T b, T c) { return max3(a, b, c); }
template <class T> inline T fmin3(T a, T b, T c) { return min3(a, b, c); }
template <class T> inline T fmedian3(T a, T b, T c) { return median3(a, b, c); }
template <class T> inline T fdim(T a, T b) { return a > b ? T(a - b) : T(0); }
inline float nextafter(float a, float b) { return BRONZE_M(nextafterf)(a, b); }
inline float frexp(float x, int& e) { return BRONZE_M(frexpf)(x, &e); }
inline half frexp(half x, int& e) { return half(frexp(float(x), e)); }
inline float ldexp(float x, int e) { return BRONZE_M(ldexpf)(x, e); }
inline half ldexp(half x, int e) { return half(ldexp(float(x), e)); }
inline float modf(float x, float& i) { return BRONZE_M(modff)(x, &i); }
inline half modf(half x, half& i) {
  float f;
  const float r = modf(float(x), f);
  i = half(f);
  return half(r);
}
inline int ilogb(float x) { return BRONZE_M(ilogbf)(x); }
inline float logb(float x) { return BRONZE_M(logbf)(x); }
inline float pown(float x, int n) { return BRONZE_M(powf)(x, float(n)); }
template <class T, int N> inline vec<T, N> frexp(vec<T, N> x, vec<int, N>& e) { for (int i = 0; i < N; ++i) x.s[i] = frexp(x.s[i], e.s[i]); return x; }
template <class T, int N> inline vec<T, N> ldexp(vec<T, N> x, vec<int, N> e) { for (int i = 0; i < N; ++i) x.s[i] = ldexp(x.s[i], e.s[i]); return x; }
template <class T, int N> inline vec<T, N> ldexp(vec<T, N> x, int e) { for (int i = 0; i < N; ++i) x.s[i] = ldexp(x.s[i], e); return x; }
template <class T, int N> inline vec<T, N> modf(vec<T, N> x, vec<T, N>& ip) { for (int i = 0; i < N; ++i) x.s[i] = modf(x.s[i], ip.s[i]); return x; }
template <class T, int N> inline vec<int, N> ilogb(vec<T, N> x) { vec<int, N> r; for (int i = 0; i < N; ++i) r.s[i] = ilogb(float(x.s[i])); return r; }
template <class T, int N> inline vec<T, N> pown(vec<T, N> x, vec<int, N> n) { for (int i = 0; i < N; ++i) x.s[i] = T(pown(float(x.s[i]), n.s[i])); return x; }
template <class T, class L, class H> inline T clamp(T x, L lo, H hi) { return min(max(x, T(lo)), T(hi)); }
template <class T> inline T saturate(T x) { return clamp(x, T(0), T(1)); }
template <class T> inline T mix(T a, T b, elem_t<T> t) { return a + (b - a) * t; }
template <class T, int N> inline vec<T, N> mix(vec<T, N> a, vec<T, N> b, vec<T, N> t) { return a + (b - a) * t; }
template <class T> inline T step(T edge, T x) { return x < edge ? T(0) : T(1); }
template <class T> inline T smoothstep(T e0, T e1, T x) {
  const T t = clamp(T((x - e0) / (e1 - e0)), T(0), T(1));
  return T(t * t * (T(3) - T(2) * t));
}
template <class T, int N> inline vec<T, N> smoothstep(bronze_same_t<T> e0, bronze_same_t<T> e1, vec<T, N> x) {
  return smoothstep(vec<T, N>(e0), vec<T, N>(e1), x);
}
template <class T, int N> inline vec<T, N> step(bronze_same_t<T> edge, vec<T, N> x) { return step(vec<T, N>(edge), x); }
inline float fma(float a, float b, float c) { return BRONZE_M(fmaf)(a, b, c); }
inline double fma(double a, double b, double c) { return BRONZE_M(fma)(a, b, c); }
inline half fma(half a, half b, half c) { return (half)BRONZE_M(fmaf)((float)a, (float)b, (float)c); }
template <class T, int N> inline vec<T, N> fma(vec<T, N> a, vec<T, N> b, vec<T, N> c) { for (int i = 0; i < N; ++i) a.s[i] = fma(a.s[i], b.s[i], c.s[i]); return a; }
// fma(float4, float, float4) and the other mixed forms: the scalar is widened.
template <class T, int N> inline vec<T, N> fma(vec<T, N> a, bronze_same_t<T> b, vec<T, N> c) { return fma(a, vec<T, N>(b), c); }
template <class T, int N> inline vec<T, N> fma(bronze_same_t<T> a, vec<T, N> b, vec<T, N> c) { return fma(vec<T, N>(a), b, c); }
template <class T, int N> inline vec<T, N> fma(vec<T, N> a, vec<T, N> b, bronze_same_t<T> c) { return fma(a, b, vec<T, N>(c)); }
template <class T, int N> inline vec<T, N> fma(vec<T, N> a, bronze_same_t<T> b, bronze_same_t<T> c) { return fma(a, vec<T, N>(b), vec<T, N>(c)); }
inline float atan2(float y, float x) { return BRONZE_M(atan2f)(y, x); }
inline float fmod(float a, float b) { return BRONZE_M(fmodf)(a, b); }
inline float copysign(float a, float b) { return BRONZE_M(copysignf)(a, b); }
template <class T> inline T sincos(T x, T& c) { c = cos(x); return sin(x); }
template <class T> inline T select(T a, T b, bool c) { return c ? b : a; }
template <class T, int N> inline vec<T, N> select(vec<T, N> a, vec<T, N> b, vec<bool, N> c) { for (int i = 0; i < N; ++i) a.s[i] = c.s[i] ? b.s[i] : a.s[i]; return a; }
// select(float4, -INFINITY, bool4) and its mirror: the scalar is widened.
template <class T, int N> inline vec<T, N> select(vec<T, N> a, bronze_same_t<T> b, vec<bool, N> c) { return select(a, vec<T, N>(b), c); }
template <class T, int N> inline vec<T, N> select(bronze_same_t<T> a, vec<T, N> b, vec<bool, N> c) { return select(vec<T, N>(a), b, c); }
template <class T> inline bool isnan(T x) { return x != x; }
template <class T> inline bool isinf(T x) { return x == T(BRONZE_INF) || x == T(-BRONZE_INF); }
template <class T> inline bool isfinite(T x) { return !isnan(x) && !isinf(x); }
template <class T> inline bool signbit(T x) { return BRONZE_M(signbit)((double)x); }
template <class T, int N> inline vec<bool, N> isnan(vec<T, N> v) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = isnan(v.s[i]); return r; }
template <class T, int N> inline vec<bool, N> isinf(vec<T, N> v) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = isinf(v.s[i]); return r; }
// The relational functions of two arguments, per lane for vectors.
#define BRONZE_RELATIONAL2(name, expr)                                                                  \
  template <class T> inline bool name(T a, T b) { return expr; }                                        \
  template <class T, int N> inline vec<bool, N> name(vec<T, N> a, vec<T, N> b) {                        \
    vec<bool, N> r;                                                                                     \
    for (int i = 0; i < N; ++i) r.s[i] = name(a.s[i], b.s[i]);                                          \
    return r;                                                                                           \
  }
BRONZE_RELATIONAL2(isunordered, isnan(a) || isnan(b)) BRONZE_RELATIONAL2(isordered, !isnan(a) && !isnan(b))
BRONZE_RELATIONAL2(isequal, a == b) BRONZE_RELATIONAL2(isnotequal, a != b) BRONZE_RELATIONAL2(isless, a < b)
BRONZE_RELATIONAL2(islessequal, a <= b) BRONZE_RELATIONAL2(isgreater, a > b)
BRONZE_RELATIONAL2(isgreaterequal, a >= b) BRONZE_RELATIONAL2(islessgreater, a < b || a > b)
#undef BRONZE_RELATIONAL2
template <int N> inline bool all(vec<bool, N> v) { for (int i = 0; i < N; ++i) if (!v.s[i]) return false; return true; }
template <int N> inline bool any(vec<bool, N> v) { for (int i = 0; i < N; ++i) if (v.s[i]) return true; return false; }
inline bool all(bool b) { return b; }
inline bool any(bool b) { return b; }
// dot of scalars: a library's own (ggml's `float dot(float, float)`, a
// `template <class T> float dot(T, T)`) wins over it, the trailing pack
// making this template the less specialized.
template <class T, class... None> inline typename bronze_if_<vec_traits<T>::n == 1, T>::type dot(T a, T b, None...) {
  static_assert(sizeof...(None) == 0, "dot takes two operands");
  return a * b;
}
template <class T, int N> inline T dot(const vec<T, N>& a, const vec<T, N>& b) { T r = T(0); for (int i = 0; i < N; ++i) r += a.s[i] * b.s[i]; return r; }
template <class T, int N> inline T length(const vec<T, N>& a) { return T(sqrt(dot(a, a))); }
template <class T, int N> inline T length_squared(const vec<T, N>& a) { return dot(a, a); }
template <class T, int N> inline T distance(const vec<T, N>& a, const vec<T, N>& b) { return length(a - b); }
template <class T, int N> inline vec<T, N> normalize(const vec<T, N>& a) { return a * T(rsqrt(dot(a, a))); }
template <class T> inline vec<T, 3> cross(const vec<T, 3>& a, const vec<T, 3>& b) {
  return vec<T, 3>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
template <class T> inline T precise_divide(T a, T b) { return a / b; }
// A constant expression for scalars (libraries convert float to bfloat bits
// in constexpr functions); vectors, whose assignment is their own, by copy.
template <class To, class From> struct bronze_bit_castable {
  static constexpr bool value = __is_trivially_copyable(To) && __is_trivially_copyable(From);
};
template <class To, class From>
constexpr typename bronze_if_<bronze_bit_castable<To, From>::value, To>::type as_type(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs types of one size");
  return __builtin_bit_cast(To, f);
}
template <class To, class From>
inline typename bronze_if_<!bronze_bit_castable<To, From>::value, To>::type as_type(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs types of one size");
  To t;
  BRONZE_MEMCPY(&t, &f, sizeof(To));
  return t;
}
// A swizzle (`as_type<half4>(u.xy)`) by the vector it reads, not the view's
// storage, which is the whole vector.
template <class To, class T, int S, int... I> inline To as_type(const swz<T, S, I...>& f) {
  return as_type<To>(typename swz<T, S, I...>::result(f));
}
// Integer functions, at T's own width (clz(ushort(1)) is 15), per lane for
// vectors. Saturating ones clamp to T's range.
template <class T> using bronze_int_t = typename bronze_if_<is_integral<T>::value, T>::type;
template <class T> inline bronze_int_t<T> popcount(T x) {
  return T(BRONZE_POPCOUNT64((unsigned long long)(make_unsigned_t<T>)x));
}
template <class T> inline bronze_int_t<T> clz(T x) {
  return x ? T(BRONZE_CLZ64((unsigned long long)(make_unsigned_t<T>)x) - (64 - 8 * (int)sizeof(T))) : T(8 * sizeof(T));
}
template <class T> inline bronze_int_t<T> ctz(T x) {
  return x ? T(BRONZE_CTZ64((unsigned long long)(make_unsigned_t<T>)x)) : T(8 * sizeof(T));
}
template <class T> inline bronze_int_t<T> reverse_bits(T x) {
  make_unsigned_t<T> u = make_unsigned_t<T>(x), r = 0;
  for (unsigned i = 0; i < 8 * sizeof(T); ++i, u >>= 1) r = make_unsigned_t<T>(r << 1 | (u & 1u));
  return T(r);
}
template <class T> inline bronze_int_t<T> rotate(T v, T i) {
  constexpr unsigned B = 8 * sizeof(T);
  const make_unsigned_t<T> u = make_unsigned_t<T>(v);
  const unsigned k = unsigned(make_unsigned_t<T>(i)) % B;
  return T(k ? make_unsigned_t<T>(u << k | u >> (B - k)) : u);
}
// Bits [offset, offset + bits) of x, sign-extended for a signed T.
template <class T> inline bronze_int_t<T> extract_bits(T x, uint offset, uint bits) {
  if (bits == 0) return T(0);
  constexpr unsigned B = 8 * sizeof(T);
  const make_unsigned_t<T> u = make_unsigned_t<T>(make_unsigned_t<T>(x) << (B - offset - bits));
  return is_signed<T>::value ? T(T(u) >> (B - bits)) : T(u >> (B - bits));
}
template <class T> inline bronze_int_t<T> insert_bits(T base, T insert, uint offset, uint bits) {
  if (bits == 0) return base;
  constexpr unsigned B = 8 * sizeof(T);
  const make_unsigned_t<T> mask = make_unsigned_t<T>(make_unsigned_t<T>(~make_unsigned_t<T>(0)) >> (B - bits) << offset);
  return T((make_unsigned_t<T>(base) & make_unsigned_t<T>(~mask)) | (make_unsigned_t<T>(make_unsigned_t<T>(insert) << offset) & mask));
}
template <class T> inline bronze_int_t<T> hadd(T x, T y) { return T((x >> 1) + (y >> 1) + (x & y & 1)); }
template <class T> inline bronze_int_t<T> rhadd(T x, T y) { return T((x >> 1) + (y >> 1) + ((x | y) & 1)); }
template <class T> inline bronze_int_t<T> absdiff(T x, T y) {
  return T(x > y ? make_unsigned_t<T>(make_unsigned_t<T>(x) - make_unsigned_t<T>(y))
                 : make_unsigned_t<T>(make_unsigned_t<T>(y) - make_unsigned_t<T>(x)));
}
template <class T> inline bronze_int_t<T> addsat(T x, T y) {
  constexpr T lo = is_signed<T>::value ? T(T(1) << (8 * sizeof(T) - 1)) : T(0), hi = T(~lo);
  if (!is_signed<T>::value) return T(x + y) < x ? hi : T(x + y);
  return y > 0 && x > T(hi - y) ? hi : y < 0 && x < T(lo - y) ? lo : T(x + y);
}
template <class T> inline bronze_int_t<T> subsat(T x, T y) {
  constexpr T lo = is_signed<T>::value ? T(T(1) << (8 * sizeof(T) - 1)) : T(0), hi = T(~lo);
  if (!is_signed<T>::value) return x < y ? T(0) : T(x - y);
  return y < 0 && x > T(hi + y) ? hi : y > 0 && x < T(lo + y) ? lo : T(x - y);
}
// The full product: in a type twice T's width.
template <class T> using bronze_wide_t =
    conditional_t<(sizeof(T) > 4), conditional_t<is_signed<T>::value, __int128, unsigned __int128>,
                  conditional_t<is_signed<T>::value, long long, unsigned long long>>;
template <class T> inline bronze_int_t<T> mulhi(T a, T b) { return T((bronze_wide_t<T>(a) * b) >> (8 * sizeof(T))); }
template <class T> inline bronze_int_t<T> madhi(T a, T b, T c) { return T(mulhi(a, b) + c); }
template <class T> inline bronze_int_t<T> mulsat(T a, T b) {
  constexpr T lo = is_signed<T>::value ? T(T(1) << (8 * sizeof(T) - 1)) : T(0), hi = T(~lo);
  const bronze_wide_t<T> p = bronze_wide_t<T>(a) * b;
  return p > bronze_wide_t<T>(hi) ? hi : p < bronze_wide_t<T>(lo) ? lo : T(p);
}
template <class T> inline bronze_int_t<T> madsat(T a, T b, T c) {
  constexpr T lo = is_signed<T>::value ? T(T(1) << (8 * sizeof(T) - 1)) : T(0), hi = T(~lo);
  const bronze_wide_t<T> p = bronze_wide_t<T>(a) * b;  // a*b + c can overflow only through p
  return p > bronze_wide_t<T>(hi) ? addsat(hi, c) : p < bronze_wide_t<T>(lo) ? addsat(lo, c) : addsat(T(p), c);
}
#define BRONZE_LANES1(name)                                                                         \
  template <class T, int N> inline vec<T, N> name(vec<T, N> a) {                                    \
    for (int i = 0; i < N; ++i) a.s[i] = name(a.s[i]);                                              \
    return a;                                                                                       \
  }
#define BRONZE_LANES2(name)                                                                         \
  template <class T, int N> inline vec<T, N> name(vec<T, N> a, vec<T, N> b) {                       \
    for (int i = 0; i < N; ++i) a.s[i] = name(a.s[i], b.s[i]);                                      \
    return a;                                                                                       \
  }
#define BRONZE_LANES3(name)                                                                         \
  template <class T, int N> inline vec<T, N> name(vec<T, N> a, vec<T, N> b, vec<T, N> c) {          \
    for (int i = 0; i < N; ++i) a.s[i] = name(a.s[i], b.s[i], c.s[i]);                              \
    return a;                                                                                       \
  }
BRONZE_LANES1(popcount) BRONZE_LANES1(clz) BRONZE_LANES1(ctz) BRONZE_LANES1(reverse_bits)
BRONZE_LANES2(rotate) BRONZE_LANES2(hadd) BRONZE_LANES2(rhadd) BRONZE_LANES2(absdiff) BRONZE_LANES2(addsat)
BRONZE_LANES2(subsat) BRONZE_LANES2(mulhi) BRONZE_LANES2(mulsat) BRONZE_LANES3(madhi) BRONZE_LANES3(madsat)
template <class T, int N> inline vec<T, N> extract_bits(vec<T, N> x, uint offset, uint bits) {
  for (int i = 0; i < N; ++i) x.s[i] = extract_bits(x.s[i], offset, bits);
  return x;
}
template <class T, int N> inline vec<T, N> insert_bits(vec<T, N> base, vec<T, N> insert, uint offset, uint bits) {
  for (int i = 0; i < N; ++i) base.s[i] = insert_bits(base.s[i], insert.s[i], offset, bits);
  return base;
}
#undef BRONZE_LANES1
#undef BRONZE_LANES2
#undef BRONZE_LANES3

}  // namespace metal
// numeric_limits: constexpr (kernels use them as reduction identities in
// constant expressions), but for half on CUDA, whose conversion is an
// instruction there. As in Metal, it is _numeric_limits_impl's, which
// libraries specialize for their own types, unqualified at global scope
// (candle's indexed<T>): so that template is the user's global namespace's,
// where EDG takes such a specialization. It has one parameter, as Metal's:
// Clang refuses a partial specialization `_numeric_limits_impl<indexed<T>>`
// whose defaulted second argument would depend on T.
template <class T, bool = metal::is_integral<T>::value> struct bronze_numeric_limits_ {
  static constexpr bool is_specialized = false;
};
template <class T> struct bronze_numeric_limits_<T, true> {
  static constexpr bool is_specialized = true, is_signed = T(-1) < T(0), is_integer = true;
  static constexpr int digits = 8 * sizeof(T) - (T(-1) < T(0) ? 1 : 0);
  static constexpr T max() { return is_signed ? T((1ull << (8 * sizeof(T) - 1)) - 1) : T(~0ull); }
  static constexpr T min() { return is_signed ? T(-max() - 1) : T(0); }
  static constexpr T lowest() { return min(); }
};
template <> struct bronze_numeric_limits_<bool, true> {
  static constexpr bool is_specialized = true, is_signed = false, is_integer = true;
  static constexpr bool max() { return true; }
  static constexpr bool min() { return false; }
  static constexpr bool lowest() { return false; }
};
#define BRONZE_FLOAT_LIMITS(T, CE, BITS, WORD, MAXB, MINB, EPSB, DIG)                                \
  template <> struct bronze_numeric_limits_<T, false> {                                             \
    static constexpr bool is_specialized = true, is_signed = true, is_integer = false;              \
    static constexpr int digits = DIG;                                                              \
    typedef WORD word;                                                                              \
    static CE T bits(word w) { return __builtin_bit_cast(T, w); }                                    \
    static CE T max() { return bits(MAXB); }                                                        \
    static CE T lowest() { return bits(word(MAXB | (word(1) << (BITS - 1)))); }                     \
    static CE T min() { return bits(MINB); }                                                        \
    static CE T denorm_min() { return bits(1); }                                                    \
    static CE T epsilon() { return bits(EPSB); }                                                    \
    static CE T infinity() { return bits(word(MAXB + 1)); }                                         \
    static CE T quiet_NaN() { return bits(word((MAXB + 1) | (MINB >> 1))); }                        \
  };
BRONZE_FLOAT_LIMITS(float, constexpr, 32, unsigned int, 0x7f7fffffu, 0x00800000u, 0x34000000u, 24)
BRONZE_FLOAT_LIMITS(double, constexpr, 64, unsigned long long, 0x7fefffffffffffffull, 0x0010000000000000ull,
                    0x3cb0000000000000ull, 53)
BRONZE_FLOAT_LIMITS(bfloat, constexpr, 16, unsigned short, 0x7f7fu, 0x0080u, 0x3c00u, 8)
BRONZE_FLOAT_LIMITS(half, constexpr, 16, unsigned short, 0x7bffu, 0x0400u, 0x1400u, 11)
#undef BRONZE_FLOAT_LIMITS
template <class T> struct _numeric_limits_impl : bronze_numeric_limits_<T> {};
namespace metal {
using bronze_msl::_numeric_limits_impl;
template <class T> struct numeric_limits : _numeric_limits_impl<T> {};
// The bit fields of a floating type's encoding (Metal's internal
// _fp_encoding_traits, which bfloat and fp8 converters in MLX and
// kernels-community read).
template <class T> struct _fp_encoding_traits;
#define BRONZE_FP_ENCODING(T, WORD, BITS, MANTISSA)                                                 \
  template <> struct _fp_encoding_traits<T> {                                                       \
    typedef WORD encoding_type;                                                                     \
    static constexpr encoding_type bit_width = BITS;                                                \
    static constexpr encoding_type sign_mask = encoding_type(encoding_type(1) << (BITS - 1));       \
    static constexpr encoding_type mantissa_mask = encoding_type((encoding_type(1) << MANTISSA) - 1); \
    static constexpr encoding_type exponent_mask = encoding_type(~sign_mask & ~mantissa_mask);      \
    static constexpr encoding_type inf_mask = exponent_mask;                                        \
  };
BRONZE_FP_ENCODING(float, uint, 32, 23) BRONZE_FP_ENCODING(half, ushort, 16, 10)
BRONZE_FP_ENCODING(bfloat, ushort, 16, 7)
#undef BRONZE_FP_ENCODING
template <class T> inline bool isnormal(T x) { return isfinite(x) && abs(x) >= numeric_limits<T>::min(); }
template <class T, int N> inline vec<bool, N> isnormal(vec<T, N> v) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = isnormal(v.s[i]); return r; }
// fast:: and precise:: hold the math functions themselves (using-
// declarations, not a using-directive): a library that adds its own
// overloads there (MLX's bfloat math) still finds these by qualified lookup.
#define BRONZE_MATH_NAMES(X)                                                                           \
  X(abs) X(atan2) X(clamp) X(copysign) X(cospi) X(cross) X(distance) X(dot) X(fdim) X(fma) X(fmax)       \
  X(fmax3) X(fmedian3) X(fmin) X(fmin3) X(fmod) X(fract) X(frexp) X(isfinite) X(isinf) X(isnan) X(ldexp) \
  X(length) X(length_squared) X(max) X(max3) X(median3) X(min) X(min3) X(mix) X(nextafter) X(normalize)  \
  X(saturate) X(select) X(sign) X(signbit) X(sincos) X(sinpi) X(step) X(tanpi)
#define BRONZE_USING(name) using metal::name;
namespace fast { BRONZE_MATH_NAMES(BRONZE_USING) }
namespace precise { BRONZE_MATH_NAMES(BRONZE_USING) }
#undef BRONZE_USING
#undef BRONZE_MATH_NAMES
#undef BRONZE_MODE_NAMES
#undef BRONZE_PRECISE_ONLY_NAMES
#undef BRONZE_FAST_NAMES
}  // namespace metal
namespace fast = metal::fast;
namespace precise = metal::precise;

// --------------------------------------------------------------- matrices
// matrix<T, Cols, Rows> (float4x4, half2x4): Cols column vectors of Rows
// elements, column-major as Metal's; m[c] is column c. A scalar makes a
// diagonal matrix, as in Metal; element types convert explicitly.
namespace metal {
template <class T, int C, int R>
struct matrix {
  static_assert(C >= 2 && C <= 4 && R >= 2 && R <= 4, "Metal's matrices are 2 to 4 columns of 2 to 4 rows");
  vec<T, R> columns[C];
  matrix() = default;
  constexpr explicit matrix(T d) : columns{} {
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) columns[c][r] = c == r ? d : T(0);
  }
  // C columns, or C x R scalars in column-major order.
  template <class... A, class = typename bronze_if_<sizeof...(A) == C || sizeof...(A) == C * R>::type>
  constexpr matrix(const A&... a) : columns{} {  // NOLINT
    if constexpr (sizeof...(A) == C) {
      int c = 0;
      ((columns[c++] = vec<T, R>(a)), ...);
    } else {
      int k = 0;
      ((columns[k / R][k % R] = T(a), ++k), ...);
    }
  }
  template <class U>
  constexpr explicit matrix(const matrix<U, C, R>& o) : columns{} {
    for (int c = 0; c < C; ++c) columns[c] = vec<T, R>(o.columns[c]);
  }
  constexpr vec<T, R>& operator[](int c) { return columns[c]; }
  constexpr const vec<T, R>& operator[](int c) const { return columns[c]; }
#define BRONZE_MAT_OP(op)                                                                          \
  friend matrix operator op(matrix a, const matrix& b) { for (int c = 0; c < C; ++c) a.columns[c] = a.columns[c] op b.columns[c]; return a; } \
  matrix& operator op##=(const matrix& b) { return *this = *this op b; }
  BRONZE_MAT_OP(+) BRONZE_MAT_OP(-)
#undef BRONZE_MAT_OP
  friend matrix operator*(matrix a, T s) { for (int c = 0; c < C; ++c) a.columns[c] = a.columns[c] * s; return a; }
  friend matrix operator*(T s, const matrix& a) { return a * s; }
  matrix& operator*=(T s) { return *this = *this * s; }
  friend matrix operator-(matrix a) { for (int c = 0; c < C; ++c) a.columns[c] = -a.columns[c]; return a; }
  // m * v: a combination of the columns; v * m: a dot product per column.
  friend vec<T, R> operator*(const matrix& m, const vec<T, C>& v) {
    vec<T, R> r = m.columns[0] * v[0];
    for (int c = 1; c < C; ++c) r = r + m.columns[c] * v[c];
    return r;
  }
  friend vec<T, C> operator*(const vec<T, R>& v, const matrix& m) {
    vec<T, C> r;
    for (int c = 0; c < C; ++c) r[c] = dot(v, m.columns[c]);
    return r;
  }
  template <int K> friend matrix<T, K, R> operator*(const matrix& a, const matrix<T, K, C>& b) {
    matrix<T, K, R> r;
    for (int k = 0; k < K; ++k) r.columns[k] = a * b.columns[k];
    return r;
  }
  matrix& operator*=(const matrix<T, C, C>& b) { return *this = *this * b; }
};
template <class T, int C, int R> constexpr matrix<T, R, C> transpose(const matrix<T, C, R>& m) {
  matrix<T, R, C> t;
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < R; ++r) t.columns[r][c] = m.columns[c][r];
  return t;
}
template <class T> constexpr T determinant(const matrix<T, 2, 2>& m) { return m[0][0] * m[1][1] - m[1][0] * m[0][1]; }
template <class T> constexpr T determinant(const matrix<T, 3, 3>& m) { return dot(m[0], cross(m[1], m[2])); }
template <class T> constexpr T determinant(const matrix<T, 4, 4>& m) {  // by the first column's cofactors
  T d = T(0);
  for (int r = 0; r < 4; ++r) {
    matrix<T, 3, 3> minor;
    for (int c = 1; c < 4; ++c)
      for (int k = 0, rr = 0; k < 4; ++k)
        if (k != r) minor[c - 1][rr++] = m[c][k];
    d = d + ((r & 1) ? T(-1) : T(1)) * m[0][r] * determinant(minor);
  }
  return d;
}
}  // namespace metal
#define BRONZE_MAT_TYPES(T)                                                                        \
  typedef metal::matrix<T, 2, 2> T##2x2; typedef metal::matrix<T, 2, 3> T##2x3; typedef metal::matrix<T, 2, 4> T##2x4; \
  typedef metal::matrix<T, 3, 2> T##3x2; typedef metal::matrix<T, 3, 3> T##3x3; typedef metal::matrix<T, 3, 4> T##3x4; \
  typedef metal::matrix<T, 4, 2> T##4x2; typedef metal::matrix<T, 4, 3> T##4x3; typedef metal::matrix<T, 4, 4> T##4x4;
BRONZE_MAT_TYPES(float) BRONZE_MAT_TYPES(half) BRONZE_MAT_TYPES(bfloat)
#undef BRONZE_MAT_TYPES

#ifndef METAL_FUNC
#define METAL_FUNC inline __attribute__((__always_inline__))
#endif
// Metal's assert (metal_assert): the condition is compiled, and checked
// nowhere, as in a Metal build without logging; a GPU trap would leave the
// CUDA context unusable.
#undef assert
#define assert(condition) ((void)sizeof((condition) ? 1 : 0))
// Metal's limit macros and math constants (metal_types, metal_math).
#define INFINITY (BRONZE_INF)
#define HUGE_VALF (BRONZE_INF)
#define NAN (BRONZE_QNAN)
#define MAXFLOAT 3.402823466e+38f
#define FLT_MAX 3.402823466e+38f
#define FLT_MIN 1.175494351e-38f
#define FLT_EPSILON 1.1920928955e-07f
#define FLT_DIG 6
#define FLT_MANT_DIG 24
#define FLT_MAX_EXP 128
#define FLT_MIN_EXP (-125)
#define FLT_MAX_10_EXP 38
#define FLT_MIN_10_EXP (-37)
#define FLT_RADIX 2
#define HALF_MAX ((half)65504.0f)
#define HALF_MIN ((half)6.103515625e-05f)
#define MAXHALF ((half)65504.0f)
#define HALF_EPSILON ((half)9.765625e-04f)
#define CHAR_BIT 8
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define UCHAR_MAX 255
#define CHAR_MAX SCHAR_MAX
#define CHAR_MIN SCHAR_MIN
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define USHRT_MAX 65535
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 0xffffffffu
#define LONG_MAX 0x7fffffffffffffffL
#define LONG_MIN (-0x7fffffffffffffffL - 1)
#define ULONG_MAX 0xffffffffffffffffUL
// As macros, as Metal has them: a library that defines one first keeps its own.
#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LOG10E_F 0.434294481903251827651f
#define M_LN2_F 0.693147180559945309417f
#define M_LN10_F 2.30258509299404568402f
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.785398163397448309616f
#define M_1_PI_F 0.318309886183790671538f
#define M_2_PI_F 0.636619772367581343076f
#define M_2_SQRTPI_F 1.12837916709551257390f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.707106781186547524401f
#define M_E_H ((half)M_E_F)
#define M_LOG2E_H ((half)M_LOG2E_F)
#define M_LOG10E_H ((half)M_LOG10E_F)
#define M_LN2_H ((half)M_LN2_F)
#define M_LN10_H ((half)M_LN10_F)
#define M_PI_H ((half)M_PI_F)
#define M_PI_2_H ((half)M_PI_2_F)
#define M_PI_4_H ((half)M_PI_4_F)
#define M_1_PI_H ((half)M_1_PI_F)
#define M_2_PI_H ((half)M_2_PI_F)
#define M_2_SQRTPI_H ((half)M_2_SQRTPI_F)
#define M_SQRT2_H ((half)M_SQRT2_F)
#define M_SQRT1_2_H ((half)M_SQRT1_2_F)

// -------------------------------------------------------------- atomics
// Orders and scopes as Metal 3.2 names them. Scope values follow Apple's
// headers (system, which libraries define themselves from
// __METAL_MEMORY_SCOPE_SYSTEM__, is 3).
enum memory_order { memory_order_relaxed, memory_order_acquire, memory_order_release, memory_order_acq_rel,
                    memory_order_seq_cst };
enum thread_scope { thread_scope_thread = 0, thread_scope_threadgroup = 1, thread_scope_device = 2,
                    thread_scope_simdgroup = 4 };
constexpr thread_scope bronze_scope_system = thread_scope(3);
template <class T> struct bronze_atomic { T v; };
typedef bronze_atomic<int> atomic_int;
typedef bronze_atomic<uint> atomic_uint;
typedef bronze_atomic<float> atomic_float;
typedef bronze_atomic<bool> atomic_bool;
typedef bronze_atomic<ulong> atomic_ulong;  // Metal 3.1: device memory, min and max only
namespace metal {
template <class T> using atomic = bronze_atomic<T>;
}

enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4, mem_threadgroup_imageblock = 8 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(int(a) | int(b)); }
namespace metal { using bronze_msl::mem_flags; }

namespace metal {
// Metal 3.2's os_log: messages are dropped (there is no console to send them to).
struct os_log {
  constexpr os_log() {}
  constexpr os_log(const char*, const char*) {}
  template <class... A> void log(A...) const {}
  template <class... A> void log_debug(A...) const {}
  template <class... A> void log_info(A...) const {}
  template <class... A> void log_error(A...) const {}
  template <class... A> void log_fault(A...) const {}
};
// A vote converts explicitly to any integer type, as Metal's does
// (`static_cast<ulong>(vote)` in PyTorch's c10 headers; ulong and uint64_t
// are different types under NVRTC).
struct simd_vote {
  typedef ulong vote_t;
  vote_t v;
  template <class U, typename enable_if<is_integral<U>::value, int>::type = 0>
  explicit operator U() const { return U(v); }
  bool all() const { return v == 0xffffffffull; }
  bool any() const { return v != 0; }
};
struct quad_vote {  // bit l: lane l of the caller's quad
  typedef ushort vote_t;
  vote_t v;
  template <class U, typename enable_if<is_integral<U>::value, int>::type = 0>
  explicit operator U() const { return U(v); }
  bool all() const { return v == 0xf; }
  bool any() const { return v != 0; }
};
}  // namespace metal

// ------------------------------------------------ conditional operators
// `c ? h : 0` and `c ? h : x / 16.f` with h a half or bfloat: Metal applies
// the usual arithmetic conversions, but these are classes here (half under
// NVRTC, bfloat everywhere) that convert both ways, which C++ refuses as
// ambiguous. The rewrite (rewrite.cpp, wrap_conditionals) passes each
// operand through cond<decltype of the other>: a numeric mix becomes the
// type the arithmetic gives, an integer (a literal 0) against a pointer the
// null pointer; everything else goes through unchanged, as an lvalue when
// it is one, so the conditional's own rules apply.
namespace bronze_rt {
template <class X, class O, class A = metal::remove_cvref_t<X>, class B = metal::remove_cvref_t<O>>
struct cond_case {
  static constexpr bool mix = !metal::is_same<A, B>::value && metal::is_arithmetic<A>::value &&
                              metal::is_arithmetic<B>::value &&
                              (bronze_numeric_class_<A>::value || bronze_numeric_class_<B>::value);
  static constexpr bool null = metal::is_integral<A>::value && metal::is_pointer<B>::value;
};
template <class O, class X, class A = metal::remove_cvref_t<X>, class B = metal::remove_cvref_t<O>,
          class R = decltype(metal::declval<A>() + metal::declval<B>())>
constexpr typename metal::enable_if<cond_case<X, O>::mix, R>::type cond(X&& x) {
  return static_cast<R>(x);
}
template <class O, class X>
constexpr typename metal::enable_if<cond_case<X, O>::null, metal::remove_cvref_t<O>>::type cond(X&&) {
  return nullptr;
}
template <class O, class X>
constexpr typename metal::enable_if<!cond_case<X, O>::mix && !cond_case<X, O>::null, X>::type cond(X&& x) {
  return static_cast<X&&>(x);
}
}  // namespace bronze_rt

// ------------------------------------------------ how entries call kernels
// Generated entries take each parameter's type from the kernel function's
// own type, so templates, default template arguments and typedefs are
// resolved by the compiler, never by bronze's front end.
namespace bronze_rt {
template <int I, class P0, class... P> struct nth { typedef typename nth<I - 1, P...>::type type; };
template <class P0, class... P> struct nth<0, P0, P...> { typedef P0 type; };
template <class F> struct fn_params;
template <class R, class... P> struct fn_params<R (*)(P...)> {
  template <int I> using param = typename nth<I, P...>::type;
};
template <class F, int I> using param_t = typename fn_params<F>::template param<I>;

template <class T> struct strip { typedef T type; };  // the value behind a parameter
template <class T> struct strip<T*> { typedef typename strip<T>::type type; };
template <class T> struct strip<T* const> { typedef typename strip<T>::type type; };
template <class T> struct strip<T&> { typedef typename strip<T>::type type; };
template <class T> struct strip<const T> { typedef typename strip<T>::type type; };
template <class T> struct strip<volatile T> { typedef typename strip<T>::type type; };
template <class T> using value_t = typename strip<T>::type;
// A binding's element size for the layout table: a `device void*` buffer
// (ggml's) counts in bytes, as G++'s sizeof(void) does and EDG's refuses.
template <class T> struct size_of { static constexpr unsigned long long value = sizeof(T); };
template <> struct size_of<void> { static constexpr unsigned long long value = 1; };

// A binding's argument slot as the parameter type: pointers take the
// address, references and values the bytes at it.
template <class P> struct binding { typedef P type; static P get(P v) { return v; } static P from(void* a) { return *(P*)a; } };
template <class T> struct binding<T*> { typedef T* type; static T* get(T* p) { return p; } static T* from(void* a) { return (T*)a; } };
template <class T> struct binding<T* const> : binding<T*> {};
template <class T> struct binding<T&> { typedef T* type; static T& get(T* p) { return *p; } static T& from(void* a) { return *(T*)a; } };
template <class P> inline P arg(void* a) { return binding<P>::from(a); }
// A parameter whose [[function_constant]] is false, which the kernel may not
// touch: pointers are null, references and values refer to zeroed scratch.
#if BRONZE_CUDA
__device__
#endif
alignas(16) static unsigned char absent_bytes[256];
template <class P> struct absent_of { static P get() { return binding<P>::from(absent_bytes); } };
template <class T> struct absent_of<T*> { static T* get() { return nullptr; } };
template <class P> inline P absent() { return absent_of<P>::get(); }
// A binding that its plan keeps: the value from the launch, else absent.
template <class P, bool present> inline P arg_if(void* a) {
  if constexpr (present) return binding<P>::from(a);
  else return absent<P>();
}

// CUDA entries: the kernel parameter that carries the binding, and back.
template <class P> using slot_t = typename binding<P>::type;
template <class P> inline P from_slot(slot_t<P> v) { return binding<P>::get(v); }
template <class P, bool present, class S> inline P from_slot_if(S v) {
  if constexpr (present) return binding<P>::get(v);
  else return absent<P>();
}
// A binding built by `make` (a CPU bounds-checked view), or absent.
template <class P, bool present, class F> inline P make_if(F&& make) {
  if constexpr (present) return make();
  else return absent<P>();
}
template <class P, bool present, class V> inline P value_if(V& v) {
  if constexpr (present) return v;
  else return absent<P>();
}

// What Metal's compiler decides of a signature, decided by the compiler that
// builds the unit: each kernel's binding plan (rewrite.hpp) holds per
// parameter its kind, its [[buffer(n)]]/[[threadgroup(n)]] index as the
// compiler evaluates it (-1: none given) and whether its
// [[function_constant]] keeps it; the slots follow, checked by static_asserts
// at the user's lines.
enum plan_kind { plan_binding = 0, plan_threadgroup = 1, plan_other = 2 };
struct plan_param {
  int kind;
  bool given;  // an index was given (else implicit)
  long long index;
  bool present;
};
template <unsigned long N>
constexpr bool plan_taken(const plan_param (&p)[N], int kind, long long index, unsigned long except) {
  for (unsigned long j = 0; j < N; ++j)
    if (j != except && p[j].kind == kind && p[j].given && p[j].present && p[j].index == index) return true;
  return false;
}
// A present parameter's slot: its index, else (a binding) the first free
// one after the implicit slots of the bindings before it, in declaration
// order; -1 for a threadgroup buffer or other parameter given none.
// (Every path returns within the array: the layout table's initializer
// calls it for removed parameters too, and an expression that is not a
// constant would initialize the table when the module loads.)
template <unsigned long N> constexpr long long plan_slot(const plan_param (&p)[N], unsigned long i) {
  if (p[i].given) return p[i].index;
  if (p[i].kind != plan_binding || !p[i].present) return -1;
  long long next = 0;
  for (unsigned long j = 0; j < i; ++j) {
    if (p[j].kind != plan_binding || !p[j].present || p[j].given) continue;
    while (plan_taken(p, plan_binding, next, N)) ++next;
    ++next;
  }
  while (plan_taken(p, plan_binding, next, N)) ++next;
  return next;
}
template <unsigned long N> constexpr bool plan_unique(const plan_param (&p)[N], unsigned long i) {
  return !p[i].present || !p[i].given || !plan_taken(p, p[i].kind, p[i].index, i);
}
template <unsigned long N> constexpr bool plan_in_range(const plan_param (&p)[N], unsigned long i, long long n) {
  return !p[i].present || (plan_slot(p, i) >= 0 && plan_slot(p, i) < n);
}
template <unsigned long N> constexpr int plan_threadgroup_index(const plan_param (&p)[N], unsigned long i) {
  return p[i].given ? static_cast<int>(p[i].index) : 0;
}
template <class F> struct returns_void : metal::false_type {};
template <class... P> struct returns_void<void (*)(P...)> : metal::true_type {};
// Thread-position attributes take uint or ushort, or their 2- and 3-vectors.
template <class T> struct position_scalar : metal::bool_constant<metal::is_same_v<T, uint> || metal::is_same_v<T, ushort>> {};
template <class T> struct is_position : position_scalar<T> {};
template <class T, int N> struct is_position<vec<T, N>> : metal::bool_constant<N <= 3 && position_scalar<T>::value> {};

// Thread-position attributes as the parameter's type (uint, ushort2, uint3...).
template <class P, int N = vec_traits<value_t<P>>::n> struct dim_of;
template <class P> struct dim_of<P, 1> { static value_t<P> get(const uint3& v) { return value_t<P>(v.x); } };
template <class P> struct dim_of<P, 2> { static value_t<P> get(const uint3& v) { return value_t<P>(v.x, v.y); } };
template <class P> struct dim_of<P, 3> { static value_t<P> get(const uint3& v) { return value_t<P>(v.x, v.y, v.z); } };
template <class P> inline value_t<P> dim(const uint3& v) { return dim_of<P>::get(v); }
template <class P> inline value_t<P> dim(uint v) { return value_t<P>(v); }

// A type as the runtime reads it from the layout table: the scalar (1-13),
// plus 16 x lanes for vectors, +128 packed, +256 atomic; 0 for any other type.
template <class T> struct type_code { static constexpr unsigned long long value = 0; };
#define BRONZE_TYPE_CODE(T, c) template <> struct type_code<T> { static constexpr unsigned long long value = c; };
BRONZE_TYPE_CODE(float, 1) BRONZE_TYPE_CODE(half, 2) BRONZE_TYPE_CODE(bfloat, 3) BRONZE_TYPE_CODE(double, 4)
BRONZE_TYPE_CODE(char, 5) BRONZE_TYPE_CODE(signed char, 5) BRONZE_TYPE_CODE(unsigned char, 6)
BRONZE_TYPE_CODE(short, 7) BRONZE_TYPE_CODE(unsigned short, 8) BRONZE_TYPE_CODE(int, 9)
BRONZE_TYPE_CODE(unsigned int, 10) BRONZE_TYPE_CODE(long, 11) BRONZE_TYPE_CODE(long long, 11)
BRONZE_TYPE_CODE(unsigned long, 12) BRONZE_TYPE_CODE(unsigned long long, 12) BRONZE_TYPE_CODE(bool, 13)
#undef BRONZE_TYPE_CODE
template <class T, int N> struct type_code<vec<T, N>> { static constexpr unsigned long long value = type_code<T>::value ? type_code<T>::value + 16 * N : 0; };
template <class T, int N> struct type_code<packed_vec<T, N>> { static constexpr unsigned long long value = type_code<T>::value ? type_code<T>::value + 16 * N + 128 : 0; };
template <class T> struct type_code<bronze_atomic<T>> { static constexpr unsigned long long value = type_code<T>::value ? type_code<T>::value + 256 : 0; };

// simd_and/or/xor combine the lanes' bits: for floating-point values, their
// representation (as Metal's intrinsics on the 32-bit registers do).
#define BRONZE_BITWISE(name, op)                                                                    \
  template <class T> inline T name(T a, T b) { return T(a op b); }                                  \
  inline float name(float a, float b) {                                                             \
    return __builtin_bit_cast(float, __builtin_bit_cast(unsigned int, a) op __builtin_bit_cast(unsigned int, b)); \
  }                                                                                                 \
  inline half name(half a, half b) {                                                                \
    return __builtin_bit_cast(half, (unsigned short)(__builtin_bit_cast(unsigned short, a) op     \
                                                     __builtin_bit_cast(unsigned short, b)));     \
  }                                                                                                 \
  inline bfloat name(bfloat a, bfloat b) {                                                          \
    bfloat r;                                                                                       \
    r.bits = (unsigned short)(a.bits op b.bits);                                                    \
    return r;                                                                                       \
  }
BRONZE_BITWISE(bit_and, &) BRONZE_BITWISE(bit_or, |) BRONZE_BITWISE(bit_xor, ^)
#undef BRONZE_BITWISE

// `T a[N] = { [lo ... hi] = v };` (rewrite.cpp): a is declared with {} first.
template <class A, class V> inline void fill_range(A& a, long lo, long hi, const V& v) {
  for (long k = lo; k <= hi; ++k) a[k] = v;
}
// `threadgroup T x = init;`: each thread stores the initial value.
template <class T> inline void tg_store(T& dst, const T& src) { dst = src; }
template <class T, int N> inline void tg_store(T (&dst)[N], const T (&src)[N]) { for (int i = 0; i < N; ++i) tg_store(dst[i], src[i]); }
}  // namespace bronze_rt

// simdgroup_matrix<T, 8, 8> as Apple's GPUs keep it: lane l holds row
// sgm_row(l), columns sgm_col(l) and sgm_col(l) + 1 (MLX and llama.cpp read
// thread_elements() by this layout). sgm_lane is the inverse.
namespace bronze_rt {
constexpr uint sgm_row(uint l) { return (l >> 2 & 4u) | (l >> 1 & 3u); }
constexpr uint sgm_col(uint l) { return (l >> 1 & 4u) | (l << 1 & 2u); }
constexpr uint sgm_lane(uint row, uint col) { return (row & 4u) << 2 | (col & 4u) << 1 | (row & 3u) << 1 | (col >> 1 & 1u); }
// A backend may hold matrices in another layout (its sgm_home), the one its
// multiply takes, so that loads, stores and chains of multiplies move
// nothing between lanes. rows: lane 4g + t holds row g, columns 2t and
// 2t + 1 (NVIDIA's mma A and accumulator fragment); cols: row 2t + j,
// column g (its B fragment). The layout is fixed per unit, never tracked at
// run time: a layout tag in each matrix stops the compiler unrolling loops
// over arrays of matrices, which then live in local memory. A unit that
// reads thread_elements() gets apple (the front end defines
// BRONZE_SGM_THREAD_ELEMENTS).
enum class sgm_layout : uint { apple, rows, cols };
struct sgm_rc { uint r, c; };
// (row, column) of lane l's element j.
constexpr sgm_rc sgm_coord(sgm_layout L, uint l, uint j) {
  return L == sgm_layout::rows   ? sgm_rc{l >> 2, (l & 3u) * 2 + j}
         : L == sgm_layout::cols ? sgm_rc{(l & 3u) * 2 + j, l >> 2}
                                 : sgm_rc{sgm_row(l), sgm_col(l) + j};
}
// The lane holding element (r, c), and which of its two it is.
constexpr sgm_rc sgm_holder(sgm_layout L, uint r, uint c) {
  return L == sgm_layout::rows   ? sgm_rc{r * 4 + c / 2, c & 1u}
         : L == sgm_layout::cols ? sgm_rc{c * 4 + r / 2, r & 1u}
                                 : sgm_rc{sgm_lane(r, c), c & 1u};
}
}  // namespace bronze_rt

// Barriers, simdgroup functions and atomic operations, per compiler.
// Collectives take where they are called (bronze_rt::site) on the CPU,
// whose fibers tell the lanes of divergent branches apart by it; CUDA's
// warps know their active lanes.
// The user's helpers that reach a collective take their caller the same way
// (rules::call_chains), so a lane's exchange is keyed by its calls too.
#if BRONZE_CUDA
#define BRONZE_SITE
#define BRONZE_SITE_ONLY
#define BRONZE_AT
#define BRONZE_CALLER
#define BRONZE_CALLER_ONLY
#define BRONZE_FRAME
#else
#define BRONZE_SITE , ::bronze_msl::bronze_rt::site at = {}
#define BRONZE_SITE_ONLY ::bronze_msl::bronze_rt::site at = {}
#define BRONZE_AT , at
#define BRONZE_CALLER , ::bronze_msl::bronze_rt::site bronze_caller = {}
#define BRONZE_CALLER_ONLY ::bronze_msl::bronze_rt::site bronze_caller = {}
#define BRONZE_FRAME ::bronze_msl::bronze_rt::frame bronze_frame(bronze_caller);
#endif
#if BRONZE_CUDA
#include "bronze_metal_cuda.h"
#else
#include "bronze_metal_cpu.h"
#endif
// Metal 3.1's 64-bit atomics: min and max of a ulong, returning nothing.
inline void atomic_min_explicit(atomic_ulong* a, ulong x, memory_order o) { atomic_fetch_min_explicit(a, x, o); }
inline void atomic_max_explicit(atomic_ulong* a, ulong x, memory_order o) { atomic_fetch_max_explicit(a, x, o); }
namespace metal {
// Metal's reductions and broadcast, per type, each a template on an unused
// int: it beats a library's template of the same name seen beside it
// (PyTorch's c10::metal::simd_sum<T>, brought in with `using namespace
// c10::metal`) by being more specialized than T f(T), and loses to a
// library's non-template (mistral.rs's own float simd_sum(float) beside
// `using namespace metal`; c10's float2 simd_sum). The int also keeps
// simd_sum<T>(x) for the backend's template. Vectors take a template on
// vec<T, N>, more specialized than a library's T f(T). Metal has none for
// bfloat or 64-bit types, which libraries define themselves (MLX's
// bf16_math.h, in namespace metal; c10's long simd_sum): for those the
// backend's template remains, which a library's non-template beats.
#define BRONZE_SIMD_PER_TYPE(T)                                                                           \
  template <int = 0> inline T simd_sum(T x BRONZE_SITE) { return simd_sum<T>(x BRONZE_AT); }             \
  template <int = 0> inline T simd_product(T x BRONZE_SITE) { return simd_product<T>(x BRONZE_AT); }     \
  template <int = 0> inline T simd_max(T x BRONZE_SITE) { return simd_max<T>(x BRONZE_AT); }             \
  template <int = 0> inline T simd_min(T x BRONZE_SITE) { return simd_min<T>(x BRONZE_AT); }             \
  template <int = 0> inline T simd_broadcast(T x, ushort lane BRONZE_SITE) { return simd_broadcast<T>(x, lane BRONZE_AT); }
BRONZE_SIMD_PER_TYPE(char) BRONZE_SIMD_PER_TYPE(uchar) BRONZE_SIMD_PER_TYPE(short) BRONZE_SIMD_PER_TYPE(ushort)
BRONZE_SIMD_PER_TYPE(int) BRONZE_SIMD_PER_TYPE(uint) BRONZE_SIMD_PER_TYPE(half) BRONZE_SIMD_PER_TYPE(float)
#undef BRONZE_SIMD_PER_TYPE
#define BRONZE_SIMD_VEC1(name)                                                                            \
  template <class T, int N> inline vec<T, N> name(vec<T, N> x BRONZE_SITE) { return name<vec<T, N>>(x BRONZE_AT); }
BRONZE_SIMD_VEC1(simd_sum) BRONZE_SIMD_VEC1(simd_product) BRONZE_SIMD_VEC1(simd_max) BRONZE_SIMD_VEC1(simd_min)
#undef BRONZE_SIMD_VEC1
template <class T, int N> inline vec<T, N> simd_broadcast(vec<T, N> x, ushort lane BRONZE_SITE) {
  return simd_broadcast<vec<T, N>>(x, lane BRONZE_AT);
}
// Metal's internal test of a simdgroup function's operand (candle's
// reduce.metal reads it): a number or a vector of numbers, not bool.
template <class T>
struct __is_valid_simdgroup_type : bool_constant<is_arithmetic<typename vec_traits<T>::elem>::value &&
                                                 !is_same<typename vec_traits<T>::elem, bool>::value> {};
}  // namespace metal
using namespace metal;

// Apple's compiler-internal intrinsics, which some libraries call directly
// (MLX: __metal_fabs(x, __METAL_MAYBE_FAST_MATH__)): each is the library
// function of that name, from fast:: or precise:: where a trailing math-mode
// argument names one (and the function has modes), else from metal::.
namespace bronze_rt {
struct math_mode {};  // the unit's mode
struct fast_math : math_mode {};
struct precise_math : math_mode {};
}  // namespace bronze_rt
#define __METAL_MAYBE_FAST_MATH__ ::bronze_msl::bronze_rt::math_mode()
#define __METAL_FAST_MATH__ ::bronze_msl::bronze_rt::fast_math()
#define __METAL_PRECISE_MATH__ ::bronze_msl::bronze_rt::precise_math()
// One arity per name: EDG (NVRTC) checks a call's argument count where the
// template is defined.
#define BRONZE_INTRINSIC1(name)                                                                          \
  template <class A> inline auto __metal_##name(A a) -> decltype(metal::name(a)) { return metal::name(a); } \
  template <class A> inline auto __metal_##name(A a, bronze_rt::math_mode) -> decltype(metal::name(a)) {    \
    return metal::name(a);                                                                               \
  }
#define BRONZE_INTRINSIC2(name)                                                                          \
  template <class A, class B> inline auto __metal_##name(A a, B b) -> decltype(metal::name(a, b)) {      \
    return metal::name(a, b);                                                                            \
  }                                                                                                      \
  template <class A, class B>                                                                            \
  inline auto __metal_##name(A a, B b, bronze_rt::math_mode) -> decltype(metal::name(a, b)) {            \
    return metal::name(a, b);                                                                            \
  }
#define BRONZE_INTRINSIC3(name)                                                                          \
  template <class A, class B, class C>                                                                   \
  inline auto __metal_##name(A a, B b, C c) -> decltype(metal::name(a, b, c)) {                          \
    return metal::name(a, b, c);                                                                         \
  }                                                                                                      \
  template <class A, class B, class C>                                                                   \
  inline auto __metal_##name(A a, B b, C c, bronze_rt::math_mode) -> decltype(metal::name(a, b, c)) {    \
    return metal::name(a, b, c);                                                                         \
  }
#define BRONZE_INTRINSIC4(name)                                                                          \
  BRONZE_INTRINSIC3(name)                                                                                \
  template <class A, class B, class C, class D>                                                          \
  inline auto __metal_##name(A a, B b, C c, D d) -> decltype(metal::name(a, b, c, d)) {                  \
    return metal::name(a, b, c, d);                                                                      \
  }
#define BRONZE_UNARY(X)                                                                                  \
  X(fabs) X(acos) X(acosh) X(asin) X(asinh) X(atan) X(atanh) X(ceil) X(cos) X(cosh) X(cospi) X(exp)        \
  X(exp10) X(exp2) X(floor) X(fract) X(log) X(log10) X(log2) X(rint) X(round)                             \
  X(rsqrt) X(sin) X(sinh) X(sinpi) X(sqrt) X(tan) X(tanh) X(tanpi) X(trunc) X(simd_sum) X(simd_product)    \
  X(simd_max) X(simd_min) X(simd_and) X(simd_or) X(simd_xor) X(simd_prefix_inclusive_sum)                   \
  X(simd_prefix_exclusive_sum) X(simd_prefix_inclusive_product) X(simd_prefix_exclusive_product)
#define BRONZE_BINARY(X)                                                                                 \
  X(atan2) X(divide) X(fmax) X(fmin) X(fmod) X(nextafter) X(pow) X(powr) X(ldexp) X(simd_broadcast)       \
  X(simd_shuffle) X(simd_shuffle_up) X(simd_shuffle_down) X(simd_shuffle_xor) X(simd_shuffle_rotate_up)     \
  X(simd_shuffle_rotate_down)
BRONZE_UNARY(BRONZE_INTRINSIC1)
BRONZE_BINARY(BRONZE_INTRINSIC2)
#define BRONZE_INTRINSIC_MODES(name, mode)                                                               \
  template <class A> inline auto __metal_##name(A a, bronze_rt::mode##_math) -> decltype(metal::mode::name(a)) { \
    return metal::mode::name(a);                                                                         \
  }
#define BRONZE_INTRINSIC_MODES1(name) BRONZE_INTRINSIC_MODES(name, fast) BRONZE_INTRINSIC_MODES(name, precise)
BRONZE_INTRINSIC_MODES1(exp) BRONZE_INTRINSIC_MODES1(exp10) BRONZE_INTRINSIC_MODES1(log)
BRONZE_INTRINSIC_MODES1(log2) BRONZE_INTRINSIC_MODES1(log10) BRONZE_INTRINSIC_MODES1(sin)
BRONZE_INTRINSIC_MODES1(cos) BRONZE_INTRINSIC_MODES1(tan) BRONZE_INTRINSIC_MODES1(sqrt)
BRONZE_INTRINSIC_MODES1(rsqrt)
#undef BRONZE_INTRINSIC_MODES1
#undef BRONZE_INTRINSIC_MODES
BRONZE_INTRINSIC3(fma) BRONZE_INTRINSIC3(fmax3) BRONZE_INTRINSIC3(fmin3) BRONZE_INTRINSIC3(fmedian3)
BRONZE_INTRINSIC4(simd_shuffle_and_fill_up) BRONZE_INTRINSIC4(simd_shuffle_and_fill_down)
#undef BRONZE_UNARY
#undef BRONZE_BINARY
#undef BRONZE_INTRINSIC1
#undef BRONZE_INTRINSIC2
#undef BRONZE_INTRINSIC3
#undef BRONZE_INTRINSIC4
template <class A> inline A __metal_frexp(A x, int* e) { return metal::frexp(x, *e); }
// What each backend defines outside namespace metal, reachable qualified too.
namespace metal {
using ::bronze_msl::atomic_bool;
using ::bronze_msl::atomic_compare_exchange_weak_explicit;
using ::bronze_msl::atomic_exchange_explicit;
using ::bronze_msl::atomic_fetch_add_explicit;
using ::bronze_msl::atomic_fetch_and_explicit;
using ::bronze_msl::atomic_fetch_max_explicit;
using ::bronze_msl::atomic_fetch_min_explicit;
using ::bronze_msl::atomic_fetch_or_explicit;
using ::bronze_msl::atomic_fetch_sub_explicit;
using ::bronze_msl::atomic_fetch_xor_explicit;
using ::bronze_msl::atomic_float;
using ::bronze_msl::atomic_int;
using ::bronze_msl::atomic_load_explicit;
using ::bronze_msl::atomic_store_explicit;
using ::bronze_msl::atomic_thread_fence;
using ::bronze_msl::atomic_uint;
using ::bronze_msl::atomic_ulong;
using ::bronze_msl::atomic_max_explicit;
using ::bronze_msl::atomic_min_explicit;
using ::bronze_msl::memory_order;
using ::bronze_msl::simdgroup_barrier;
using ::bronze_msl::thread_scope;
using ::bronze_msl::threadgroup_barrier;
using ::bronze_msl::memory_order_relaxed;
using ::bronze_msl::memory_order_acquire;
using ::bronze_msl::memory_order_release;
using ::bronze_msl::memory_order_acq_rel;
using ::bronze_msl::memory_order_seq_cst;
using ::bronze_msl::thread_scope_thread;
using ::bronze_msl::thread_scope_threadgroup;
using ::bronze_msl::thread_scope_device;
using ::bronze_msl::thread_scope_simdgroup;
}  // namespace metal
template <class T> inline T __metal_get_simdgroup_size(T) { return T(32); }

// ------------------------------------------------------ quad-group functions
// A quad is lanes 4q .. 4q + 3 of a simdgroup. Built from the simdgroup
// functions, so both backends share their active-lane semantics: every lane
// of the quad takes each value (one shuffle per quad lane), then folds those
// of the active lanes.
namespace bronze_rt {
enum quad_range { quad_all_lanes, quad_up_to_me, quad_before_me };
template <class T, class Op> inline T quad_fold(T x, T identity, Op op, quad_range range BRONZE_SITE) {
  const uint me = simd_lane(), base = me & ~3u;
  const uint64_t active = uint64_t(metal::simd_ballot(true BRONZE_AT));
  T r = identity;
  bool have = false;
  for (uint l = base; l < base + 4; ++l) {
    const T v = metal::simd_shuffle(x, ushort(l) BRONZE_AT);
    const bool in = (active >> l & 1u) && (range == quad_all_lanes || l < me || (range == quad_up_to_me && l == me));
    if (in) r = have ? op(r, v) : v;
    have |= in;
  }
  return r;
}
}  // namespace bronze_rt
namespace metal {
template <class T> inline T quad_sum(T x BRONZE_SITE) { return bronze_rt::quad_fold(x, T(0), [](T a, T b) { return T(a + b); }, bronze_rt::quad_all_lanes BRONZE_AT); }
template <class T> inline T quad_product(T x BRONZE_SITE) { return bronze_rt::quad_fold(x, T(1), [](T a, T b) { return T(a * b); }, bronze_rt::quad_all_lanes BRONZE_AT); }
template <class T> inline T quad_max(T x BRONZE_SITE) { return bronze_rt::quad_fold(x, x, [](T a, T b) { return max(a, b); }, bronze_rt::quad_all_lanes BRONZE_AT); }
template <class T> inline T quad_min(T x BRONZE_SITE) { return bronze_rt::quad_fold(x, x, [](T a, T b) { return min(a, b); }, bronze_rt::quad_all_lanes BRONZE_AT); }
template <class T> inline T quad_and(T x BRONZE_SITE) { return bronze_rt::quad_fold(x, x, [](T a, T b) { return bronze_rt::bit_and(a, b); }, bronze_rt::quad_all_lanes BRONZE_AT); }
template <class T> inline T quad_or(T x BRONZE_SITE) { return bronze_rt::quad_fold(x, x, [](T a, T b) { return bronze_rt::bit_or(a, b); }, bronze_rt::quad_all_lanes BRONZE_AT); }
template <class T> inline T quad_xor(T x BRONZE_SITE) { return bronze_rt::quad_fold(x, x, [](T a, T b) { return bronze_rt::bit_xor(a, b); }, bronze_rt::quad_all_lanes BRONZE_AT); }
template <class T> inline T quad_prefix_inclusive_sum(T x BRONZE_SITE) {
  return bronze_rt::quad_fold(x, T(0), [](T a, T b) { return T(a + b); }, bronze_rt::quad_up_to_me BRONZE_AT);
}
template <class T> inline T quad_prefix_exclusive_sum(T x BRONZE_SITE) {
  return bronze_rt::quad_fold(x, T(0), [](T a, T b) { return T(a + b); }, bronze_rt::quad_before_me BRONZE_AT);
}
template <class T> inline T quad_prefix_inclusive_product(T x BRONZE_SITE) {
  return bronze_rt::quad_fold(x, T(1), [](T a, T b) { return T(a * b); }, bronze_rt::quad_up_to_me BRONZE_AT);
}
template <class T> inline T quad_prefix_exclusive_product(T x BRONZE_SITE) {
  return bronze_rt::quad_fold(x, T(1), [](T a, T b) { return T(a * b); }, bronze_rt::quad_before_me BRONZE_AT);
}
inline bool quad_all(bool p BRONZE_SITE) { return bronze_rt::quad_fold(p, true, [](bool a, bool b) { return a && b; }, bronze_rt::quad_all_lanes BRONZE_AT); }
inline bool quad_any(bool p BRONZE_SITE) { return bronze_rt::quad_fold(p, false, [](bool a, bool b) { return a || b; }, bronze_rt::quad_all_lanes BRONZE_AT); }
// Shuffles within the quad: a source outside it, or inactive, gives the caller's own value.
inline ushort bronze_quad_lane(int l) { return ushort((bronze_rt::simd_lane() & ~3u) + (l >= 0 && l < 4 ? l : 32)); }
template <class T> inline T quad_shuffle(T x, ushort l BRONZE_SITE) { return simd_shuffle(x, bronze_quad_lane(l) BRONZE_AT); }
template <class T> inline T quad_broadcast(T x, ushort l BRONZE_SITE) { return simd_shuffle(x, bronze_quad_lane(l) BRONZE_AT); }
template <class T> inline T quad_shuffle_xor(T x, ushort m BRONZE_SITE) { return simd_shuffle(x, bronze_quad_lane((bronze_rt::simd_lane() ^ m) & 3u) BRONZE_AT); }
template <class T> inline T quad_shuffle_up(T x, ushort d BRONZE_SITE) { return simd_shuffle(x, bronze_quad_lane(int(bronze_rt::simd_lane() & 3u) - d) BRONZE_AT); }
template <class T> inline T quad_shuffle_down(T x, ushort d BRONZE_SITE) { return simd_shuffle(x, bronze_quad_lane(int(bronze_rt::simd_lane() & 3u) + d) BRONZE_AT); }
template <class T> inline T quad_shuffle_rotate_up(T x, ushort d BRONZE_SITE) { return simd_shuffle(x, bronze_quad_lane((bronze_rt::simd_lane() - d) & 3u) BRONZE_AT); }
template <class T> inline T quad_shuffle_rotate_down(T x, ushort d BRONZE_SITE) { return simd_shuffle(x, bronze_quad_lane((bronze_rt::simd_lane() + d) & 3u) BRONZE_AT); }
inline quad_vote quad_ballot(bool p BRONZE_SITE) {
  return quad_vote{ushort(uint64_t(simd_ballot(p BRONZE_AT)) >> (bronze_rt::simd_lane() & ~3u) & 0xfu)};
}
inline quad_vote quad_active_threads_mask(BRONZE_SITE_ONLY) { return quad_ballot(true BRONZE_AT); }
inline simd_vote simd_active_threads_mask(BRONZE_SITE_ONLY) { return simd_ballot(true BRONZE_AT); }
}  // namespace metal

// ---------------------------------------------------- simdgroup async copies
// A copy between device and threadgroup memory that a simdgroup makes
// together. Apple's GPUs run it in the background until
// simdgroup_event::wait; bronze copies at once, shared among the active
// lanes, and wait is the simdgroup barrier after which every lane sees the
// whole copy. (One address space: the two directions are one overload; D
// and S are pointers or, under validate=True, checked buffers.)
namespace metal {
enum class simdgroup_async_copy_clamp_mode { clamp_to_zero = 0, clamp_to_edge = 1 };
struct simdgroup_event {
  static void wait(int, simdgroup_event* BRONZE_SITE) {
    simdgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device BRONZE_AT);
  }
};
}  // namespace metal
namespace bronze_rt {
// This lane's rank among the simdgroup's active lanes, and their count.
inline uint active_rank(uint& count BRONZE_SITE) {
  const uint64_t active = uint64_t(metal::simd_ballot(true BRONZE_AT));
  count = uint(BRONZE_POPCOUNT64(active));
  return uint(BRONZE_POPCOUNT64(active & ((1ull << simd_lane()) - 1)));
}
}  // namespace bronze_rt
namespace metal {
template <class D, class S>
inline simdgroup_event simdgroup_async_copy(D dst, S src, ulong n_elements BRONZE_SITE) {
  uint lanes, i = bronze_rt::active_rank(lanes BRONZE_AT);
  for (ulong k = i; k < n_elements; k += lanes) dst[k] = src[k];
  return {};
}
// A tile: dst_tile_dimensions (columns, rows) of dst, each element from src
// at the same place shifted by offset_in_src_tile; places outside the
// src_tile_dimensions get zero or the nearest edge element.
template <class D, class S>
inline simdgroup_event simdgroup_async_copy(D dst, ulong dst_elements_per_row, ulong dst_element_stride,
                                            ulong2 dst_tile_dimensions, S src, ulong src_elements_per_row,
                                            ulong src_element_stride, ulong2 src_tile_dimensions,
                                            long2 offset_in_src_tile, simdgroup_async_copy_clamp_mode clamp_mode BRONZE_SITE) {
  typedef remove_cv_t<remove_reference_t<decltype(dst[0])>> T;
  uint lanes, i = bronze_rt::active_rank(lanes BRONZE_AT);
  const ulong w = dst_tile_dimensions.x, n = w * dst_tile_dimensions.y;
  for (ulong k = i; k < n; k += lanes) {
    const ulong x = k % w, y = k / w;
    long sx = long(x) + offset_in_src_tile.x, sy = long(y) + offset_in_src_tile.y;
    const bool inside = sx >= 0 && sy >= 0 && ulong(sx) < src_tile_dimensions.x && ulong(sy) < src_tile_dimensions.y;
    T v = T(0);
    if (inside || (clamp_mode == simdgroup_async_copy_clamp_mode::clamp_to_edge && src_tile_dimensions.x &&
                   src_tile_dimensions.y)) {
      sx = min(max(sx, 0l), long(src_tile_dimensions.x) - 1);
      sy = min(max(sy, 0l), long(src_tile_dimensions.y) - 1);
      v = src[ulong(sy) * src_elements_per_row + ulong(sx) * src_element_stride];
    }
    dst[y * dst_elements_per_row + x * dst_element_stride] = v;
  }
  return {};
}
// Threadgroup to device: the part of the source tile that fits the destination's.
template <class D, class S>
inline simdgroup_event simdgroup_async_copy(D dst, ulong dst_elements_per_row, ulong dst_element_stride,
                                            ulong2 dst_tile_dimensions, S src, ulong src_elements_per_row,
                                            ulong src_element_stride, ulong2 src_tile_dimensions) {
  uint lanes, i = bronze_rt::active_rank(lanes);
  const ulong w = min(dst_tile_dimensions.x, src_tile_dimensions.x);
  const ulong n = w * min(dst_tile_dimensions.y, src_tile_dimensions.y);
  for (ulong k = i; k < n; k += lanes) {
    const ulong x = k % w, y = k / w;
    dst[y * dst_elements_per_row + x * dst_element_stride] = src[y * src_elements_per_row + x * src_element_stride];
  }
  return {};
}
}  // namespace metal

// ------------------------------------------------------- simdgroup_matrix
// Each lane holds two elements (layouts above); loads, stores and fills
// touch only the lane's own, multiplies exchange elements across the
// simdgroup (bronze_rt::sgm_mma and sgm_move, per backend, with sgm_native
// naming the layouts its multiply takes). Every lane of the simdgroup takes
// part, as Metal requires.
namespace metal {
template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix is 8 x 8 (as on Apple's GPUs)");
  vec<T, 2> e_;  // in bronze_rt::sgm_home
  simdgroup_matrix() = default;
  explicit simdgroup_matrix(T diagonal) {  // Metal: a diagonal matrix
    for (uint j = 0; j < 2; ++j) {
      const bronze_rt::sgm_rc rc = bronze_rt::sgm_coord(bronze_rt::sgm_home, bronze_rt::simd_lane(), j);
      e_[j] = rc.r == rc.c ? diagonal : T(0);
    }
  }
  vec<T, 2>& thread_elements() { return e_; }
  const vec<T, 2>& thread_elements() const { return e_; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;
template <class T, int Cols, int Rows = Cols>
inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(const T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  m.e_ = vec<T, 2>(value);
  return m;
}
}  // namespace metal
namespace bronze_rt {
// Where this lane's element j lies in memory: element (row r, column c) is
// at (origin.y + r) * elements_per_row + origin.x + c; transposed, at
// (origin.y + c) * elements_per_row + origin.x + r.
inline ulong sgm_offset(uint j, ulong elements_per_row, ulong2 origin, bool transpose) {
  const sgm_rc rc = sgm_coord(sgm_home, simd_lane(), j);
  return transpose ? (origin.y + rc.c) * elements_per_row + origin.x + rc.r
                   : (origin.y + rc.r) * elements_per_row + origin.x + rc.c;
}
// d = a * b + c, each operand moved from sgm_home into the layout the
// backend's multiply takes it in and the result back.
template <class TD, class TA, class TB, class TC>
inline vec<TD, 2> sgm_multiply(vec<TA, 2> a, vec<TB, 2> b, vec<TC, 2> c BRONZE_SITE) {
  typedef sgm_native<TA, TB> L;
  return sgm_move<L::c, sgm_home>(sgm_mma<TD>(sgm_move<sgm_home, L::a>(a), sgm_move<sgm_home, L::b>(b),
                                               sgm_move<sgm_home, L::c>(c) BRONZE_AT));
}
}  // namespace bronze_rt
namespace metal {
// P is a pointer (or a checked buffer under validate=True) in any address
// space.
template <class T, int Cols, int Rows, class P>
inline void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, P src, ulong elements_per_row = Cols,
                           ulong2 matrix_origin = ulong2(0), bool transpose_matrix = false) {
  for (uint j = 0; j < 2; ++j) d.e_[j] = T(src[bronze_rt::sgm_offset(j, elements_per_row, matrix_origin, transpose_matrix)]);
}
template <class T, int Cols, int Rows, class P>
inline void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, P dst, ulong elements_per_row = Cols,
                            ulong2 matrix_origin = ulong2(0), bool transpose_matrix = false) {
  typedef remove_cvref_t<decltype(dst[0])> E;
  for (uint j = 0; j < 2; ++j) dst[bronze_rt::sgm_offset(j, elements_per_row, matrix_origin, transpose_matrix)] = E(a.e_[j]);
}
// d = a * b + c; d may be c. The element types may differ (half a and b
// into a float accumulator, as MLX and llama.cpp do).
template <class TD, class TA, class TB, class TC>
inline void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                          const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>& c BRONZE_SITE) {
  d.e_ = bronze_rt::sgm_multiply<TD>(a.e_, b.e_, c.e_ BRONZE_AT);
}
template <class TD, class TA, class TB>
inline void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                               const simdgroup_matrix<TB, 8, 8>& b BRONZE_SITE) {
  d.e_ = bronze_rt::sgm_multiply<TD>(a.e_, b.e_, vec<TD, 2>(TD(0)) BRONZE_AT);
}
template <class T>
inline simdgroup_matrix<T, 8, 8> operator*(const simdgroup_matrix<T, 8, 8>& a, const simdgroup_matrix<T, 8, 8>& b) {
  simdgroup_matrix<T, 8, 8> d;
  simdgroup_multiply(d, a, b);
  return d;
}
}  // namespace metal
}  // namespace bronze_msl
