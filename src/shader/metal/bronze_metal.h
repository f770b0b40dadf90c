// bronze's emulation of Metal Shading Language's compute subset, for the
// host C++ compiler (the CPU backend). Rewritten kernels include it first.
// It uses compiler builtins only, so no libc/libstdc++ names leak into the
// kernel's namespace and collide with Metal's (abs, max, sqrt, ...).
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;
typedef _Float16 half;

// bfloat converts implicitly only toward float, as in Metal.
struct bfloat {
  unsigned short bits;
  bfloat() : bits(0) {}
  explicit bfloat(float f) {
    unsigned int x;
    __builtin_memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) bits = (unsigned short)((x >> 16) | 0x40u);
    else bits = (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  }
  explicit bfloat(double d) : bfloat((float)d) {}
  explicit bfloat(int i) : bfloat((float)i) {}
  operator float() const {
    unsigned int x = (unsigned int)bits << 16;
    float f;
    __builtin_memcpy(&f, &x, 4);
    return f;
  }
  bfloat& operator+=(float o) { return *this = bfloat(float(*this) + o); }
  bfloat& operator-=(float o) { return *this = bfloat(float(*this) - o); }
  bfloat& operator*=(float o) { return *this = bfloat(float(*this) * o); }
  bfloat& operator/=(float o) { return *this = bfloat(float(*this) / o); }
};
inline bfloat operator+(bfloat a, bfloat b) { return bfloat(float(a) + float(b)); }
inline bfloat operator-(bfloat a, bfloat b) { return bfloat(float(a) - float(b)); }
inline bfloat operator*(bfloat a, bfloat b) { return bfloat(float(a) * float(b)); }
inline bfloat operator/(bfloat a, bfloat b) { return bfloat(float(a) / float(b)); }
inline bfloat operator-(bfloat a) { return bfloat(-float(a)); }

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
  operator result() const { return result(s_[I]...); }
  result operator()() const { return *this; }
  swz& operator=(const result& v) {
    int k = 0;
    ((s_[I] = v.s[k++]), ...);
    return *this;
  }
  swz& operator=(const swz& o) { return *this = result(o); }
  template <class U> swz& operator+=(const U& o) { return *this = result(*this) + o; }
  template <class U> swz& operator-=(const U& o) { return *this = result(*this) - o; }
  template <class U> swz& operator*=(const U& o) { return *this = result(*this) * o; }
  template <class U> swz& operator/=(const U& o) { return *this = result(*this) / o; }
#define BRONZE_SWZ_OP(op)                                                                          \
  template <class U, class = typename bronze_not_swz<U>::type>                                      \
  friend auto operator op(const swz& a, const U& b) -> decltype(result(a) op b) { return result(a) op b; } \
  template <class U, class = typename bronze_not_swz<U>::type>                                      \
  friend auto operator op(const U& b, const swz& a) -> decltype(b op result(a)) { return b op result(a); } \
  template <int S2, int... J>                                                                        \
  friend auto operator op(const swz& a, const swz<T, S2, J...>& b)                                   \
      -> decltype(result(a) op typename swz<T, S2, J...>::result(b)) {                               \
    return result(a) op typename swz<T, S2, J...>::result(b);                                        \
  }
  BRONZE_SWZ_OP(+) BRONZE_SWZ_OP(-) BRONZE_SWZ_OP(*) BRONZE_SWZ_OP(/)
  BRONZE_SWZ_OP(<) BRONZE_SWZ_OP(>) BRONZE_SWZ_OP(<=) BRONZE_SWZ_OP(>=) BRONZE_SWZ_OP(==) BRONZE_SWZ_OP(!=)
#undef BRONZE_SWZ_OP
  result operator-() const { return -result(*this); }
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

template <class T, int N> struct vec_base;
template <class T> struct vec_base<T, 2> {
  union { T s[2]; struct { T x, y; }; struct { T r, g; }; BRONZE_SWIZZLES2(2, x, y) BRONZE_SWIZZLES2(2, r, g) };
};
template <class T> struct alignas(4 * sizeof(T)) vec_base<T, 3> {  // padded to 4, as Metal
  union { T s[4]; struct { T x, y, z; }; struct { T r, g, b; }; BRONZE_SWIZZLES3(4, x, y, z) BRONZE_SWIZZLES3(4, r, g, b) };
};
template <class T> struct alignas(4 * sizeof(T)) vec_base<T, 4> {
  union { T s[4]; struct { T x, y, z, w; }; struct { T r, g, b, a; }; BRONZE_SWIZZLES4(4, x, y, z, w) BRONZE_SWIZZLES4(4, r, g, b, a) };
};

template <class T> inline void bronze_fill_(T* d, int& k, const T& v) { d[k++] = v; }
template <class T, class U> inline void bronze_fill_(T* d, int& k, const U& v) {
  if constexpr (is_vec_<U>::value) { for (int i = 0; i < vec_traits<U>::n; ++i) d[k++] = T(v.s[i]); }
  else if constexpr (vec_traits<U>::n > 1) { bronze_fill_(d, k, typename U::result(v)); }
  else { d[k++] = T(v); }
}

template <class T, int N>
struct vec : vec_base<T, N> {
  typedef T value_type;
  vec() { for (int i = 0; i < N; ++i) this->s[i] = T(0); }
  vec(T v) { for (int i = 0; i < N; ++i) this->s[i] = v; }  // NOLINT: Metal widens scalars
  vec(const vec& o) { for (int i = 0; i < N; ++i) this->s[i] = o.s[i]; }
  template <class A, class B, class... C>
  vec(const A& a, const B& b, const C&... c) {
    static_assert(vec_traits<A>::n + vec_traits<B>::n + (0 + ... + vec_traits<C>::n) == N,
                  "vector constructor: wrong number of components");
    int k = 0;
    bronze_fill_(this->s, k, a);
    bronze_fill_(this->s, k, b);
    (bronze_fill_(this->s, k, c), ...);
  }
  template <class U> explicit vec(const vec<U, N>& o) { for (int i = 0; i < N; ++i) this->s[i] = T(o.s[i]); }
  vec& operator=(const vec& o) { for (int i = 0; i < N; ++i) this->s[i] = o.s[i]; return *this; }
  T& operator[](int i) { return this->s[i]; }
  const T& operator[](int i) const { return this->s[i]; }

#define BRONZE_VEC_OP(op)                                                                          \
  friend vec operator op(vec a, const vec& b) { for (int i = 0; i < N; ++i) a.s[i] = a.s[i] op b.s[i]; return a; } \
  friend vec operator op(vec a, T b) { for (int i = 0; i < N; ++i) a.s[i] = a.s[i] op b; return a; }     \
  friend vec operator op(T a, vec b) { for (int i = 0; i < N; ++i) b.s[i] = a op b.s[i]; return b; }     \
  vec& operator op##=(const vec& b) { return *this = *this op b; }                                  \
  vec& operator op##=(T b) { return *this = *this op b; }
  BRONZE_VEC_OP(+) BRONZE_VEC_OP(-) BRONZE_VEC_OP(*) BRONZE_VEC_OP(/)
#undef BRONZE_VEC_OP
#define BRONZE_VEC_IOP(op)                                                                         \
  template <class U = T, class = decltype(U(1) op U(1))>                                            \
  friend vec operator op(vec a, const vec& b) { for (int i = 0; i < N; ++i) a.s[i] = a.s[i] op b.s[i]; return a; } \
  template <class U = T, class = decltype(U(1) op U(1))>                                            \
  friend vec operator op(vec a, T b) { for (int i = 0; i < N; ++i) a.s[i] = a.s[i] op b; return a; }
  BRONZE_VEC_IOP(%) BRONZE_VEC_IOP(&) BRONZE_VEC_IOP(|) BRONZE_VEC_IOP(^) BRONZE_VEC_IOP(<<) BRONZE_VEC_IOP(>>)
#undef BRONZE_VEC_IOP
  friend vec operator-(vec a) { for (int i = 0; i < N; ++i) a.s[i] = -a.s[i]; return a; }
#define BRONZE_VEC_CMP(op)                                                                         \
  friend vec<bool, N> operator op(const vec& a, const vec& b) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = a.s[i] op b.s[i]; return r; } \
  friend vec<bool, N> operator op(const vec& a, T b) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = a.s[i] op b; return r; }
  BRONZE_VEC_CMP(<) BRONZE_VEC_CMP(>) BRONZE_VEC_CMP(<=) BRONZE_VEC_CMP(>=) BRONZE_VEC_CMP(==) BRONZE_VEC_CMP(!=)
#undef BRONZE_VEC_CMP
};

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

// ------------------------------------------------------------------- math
namespace metal {
template <class T> using elem_t = typename vec_traits<T>::elem;

#define BRONZE_MATH1(name, f32, f64)                                                               \
  inline float name(float x) { return f32(x); }                                                     \
  inline half name(half x) { return (half)f32((float)x); }                                          \
  inline double name(double x) { return f64(x); }                                                  \
  inline float name(bfloat x) { return f32((float)x); }                                             \
  template <class T, int N> inline vec<T, N> name(vec<T, N> v) { for (int i = 0; i < N; ++i) v.s[i] = T(name(v.s[i])); return v; }
BRONZE_MATH1(sqrt, __builtin_sqrtf, __builtin_sqrt)
BRONZE_MATH1(exp, __builtin_expf, __builtin_exp)
BRONZE_MATH1(exp2, __builtin_exp2f, __builtin_exp2)
BRONZE_MATH1(log, __builtin_logf, __builtin_log)
BRONZE_MATH1(log2, __builtin_log2f, __builtin_log2)
BRONZE_MATH1(log10, __builtin_log10f, __builtin_log10)
BRONZE_MATH1(sin, __builtin_sinf, __builtin_sin)
BRONZE_MATH1(cos, __builtin_cosf, __builtin_cos)
BRONZE_MATH1(tan, __builtin_tanf, __builtin_tan)
BRONZE_MATH1(asin, __builtin_asinf, __builtin_asin)
BRONZE_MATH1(acos, __builtin_acosf, __builtin_acos)
BRONZE_MATH1(atan, __builtin_atanf, __builtin_atan)
BRONZE_MATH1(sinh, __builtin_sinhf, __builtin_sinh)
BRONZE_MATH1(cosh, __builtin_coshf, __builtin_cosh)
BRONZE_MATH1(tanh, __builtin_tanhf, __builtin_tanh)
BRONZE_MATH1(floor, __builtin_floorf, __builtin_floor)
BRONZE_MATH1(ceil, __builtin_ceilf, __builtin_ceil)
BRONZE_MATH1(round, __builtin_roundf, __builtin_round)
BRONZE_MATH1(rint, __builtin_rintf, __builtin_rint)
BRONZE_MATH1(trunc, __builtin_truncf, __builtin_trunc)
BRONZE_MATH1(erf, __builtin_erff, __builtin_erf)
BRONZE_MATH1(fabs, __builtin_fabsf, __builtin_fabs)
#undef BRONZE_MATH1
inline float rsqrt(float x) { return 1.0f / __builtin_sqrtf(x); }
inline half rsqrt(half x) { return (half)(1.0f / __builtin_sqrtf((float)x)); }
inline float rsqrt(bfloat x) { return 1.0f / __builtin_sqrtf((float)x); }
template <class T, int N> inline vec<T, N> rsqrt(vec<T, N> v) { for (int i = 0; i < N; ++i) v.s[i] = T(rsqrt(v.s[i])); return v; }
template <class T> inline T fract(T x) { return x - floor(x); }
template <class T> inline T sign(T x) { return T((elem_t<T>(0) < x) - (x < elem_t<T>(0))); }
inline float sign(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : x; }

template <class T> inline T abs(T x) { return x < T(0) ? T(-x) : x; }
template <class T, int N> inline vec<T, N> abs(vec<T, N> v) { for (int i = 0; i < N; ++i) v.s[i] = abs(v.s[i]); return v; }
template <class T> inline T max(T a, T b) { return a < b ? b : a; }
template <class T> inline T min(T a, T b) { return b < a ? b : a; }
inline float max(float a, float b) { return __builtin_fmaxf(a, b); }
inline float min(float a, float b) { return __builtin_fminf(a, b); }
template <class T, int N> inline vec<T, N> max(vec<T, N> a, const vec<T, N>& b) { for (int i = 0; i < N; ++i) a.s[i] = max(a.s[i], b.s[i]); return a; }
template <class T, int N> inline vec<T, N> min(vec<T, N> a, const vec<T, N>& b) { for (int i = 0; i < N; ++i) a.s[i] = min(a.s[i], b.s[i]); return a; }
template <class T, int N> inline vec<T, N> max(vec<T, N> a, T b) { return max(a, vec<T, N>(b)); }
template <class T, int N> inline vec<T, N> min(vec<T, N> a, T b) { return min(a, vec<T, N>(b)); }
template <class T> inline T fmax(T a, T b) { return max(a, b); }
template <class T> inline T fmin(T a, T b) { return min(a, b); }
template <class T, class L, class H> inline T clamp(T x, L lo, H hi) { return min(max(x, T(lo)), T(hi)); }
template <class T> inline T saturate(T x) { return clamp(x, T(0), T(1)); }
template <class T> inline T mix(T a, T b, elem_t<T> t) { return a + (b - a) * t; }
template <class T, int N> inline vec<T, N> mix(vec<T, N> a, vec<T, N> b, vec<T, N> t) { return a + (b - a) * t; }
template <class T> inline T step(T edge, T x) { return x < edge ? T(0) : T(1); }
inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline double fma(double a, double b, double c) { return __builtin_fma(a, b, c); }
inline half fma(half a, half b, half c) { return (half)__builtin_fmaf((float)a, (float)b, (float)c); }
template <class T, int N> inline vec<T, N> fma(vec<T, N> a, vec<T, N> b, vec<T, N> c) { for (int i = 0; i < N; ++i) a.s[i] = fma(a.s[i], b.s[i], c.s[i]); return a; }
inline float pow(float a, float b) { return __builtin_powf(a, b); }
inline half pow(half a, half b) { return (half)__builtin_powf((float)a, (float)b); }
inline double pow(double a, double b) { return __builtin_pow(a, b); }
template <class T, int N> inline vec<T, N> pow(vec<T, N> a, vec<T, N> b) { for (int i = 0; i < N; ++i) a.s[i] = pow(a.s[i], b.s[i]); return a; }
inline float powr(float a, float b) { return __builtin_powf(a, b); }
inline float atan2(float y, float x) { return __builtin_atan2f(y, x); }
inline float fmod(float a, float b) { return __builtin_fmodf(a, b); }
inline float copysign(float a, float b) { return __builtin_copysignf(a, b); }
inline float divide(float a, float b) { return a / b; }
template <class T> inline T sincos(T x, T& c) { c = cos(x); return sin(x); }
template <class T> inline T select(T a, T b, bool c) { return c ? b : a; }
template <class T, int N> inline vec<T, N> select(vec<T, N> a, vec<T, N> b, vec<bool, N> c) { for (int i = 0; i < N; ++i) a.s[i] = c.s[i] ? b.s[i] : a.s[i]; return a; }
template <class T> inline bool isnan(T x) { return x != x; }
template <class T> inline bool isinf(T x) { return x == T(__builtin_inff()) || x == T(-__builtin_inff()); }
template <class T> inline bool isfinite(T x) { return !isnan(x) && !isinf(x); }
template <class T> inline bool signbit(T x) { return __builtin_signbit((double)x); }
template <class T, int N> inline vec<bool, N> isnan(vec<T, N> v) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = isnan(v.s[i]); return r; }
template <class T, int N> inline vec<bool, N> isinf(vec<T, N> v) { vec<bool, N> r; for (int i = 0; i < N; ++i) r.s[i] = isinf(v.s[i]); return r; }
template <int N> inline bool all(vec<bool, N> v) { for (int i = 0; i < N; ++i) if (!v.s[i]) return false; return true; }
template <int N> inline bool any(vec<bool, N> v) { for (int i = 0; i < N; ++i) if (v.s[i]) return true; return false; }
inline bool all(bool b) { return b; }
inline bool any(bool b) { return b; }
template <class T, int N> inline T dot(const vec<T, N>& a, const vec<T, N>& b) { T r = T(0); for (int i = 0; i < N; ++i) r += a.s[i] * b.s[i]; return r; }
template <class T, int N> inline T length(const vec<T, N>& a) { return T(sqrt(dot(a, a))); }
template <class T, int N> inline T length_squared(const vec<T, N>& a) { return dot(a, a); }
template <class T, int N> inline T distance(const vec<T, N>& a, const vec<T, N>& b) { return length(a - b); }
template <class T, int N> inline vec<T, N> normalize(const vec<T, N>& a) { return a * T(rsqrt(dot(a, a))); }
template <class T> inline vec<T, 3> cross(const vec<T, 3>& a, const vec<T, 3>& b) {
  return vec<T, 3>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
template <class T> inline T precise_divide(T a, T b) { return a / b; }
template <class To, class From> inline To as_type(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs types of one size");
  To t;
  __builtin_memcpy(&t, &f, sizeof(To));
  return t;
}
template <class T> inline T popcount(T x) { return T(__builtin_popcountll((unsigned long long)x)); }
inline uint clz(uint x) { return x ? __builtin_clz(x) : 32; }
inline uint ctz(uint x) { return x ? __builtin_ctz(x) : 32; }
template <class T> inline T mulhi(T a, T b) { return T(((long long)a * (long long)b) >> (8 * sizeof(T))); }

// numeric_limits for the types kernels use as reduction identities.
template <class T> struct numeric_limits;
template <> struct numeric_limits<float> {
  static float max() { return 3.402823466e+38f; } static float lowest() { return -3.402823466e+38f; }
  static float min() { return 1.175494351e-38f; } static float infinity() { return __builtin_inff(); }
  static float epsilon() { return 1.192092896e-07f; } static float quiet_NaN() { return __builtin_nanf(""); }
};
template <> struct numeric_limits<half> {
  static half max() { return (half)65504.0f; } static half lowest() { return (half)-65504.0f; }
  static half infinity() { return (half)__builtin_inff(); } static half epsilon() { return (half)0.0009765625f; }
};
template <> struct numeric_limits<int> { static int max() { return 2147483647; } static int lowest() { return -2147483647 - 1; } static int min() { return -2147483647 - 1; } };
template <> struct numeric_limits<uint> { static uint max() { return 4294967295u; } static uint lowest() { return 0; } static uint min() { return 0; } };
namespace fast { using namespace metal; }
namespace precise { using namespace metal; }
}  // namespace metal
namespace fast = metal::fast;
namespace precise = metal::precise;

#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define FLT_MAX 3.402823466e+38f
#define HALF_MAX ((half)65504.0f)
#define M_PI_F 3.14159265358979323846f
#define M_E_F 2.71828182845904523536f
#define M_LN2_F 0.69314718055994530942f
#define M_SQRT2_F 1.41421356237309504880f
#define M_PI_H ((half)3.14159265358979323846f)

// -------------------------------------------------------------- atomics
enum memory_order { memory_order_relaxed };
template <class T> struct bronze_atomic { T v; };
typedef bronze_atomic<int> atomic_int;
typedef bronze_atomic<uint> atomic_uint;
typedef bronze_atomic<float> atomic_float;
typedef bronze_atomic<bool> atomic_bool;
namespace metal {
template <class T> using atomic = bronze_atomic<T>;
}

// The generic __atomic builtins work for float as well as the integers.
template <class T> inline T atomic_load_explicit(bronze_atomic<T>* a, memory_order) {
  T v;
  __atomic_load(&a->v, &v, __ATOMIC_RELAXED);
  return v;
}
template <class T, class U> inline void atomic_store_explicit(bronze_atomic<T>* a, U x, memory_order) {
  T v = T(x);
  __atomic_store(&a->v, &v, __ATOMIC_RELAXED);
}
template <class T, class U> inline T atomic_exchange_explicit(bronze_atomic<T>* a, U x, memory_order) {
  T v = T(x), old;
  __atomic_exchange(&a->v, &v, &old, __ATOMIC_RELAXED);
  return old;
}
template <class T, class U>
inline bool atomic_compare_exchange_weak_explicit(bronze_atomic<T>* a, T* expected, U desired, memory_order, memory_order) {
  T d = T(desired);
  return __atomic_compare_exchange(&a->v, expected, &d, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
// Read-modify-write as a compare-exchange loop on any T; f(old) gives the new value.
template <class T, class F> inline T bronze_atomic_rmw(bronze_atomic<T>* a, F f) {
  T old = atomic_load_explicit(a, memory_order_relaxed);
  T next = f(old);
  while (!__atomic_compare_exchange(&a->v, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) next = f(old);
  return old;
}
template <class T, class U> inline T atomic_fetch_add_explicit(bronze_atomic<T>* a, U x, memory_order) {
  if constexpr (T(0.5) != T(0)) return bronze_atomic_rmw(a, [&](T o) { return T(o + T(x)); });
  else return __atomic_fetch_add(&a->v, T(x), __ATOMIC_RELAXED);
}
template <class T, class U> inline T atomic_fetch_sub_explicit(bronze_atomic<T>* a, U x, memory_order) {
  if constexpr (T(0.5) != T(0)) return bronze_atomic_rmw(a, [&](T o) { return T(o - T(x)); });
  else return __atomic_fetch_sub(&a->v, T(x), __ATOMIC_RELAXED);
}
template <class T, class U> inline T atomic_fetch_max_explicit(bronze_atomic<T>* a, U x, memory_order) {
  return bronze_atomic_rmw(a, [&](T o) { return o < T(x) ? T(x) : o; });
}
template <class T, class U> inline T atomic_fetch_min_explicit(bronze_atomic<T>* a, U x, memory_order) {
  return bronze_atomic_rmw(a, [&](T o) { return T(x) < o ? T(x) : o; });
}
template <class T, class U> inline T atomic_fetch_and_explicit(bronze_atomic<T>* a, U x, memory_order) { return __atomic_fetch_and(&a->v, T(x), __ATOMIC_RELAXED); }
template <class T, class U> inline T atomic_fetch_or_explicit(bronze_atomic<T>* a, U x, memory_order) { return __atomic_fetch_or(&a->v, T(x), __ATOMIC_RELAXED); }
template <class T, class U> inline T atomic_fetch_xor_explicit(bronze_atomic<T>* a, U x, memory_order) { return __atomic_fetch_xor(&a->v, T(x), __ATOMIC_RELAXED); }

#include "bronze_metal_dispatch.h"
using namespace metal;
