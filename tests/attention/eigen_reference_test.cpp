// The attention kernel and mnemo's own reference against an independent
// double-precision reference written in Eigen: softmax(scale * K q) over the kept
// cells, times V, per token and head, with the mask written out here from the
// inequalities of docs/attention.md (causality; standard, chunked and symmetric
// windows), never from attention::keeps(). A disagreement in the mask or the
// softmax shows even where the kernel and mnemo's reference share a mistake.
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <gtest/gtest.h>

#include "mnemo/attention/attend.hpp"
#include "mnemo/attention/reference.hpp"

namespace {

using namespace mnemo;
using matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using vector = Eigen::VectorXd;

/// The window rule of docs/attention.md: whether a query at q keeps a key at k.
bool kept(const attention::params& p, pos_t k, pos_t q) {
  if (p.causal && k > q) return false;
  switch (p.window) {
    case attention::window_kind::none: return true;
    case attention::window_kind::standard: return q - k < p.n_swa;
    case attention::window_kind::chunked: return k >= q / p.n_swa * p.n_swa;
    case attention::window_kind::symmetric: return std::abs(q - k) <= p.n_swa / 2;
  }
  return false;
}

/// One call: n_cells cells of one sequence at positions 0.. in one f32 stream.
struct scenario {
  attention::shape sh;
  attention::params p;
  std::size_t n_cells = 0;
  std::vector<float> k, v, q;  // [n_cells, n_head_kv, d_k], [.., d_v], [n_tokens, n_head, d_k]
  std::vector<pos_t> cell_pos, token_pos;
  std::vector<seq_id> token_seq;

  explicit scenario(std::uint32_t seed) {
    std::mt19937 rng(seed);
    auto pick = [&](std::initializer_list<std::size_t> xs) {
      return *(xs.begin() + std::uniform_int_distribution<std::size_t>(0, xs.size() - 1)(rng));
    };
    sh.d_k = sh.d_v = pick({16, 64, 80});
    sh.n_head_kv = pick({1, 2});
    sh.n_head = sh.n_head_kv * pick({1, 2, 4});
    n_cells = pick({1, 7, 33, 90});
    p.scale = 1.0f / std::sqrt(static_cast<float>(sh.d_k));
    p.window = static_cast<attention::window_kind>(pick({0, 1, 2, 3}));
    p.causal = p.window != attention::window_kind::symmetric || pick({0, 1}) == 1;
    p.n_swa = static_cast<pos_t>(pick({1, 4, 9, 32}));
    p.softcap = pick({0, 1}) == 1 ? 2.5f : 0.0f;
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    k.resize(n_cells * sh.n_head_kv * sh.d_k);
    v.resize(n_cells * sh.n_head_kv * sh.d_v);
    for (float& x : k) x = u(rng);
    for (float& x : v) x = u(rng);
    for (std::size_t c = 0; c < n_cells; ++c) cell_pos.push_back(static_cast<pos_t>(c));
    const std::size_t n_tokens = pick({1, 3, 6});
    q.resize(n_tokens * sh.n_head * sh.d_k);
    for (float& x : q) x = 2.0f * u(rng);
    for (std::size_t t = 0; t < n_tokens; ++t) {
      token_pos.push_back(
          static_cast<pos_t>(std::uniform_int_distribution<std::size_t>(0, n_cells - 1)(rng)));
      token_seq.push_back(0);
    }
  }

  std::string describe() const {
    std::ostringstream os;
    os << "d=" << sh.d_k << " heads=" << sh.n_head << "/" << sh.n_head_kv << " cells=" << n_cells
       << " tokens=" << token_pos.size() << " causal=" << p.causal
       << " window=" << attention::to_string(p.window) << " n_swa=" << p.n_swa
       << " softcap=" << p.softcap;
    return os.str();
  }

  /// out [n_tokens, n_head, d_v] by the Eigen reference.
  std::vector<float> eigen_attend() const {
    const std::size_t g = sh.group(), n_tok = token_pos.size();
    std::vector<float> out(n_tok * sh.n_head * sh.d_v, 0.0f);
    for (std::size_t h = 0; h < sh.n_head; ++h) {
      const std::size_t hk = h / g;
      matrix K(n_cells, sh.d_k), V(n_cells, sh.d_v);
      for (std::size_t c = 0; c < n_cells; ++c) {
        for (std::size_t i = 0; i < sh.d_k; ++i) K(c, i) = k[(c * sh.n_head_kv + hk) * sh.d_k + i];
        for (std::size_t i = 0; i < sh.d_v; ++i) V(c, i) = v[(c * sh.n_head_kv + hk) * sh.d_v + i];
      }
      for (std::size_t t = 0; t < n_tok; ++t) {
        vector qv(sh.d_k);
        for (std::size_t i = 0; i < sh.d_k; ++i) qv(i) = q[(t * sh.n_head + h) * sh.d_k + i];
        vector logits = static_cast<double>(p.scale) * (K * qv);
        if (p.softcap > 0.0f) {
          const double c = p.softcap;
          logits = (logits / c).array().tanh() * c;
        }
        vector w = vector::Zero(n_cells);
        double top = -INFINITY;
        for (std::size_t c = 0; c < n_cells; ++c)
          if (kept(p, cell_pos[c], token_pos[t])) top = std::max(top, logits(c));
        if (top == -INFINITY) continue;  // attends nothing: zeros
        for (std::size_t c = 0; c < n_cells; ++c)
          if (kept(p, cell_pos[c], token_pos[t])) w(c) = std::exp(logits(c) - top);
        const vector o = V.transpose() * (w / w.sum());
        for (std::size_t i = 0; i < sh.d_v; ++i)
          out[(t * sh.n_head + h) * sh.d_v + i] = static_cast<float>(o(i));
      }
    }
    return out;
  }
};

/// The index of the first |a - b| > tol, or -1.
std::ptrdiff_t first_difference(const std::vector<float>& a, const std::vector<float>& b,
                                float tol) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= tol)) return static_cast<std::ptrdiff_t>(i);
  return -1;
}

constexpr float k_tol = 5e-5f;  // outputs are convex combinations of values in [-1, 1]

TEST(EigenReference, KernelAndReferenceAgreeWithEigen) {
  attention::workspace ws;
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    const scenario sc(seed);
    attention::kv_segment seg;
    seg.k = sc.k.data();
    seg.v = sc.v.data();
    seg.k_stride = sc.sh.n_head_kv * sc.sh.d_k * sizeof(float);
    seg.v_stride = sc.sh.n_head_kv * sc.sh.d_v * sizeof(float);
    seg.pos = sc.cell_pos.data();
    seg.owners = nullptr;
    seg.n_cells = sc.n_cells;
    const attention::kv_view view{{&seg, 1}};
    const attention::query_batch qb{sc.q.data(), sc.token_pos.size(), sc.token_pos.data(),
                                    sc.token_seq.data(), nullptr};
    const std::vector<float> want = sc.eigen_attend();
    std::vector<float> got(want.size()), ref(want.size());
    ASSERT_TRUE(
        (attention::attend<simd::native, float, float>(sc.sh, sc.p, qb, {&view, 1}, got.data(), ws)
             .is_ok()))
        << "seed " << seed;
    ASSERT_TRUE((
        attention::reference_attend<float, float>(sc.sh, sc.p, qb, {&view, 1}, ref.data()).is_ok()))
        << "seed " << seed;
    for (const auto* which : {&got, &ref}) {
      const auto i = first_difference(want, *which, k_tol);
      ASSERT_EQ(i, -1) << (which == &got ? "kernel" : "mnemo reference") << ", seed " << seed
                       << " (" << sc.describe() << "): first difference at " << i << ": Eigen "
                       << want[static_cast<std::size_t>(i)] << ", got "
                       << (*which)[static_cast<std::size_t>(i)];
    }
  }
}

}  // namespace
