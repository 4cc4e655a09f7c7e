// From a run-time storage type to compiled code: visit(t, fn) calls fn with a
// type_tag<E> for the element type E that `t` names. Weights and file formats carry
// their type at run time; the kernels are templates over E.
#pragma once

#include <utility>

#include "mnemo/base/assert.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/dtype/types.hpp"

namespace mnemo::dtype {

template <class E>
struct type_tag {
  using type = E;
};

/// fn(type_tag<E>{}) for the E of `t` among the K/V types (f32, f16, bf16, q8_0, q4_0).
/// Every branch must return the same type. The weight-only types have their own
/// products (model/matmul.hpp) and decoders (dtype/weight_decode.hpp).
/// @pre is_kv_type(t) (checked at the API boundary that read `t`).
template <class Fn>
decltype(auto) visit(element_type t, Fn&& fn) {
  switch (t) {
    case element_type::f16: return std::forward<Fn>(fn)(type_tag<f16>{});
    case element_type::bf16: return std::forward<Fn>(fn)(type_tag<bf16>{});
    case element_type::q8_0: return std::forward<Fn>(fn)(type_tag<block_q8_0>{});
    case element_type::q4_0: return std::forward<Fn>(fn)(type_tag<block_q4_0>{});
    case element_type::f32: break;
    default: MNEMO_DASSERT(is_kv_type(t)); break;
  }
  return std::forward<Fn>(fn)(type_tag<float>{});
}

}  // namespace mnemo::dtype
