// The concept of the dtype layer: which types a K/V row or weight row may be stored in.
#pragma once

#include <concepts>

#include "mnemo/dtype/types.hpp"

namespace mnemo::dtype {

/// A storage element of a row: f32 (`float`), f16, bf16, block_q8_0 or block_q4_0.
/// Quantised types are whole blocks, so a row of n values holds n / block_size of them.
/// Adding a type means adding its element_traits, its kernels for every ISA and its
/// entry in the tolerance table of tests/dtype; the concept is closed on purpose.
template <class E>
concept kv_element = std::same_as<E, float> || std::same_as<E, f16> || std::same_as<E, bf16> ||
    std::same_as<E, block_q8_0> || std::same_as<E, block_q4_0>;

static_assert(kv_element<float>);
static_assert(kv_element<f16>);
static_assert(kv_element<bf16>);
static_assert(kv_element<block_q8_0>);
static_assert(kv_element<block_q4_0>);
static_assert(!kv_element<double> && !kv_element<const float> && !kv_element<std::uint16_t>);

}  // namespace mnemo::dtype
