// simd::vector_ops<O>: the operation set every simd::ops<Isa> specialisation provides.
// The reference meaning of each member is ops<scalar> (scalar.hpp); every ISA header
// ends with static_assert(vector_ops<ops<Isa>>) so the sets cannot drift apart.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

#include "mnemo/simd/isa.hpp"

namespace mnemo::simd {

template <class O>
concept vector_ops = isa_tag<typename O::isa> && std::copyable<typename O::vf> &&
                     std::same_as<std::remove_cv_t<decltype(O::lanes)>, std::size_t> &&
                     (O::lanes == O::isa::lanes_f32) &&
                     requires(typename O::vf v, float s, float* p, const float* cp,
                              std::uint16_t* hp, const std::uint16_t* chp, const std::uint32_t* cwp,
                              std::size_t n) {
  { O::zero() } -> std::same_as<typename O::vf>;
  { O::set1(s) } -> std::same_as<typename O::vf>;
  { O::load(cp) } -> std::same_as<typename O::vf>;
  { O::store(p, v) } -> std::same_as<void>;
  { O::load_partial(cp, n) } -> std::same_as<typename O::vf>;
  { O::store_partial(p, v, n) } -> std::same_as<void>;
  { O::add(v, v) } -> std::same_as<typename O::vf>;
  { O::sub(v, v) } -> std::same_as<typename O::vf>;
  { O::mul(v, v) } -> std::same_as<typename O::vf>;
  { O::fma(v, v, v) } -> std::same_as<typename O::vf>;
  { O::max(v, v) } -> std::same_as<typename O::vf>;
  { O::min(v, v) } -> std::same_as<typename O::vf>;
  { O::reduce_add(v) } -> std::same_as<float>;
  { O::reduce_max(v) } -> std::same_as<float>;
  { O::exp(v) } -> std::same_as<typename O::vf>;
  { O::transpose(&v) } -> std::same_as<void>;
  { O::load_f16(chp) } -> std::same_as<typename O::vf>;
  { O::store_f16(hp, v) } -> std::same_as<void>;
  { O::load_bf16(chp) } -> std::same_as<typename O::vf>;
  { O::store_bf16(hp, v) } -> std::same_as<void>;
  { O::load_bf16_pairs(cwp, v, v) } -> std::same_as<void>;
};

}  // namespace mnemo::simd
