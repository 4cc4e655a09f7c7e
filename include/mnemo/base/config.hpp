// Compiler, architecture and build-configuration detection. No intrinsics here.
#pragma once

#include <cstddef>

#if defined(__x86_64__) || defined(_M_X64)
#define MNEMO_ARCH_X86_64 1
#elif defined(__aarch64__) || defined(_M_ARM64)
#define MNEMO_ARCH_AARCH64 1
#endif

#if defined(__clang__)
#define MNEMO_COMPILER_CLANG 1
#elif defined(__GNUC__)
#define MNEMO_COMPILER_GCC 1
#endif

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define MNEMO_HAS_EXCEPTIONS 1
#else
#define MNEMO_HAS_EXCEPTIONS 0
#endif

#if defined(_OPENMP)
#define MNEMO_HAS_OPENMP 1
#else
#define MNEMO_HAS_OPENMP 0
#endif

#if defined(__GNUC__)
#define MNEMO_INLINE inline __attribute__((always_inline))
#define MNEMO_NOINLINE __attribute__((noinline))
#define MNEMO_RESTRICT __restrict__
#define MNEMO_LIKELY(x) __builtin_expect(!!(x), 1)
#define MNEMO_PRINTF_FORMAT(fmt, args) __attribute__((format(printf, fmt, args)))
#define MNEMO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define MNEMO_INLINE inline
#define MNEMO_NOINLINE
#define MNEMO_RESTRICT
#define MNEMO_LIKELY(x) (x)
#define MNEMO_PRINTF_FORMAT(fmt, args)
#define MNEMO_UNLIKELY(x) (x)
#endif

namespace mnemo {
/// Alignment of every owning buffer: one cache line, and a full AVX-512 vector.
inline constexpr std::size_t k_buffer_alignment = 64;
}  // namespace mnemo
