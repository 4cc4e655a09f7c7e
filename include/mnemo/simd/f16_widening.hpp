// What widening f16 to f32 costs on the running CPU: a property of the core, which the
// AVX2 attention decode chooses its read order and register tiles by
// (docs/attention.md, "ISAs").
//
// On Zen 1 and Zen+ (simd::is_zen1) `vcvtph2ps ymm` takes about three cycles per eight
// values, two of them on the FMA pipes (bench_machine's BM_f16_fma_in_l1), so a decode
// widens each K and V vector once for as many query rows as the registers hold and
// goes head by head. Where the widening runs beside the FMAs (measured: a Zen 4 core
// running the AVX2 build), tiles with more independent FMA chains per widened vector
// win instead. Detected per CPU at first use; a host or a test can set it.
//
//   simd::set_f16_widening(simd::f16_widening::costly);
#pragma once

#include <cstdint>

#include "mnemo/base/process_setting.hpp"
#include "mnemo/simd/cpu.hpp"

namespace mnemo::simd {

/// Whether widening f16 takes FMA-pipe cycles (costly) or not (cheap).
enum class f16_widening : std::uint8_t { cheap, costly };

/// costly on Zen 1 and Zen+, cheap elsewhere.
inline f16_widening detect_f16_widening() noexcept {
  return is_zen1() ? f16_widening::costly : f16_widening::cheap;
}

namespace detail {
inline process_setting<f16_widening>& f16_widening_setting() noexcept {
  static process_setting<f16_widening> w{detect_f16_widening()};
  return w;
}
}  // namespace detail

/// The cost the kernels assume now (read once per call by each kernel).
inline f16_widening current_f16_widening() noexcept { return detail::f16_widening_setting().get(); }

/// Sets the cost for calls that start afterwards (calls running keep theirs).
inline void set_f16_widening(f16_widening w) noexcept { detail::f16_widening_setting().set(w); }

}  // namespace mnemo::simd
