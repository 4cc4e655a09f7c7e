// Run-time dispatch: pick the widest ISA that is compiled and supported by the CPU,
// once per process, and call a generic callable with that ISA's tag:
//
//   return simd::dispatch([&]<class Isa>(Isa) { return kernel<Isa>(args...); });
//
// Dispatch once per API call at the boundary, never per row (STYLE rule 7): the
// callable runs a whole operation with its ISA fixed at compile time.
#pragma once

#include <string_view>
#include <type_traits>
#include <utility>

#include "mnemo/base/assert.hpp"
#include "mnemo/base/config.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/isa.hpp"

namespace mnemo::simd {

/// A run-time value naming an ISA tag.
enum class isa_id : unsigned char { scalar, avx2, avx512, neon };

template <isa_tag Isa>
inline constexpr isa_id id_of = std::is_same_v<Isa, avx512> ? isa_id::avx512
                                : std::is_same_v<Isa, avx2> ? isa_id::avx2
                                : std::is_same_v<Isa, neon> ? isa_id::neon
                                                            : isa_id::scalar;

constexpr std::string_view isa_name(isa_id id) noexcept {
  switch (id) {
    case isa_id::avx512: return avx512::name;
    case isa_id::avx2: return avx2::name;
    case isa_id::neon: return neon::name;
    case isa_id::scalar: break;
  }
  return scalar::name;
}

namespace detail {
template <class... Isa>
isa_id best_isa(isa_list<Isa...>) noexcept {
  isa_id best = isa_id::scalar;
  bool found = false;
  // all_isas is ordered widest first: keep the first usable one.
  ((!found && is_compiled<Isa> && supported<Isa>() ? (best = id_of<Isa>, found = true) : false),
   ...);
  return best;
}

// Lazy per ISA: the callable is only instantiated for ISAs this build contains.
template <class F, class Isa>
constexpr bool same_result_as_scalar() noexcept {
  if constexpr (!is_compiled<Isa>) {
    return true;
  } else {
    return std::is_same_v<std::invoke_result_t<F&, Isa>, std::invoke_result_t<F&, scalar>>;
  }
}
template <class F, class... Isa>
constexpr bool same_result_for_all(isa_list<Isa...>) noexcept {
  return (same_result_as_scalar<F, Isa>() && ...);
}
}  // namespace detail

/// The widest compiled and supported ISA, probed on first use and cached.
inline isa_id best_isa() noexcept {
  static const isa_id id = detail::best_isa(all_isas{});
  return id;
}

/// Calls f(Isa{}) for the ISA named by id. An id this build does not contain runs
/// the scalar path.
/// @pre supported<Isa>() for that ISA (checked in debug builds).
template <class F>
decltype(auto) dispatch_to(isa_id id, F&& f) {
  static_assert(std::is_invocable_v<F&, scalar>,
                "simd::dispatch: the callable must accept an ISA tag, e.g. "
                "[&]<class Isa>(Isa) { ... } or [&](auto isa) { ... }");
  static_assert(detail::same_result_for_all<F>(all_isas{}),
                "simd::dispatch: the callable must return the same type for every ISA tag");
  switch (id) {
#if defined(MNEMO_ARCH_X86_64)
    case isa_id::avx512: MNEMO_DASSERT(supported<avx512>()); return f(avx512{});
    case isa_id::avx2: MNEMO_DASSERT(supported<avx2>()); return f(avx2{});
#elif defined(MNEMO_ARCH_AARCH64)
    case isa_id::neon: MNEMO_DASSERT(supported<neon>()); return f(neon{});
#endif
    default: break;
  }
  return f(scalar{});
}

/// Calls f(Isa{}) for the widest ISA this build contains and the CPU runs; with
/// MNEMO_FORCE_SCALAR (the scalar preset) always for scalar.
template <class F>
decltype(auto) dispatch(F&& f) {
#if defined(MNEMO_FORCE_SCALAR)
  return dispatch_to(isa_id::scalar, std::forward<F>(f));
#else
  return dispatch_to(best_isa(), std::forward<F>(f));
#endif
}

}  // namespace mnemo::simd
