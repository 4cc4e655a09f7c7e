// What every GGUF decoder does around its forward pass, written once: open a file into
// a model that owns it, bind tensors with their shapes checked, and allocate the f32
// activation buffers of a workspace.
//
//   static result<my_model> open(const std::string& path, gguf::access a = gguf::access::map) {
//     return open_model<my_model>(path, a);
//   }
//   const tensor_binder b(*file_, "llama");
//   MNEMO_ASSIGN_OR_RETURN(L.wq, b.matrix("blk.0.attn_q.weight", n_embd, n_head * d_k));
//   MNEMO_ASSIGN_OR_RETURN(L.attn_norm, b.norm("blk.0.attn_norm.weight", n_embd));
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/weight.hpp"
#include "mnemo/model/weight_tiles.hpp"

namespace mnemo::model {

/// Model::open for every model: gguf::file::open, then Model::load; a load error names
/// the path.
template <class Model>
result<Model> open_model(const std::string& path, gguf::access access) {
  MNEMO_ASSIGN_OR_RETURN(gguf::file f, gguf::file::open(path, access));
  auto m = Model::load(std::move(f));
  if (!m.is_ok()) return status(m.error()).with_context(path);
  return m;
}

/// Binds named tensors of one file with their shapes and types checked. `context`
/// (e.g. "llama") prefixes shape and type errors, not missing tensors; models that put
/// their name on every binding error give none and wrap the whole binding instead.
/// With a weight_tiles store, the matrices the products read get their tiles
/// there (weight_tiles.hpp); the store must live as long as the weights.
class tensor_binder {
 public:
  explicit tensor_binder(const gguf::file& f, std::string_view context = {},
                         weight_tiles* tiles = nullptr)
      : f_(&f), context_(context), tiles_(tiles) {
    if (tiles_ != nullptr) tiles_->reserve(tiles_bound(f.tensors()));
  }

  bool has(const std::string& name) const { return f_->find_tensor(name) != nullptr; }

  /// A matrix of ggml ne [n_in, n_out] that mul_mat reads (a view into the mapping,
  /// with its tiles attached).
  result<weight> matrix(const std::string& name, std::size_t n_in, std::size_t n_out) const {
    MNEMO_ASSIGN_OR_RETURN(weight w, rows(name, n_in, n_out));
    attach_tiles(w);
    return w;
  }

  /// A matrix of ggml ne [n_in, n_out] that only get_row reads (a view into the mapping).
  result<weight> rows(const std::string& name, std::size_t n_in, std::size_t n_out) const {
    MNEMO_ASSIGN_OR_RETURN(const gguf::tensor* t, f_->require_tensor(name));
    auto w = weight_from_gguf(*t, n_in, n_out);
    if (!w.is_ok() && !context_.empty()) return status(w.error()).with_context(context_);
    return w;
  }

  /// Gives w its tiles when this binder has a store (a rows() view that mul_mat reads
  /// after all, such as tied embeddings).
  void attach_tiles(weight& w) const {
    if (tiles_ != nullptr) tiles_->attach(w);
  }

  /// A tensor of ne [n_in, n_out] copied to f32, row after row ([n_out, n_in]).
  result<std::vector<float>> rows_f32(const std::string& name, std::size_t n_in,
                                      std::size_t n_out) const {
    MNEMO_ASSIGN_OR_RETURN(weight w, rows(name, n_in, n_out));
    std::vector<float> out(n_in * n_out);
    for (std::size_t r = 0; r < n_out; ++r) get_row<simd::scalar>(w, r, out.data() + r * n_in);
    return out;
  }

  /// A 1-D tensor [n] (a norm's weights) copied to f32.
  result<std::vector<float>> norm(const std::string& name, std::size_t n) const {
    return rows_f32(name, n, 1);
  }

 private:
  const gguf::file* f_;
  std::string_view context_;
  weight_tiles* tiles_;
};

/// Allocates each (buffer, float count) pair in order; the first failure is returned.
inline status allocate_buffers(
    std::initializer_list<std::pair<aligned_buffer<float>*, std::size_t>> buffers) {
  for (const auto& [buffer, count] : buffers) {
    MNEMO_ASSIGN_OR_RETURN(*buffer, aligned_buffer<float>::make(count));
  }
  return {};
}

}  // namespace mnemo::model
