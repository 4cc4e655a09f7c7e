// The vector operation set every ISA provides: simd::ops<Isa>. The primary template
// only exists to say what went wrong; each ISA header specialises it.
#pragma once

#include "mnemo/simd/isa.hpp"

namespace mnemo::simd {

template <class Isa>
struct ops {
  static_assert(isa_tag<Isa>,
                "simd::ops<Isa>: Isa must be one of simd::scalar, avx2, avx512, neon");
  static_assert(!isa_tag<Isa> || is_compiled<Isa>,
                "simd::ops<Isa>: this ISA is not compiled for the target architecture; "
                "check simd::is_compiled<Isa> before instantiating kernels for it");
};

}  // namespace mnemo::simd
