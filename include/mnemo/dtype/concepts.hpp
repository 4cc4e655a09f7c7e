// The concept of the dtype layer: which types a K/V row or weight row may be stored in.
#pragma once

#include <concepts>

#include "mnemo/dtype/types.hpp"
#include "mnemo/dtype/weight_blocks.hpp"

namespace mnemo::dtype {

/// A storage element of a row: f32 (`float`), f16, bf16, block_q8_0 or block_q4_0.
/// Quantised types are whole blocks, so a row of n values holds n / block_size of them.
/// Adding a type means adding its element_traits, its kernels for every ISA and its
/// entry in the tolerance table of tests/dtype; the concept is closed on purpose.
template <class E>
concept kv_element = std::same_as<E, float> || std::same_as<E, f16> || std::same_as<E, bf16> ||
    std::same_as<E, block_q8_0> || std::same_as<E, block_q4_0>;

/// A block of a weight-only quantised type (dtype/weight_blocks.hpp): the legacy q4_1,
/// q5_0, q5_1 and the k-quants q2_K .. q6_K. Only weight products and decoders read
/// them; K/V caches do not store them.
template <class E>
concept weight_block = std::same_as<E, block_q4_1> || std::same_as<E, block_q5_0> ||
    std::same_as<E, block_q5_1> || std::same_as<E, block_q2_K> || std::same_as<E, block_q3_K> ||
    std::same_as<E, block_q4_K> || std::same_as<E, block_q5_K> || std::same_as<E, block_q6_K>;

/// Any type a row may be stored in: a K/V element or a weight block.
template <class E>
concept stored_element = kv_element<E> || weight_block<E>;

static_assert(kv_element<float>);
static_assert(kv_element<f16>);
static_assert(kv_element<bf16>);
static_assert(kv_element<block_q8_0>);
static_assert(kv_element<block_q4_0>);
static_assert(weight_block<block_q4_K> && !kv_element<block_q4_K>);
static_assert(!kv_element<double> && !kv_element<const float> && !kv_element<std::uint16_t>);

}  // namespace mnemo::dtype
