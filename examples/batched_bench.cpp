// batched_bench: prompt-processing and generation speed for many sequences at once,
// the table of llama.cpp's llama-batched-bench, so the two can be read side by side.
//
//   batched_bench MODEL.gguf [-npp 128,512] [-ntg 128] [-npl 1,2,4,8,16]
//                 [--memory full|split] [--kv f32|f16|bf16|q8_0|q4_0] [--threads N]
//                 [--ctx N] [--ubatch N] [--batch N] [--prefetch l1|l2]
//                 [--output-format md|jsonl] [--api engine|template]
//
// For every (PP, TG, B): clear the memory; decode B sequences of PP tokens (position-
// major, in batches of at most --batch tokens, logits only for each sequence's last
// token); then TG steps that each decode one token per sequence. Tokens are fixed
// pseudo-random ids: this measures speed, not text. N_KV = B * (PP + TG).
// MODEL.gguf is any attention architecture (llama, qwen2, qwen3, phi3, gemma2, gemma3).
// --ctx 0 (the default) sizes the memory for the largest case: max(B) * max(PP + TG).
// --api engine (the default) decodes through mnemo::engine, the run-time handle;
// --api template through the same context<attention_decoder, Memory> instantiated here
// (with_template_context), which measures what the handle costs.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/measured_limits.hpp"
#include "common/roofline.hpp"

#include "mnemo/base/parallel.hpp"
#include "mnemo/base/rng.hpp"
#include "mnemo/context.hpp"
#include "mnemo/engine/engine.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/stream/split_stream.hpp"
#include "mnemo/model/architectures.hpp"
#include "mnemo/simd/isa.hpp"

namespace {

using namespace mnemo;
using clock_type = std::chrono::steady_clock;

struct options {
  std::string model;
  std::vector<std::uint32_t> npp{128, 512}, ntg{128}, npl{1, 2, 4, 8, 16};
  std::string format = "md";
  std::string api = "engine";          // engine | template
  mnemo_examples::runtime_options rt;  // memory: full | split
};

int usage() {
  std::fprintf(stderr,
               "usage: batched_bench MODEL.gguf [-npp 128,512] [-ntg 128] [-npl 1,2,4,8,16]\n"
               "%s"
               "       [--output-format md|jsonl] [--api engine|template]\n",
               mnemo_examples::k_runtime_usage);
  return 2;
}

bool parse_args(int argc, char** argv, options& o) {
  mnemo_examples::arg_cursor args("batched_bench", argc, argv);
  std::vector<std::string> pos;
  o.rt.memory = "full";
  while (!args.done()) {
    switch (mnemo_examples::parse_runtime_option(args, o.rt)) {
      case mnemo_examples::option_parse::taken: continue;
      case mnemo_examples::option_parse::bad: return false;
      case mnemo_examples::option_parse::not_mine: break;
    }
    const std::string_view a = args.take();
    if (a == "-npp" || a == "-ntg" || a == "-npl") {
      const char* v = args.value(a);
      auto& list = a == "-npp" ? o.npp : a == "-ntg" ? o.ntg : o.npl;
      const std::uint32_t lo = a == "-ntg" ? 0 : 1;
      const std::uint32_t hi = a == "-npl" ? static_cast<std::uint32_t>(k_max_seq) : 1u << 20;
      if (v == nullptr || !mnemo_examples::parse_u32_list(v, list, lo, hi))
        return args.complain("expected a comma-separated list of counts, got", v ? v : ""), false;
    } else if (a == "--api") {
      const char* v = args.value(a);
      if (v == nullptr || (std::string_view(v) != "engine" && std::string_view(v) != "template"))
        return args.complain("--api takes engine or template, not", v ? v : ""), false;
      o.api = v;
    } else if (a == "--output-format") {
      const char* v = args.value(a);
      if (v == nullptr || (std::string_view(v) != "md" && std::string_view(v) != "jsonl"))
        return args.complain("--output-format takes md or jsonl, not", v ? v : ""), false;
      o.format = v;
    } else if (a.size() > 1 && a[0] == '-') {
      return args.complain("unknown option", a), false;
    } else {
      pos.emplace_back(a);
    }
  }
  if (o.rt.policy != "none") {  // a bounded memory under the policy, through the engine
    if (o.api != "engine") return args.complain("--policy needs --api engine, not", o.api), false;
    if (o.rt.memory != "full" && o.rt.memory != "bounded")  // full: the default here
      return args.complain("--policy runs memory bounded, not", o.rt.memory), false;
    o.rt.memory = "bounded";
  } else if (o.rt.memory != "full" && o.rt.memory != "split") {
    return args.complain("--memory takes full or split here, not", o.rt.memory), false;
  }
  if (pos.size() != 1) return false;
  o.model = pos[0];
  return true;
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// What the roofline fractions compare with: the model's sizes and the machine's
/// limits for the thread count used.
struct roofline_inputs {
  mnemo_examples::roofline_model model;
  double read_gbps = 0, fma_gflops = 0;
  std::uint32_t n_ubatch = 0;

  mnemo_examples::roofline_cost cost(const batch& b) const {
    return mnemo_examples::batch_cost(model, b, n_ubatch, read_gbps, fma_gflops);
  }
};

void add_to(mnemo_examples::roofline_cost& total, const mnemo_examples::roofline_cost& c) {
  total.bytes += c.bytes;
  total.flops += c.flops;
  total.seconds += c.seconds;
}

struct row {
  std::uint32_t pp, tg, pl;
  std::uint64_t n_kv;
  double t_pp, t_tg;
  mnemo_examples::roofline_cost roof_pp, roof_tg;
  double regions_tg = 0, team_jobs_tg = 0;  // per generation step (parallel_stats)
};

/// The fraction of the roofline a phase of `seconds` reached; 0 when unknown.
double roofline_fraction(const mnemo_examples::roofline_cost& c, double seconds) {
  return seconds > 0 ? c.seconds / seconds : 0.0;
}

void print_row(const options& o, std::uint32_t n_ctx, const row& r) {
  const double s_pp = r.t_pp > 0 ? double(r.pl) * r.pp / r.t_pp : 0.0;
  const double s_tg = r.t_tg > 0 ? double(r.pl) * r.tg / r.t_tg : 0.0;
  const double t = r.t_pp + r.t_tg;
  const double s = t > 0 ? double(r.n_kv) / t : 0.0;
  const double f_pp = roofline_fraction(r.roof_pp, r.t_pp);
  const double f_tg = roofline_fraction(r.roof_tg, r.t_tg);
  if (o.format == "md") {
    std::printf("|%6u |%7u |%5u |%7" PRIu64
                " |%9.3f |%9.2f |%9.3f |%9.2f |%9.3f |%9.2f |%6.3f |%6.3f |\n",
                r.pp, r.tg, r.pl, r.n_kv, r.t_pp, s_pp, r.t_tg, s_tg, t, s, f_pp, f_tg);
  } else {
    std::printf(
        "{\"memory\": \"%s\", \"kv\": \"%s\", \"n_kv_max\": %u, \"n_batch\": %u, \"n_ubatch\": "
        "%u, \"n_threads\": %d, \"pp\": %u, \"tg\": %u, \"pl\": %u, \"n_kv\": %" PRIu64
        ", \"t_pp\": %f, \"speed_pp\": %f, \"t_tg\": %f, \"speed_tg\": %f, \"t\": %f, \"speed\": "
        "%f, \"bytes_pp\": %.0f, \"flops_pp\": %.0f, \"roof_pp\": %f, \"frac_pp\": %f, "
        "\"bytes_tg\": %.0f, \"flops_tg\": %.0f, \"roof_tg\": %f, \"frac_tg\": %f, "
        "\"regions_per_tg_step\": %.2f, \"team_jobs_per_tg_step\": %.2f}\n",
        o.rt.memory.c_str(), o.rt.kv.c_str(), n_ctx, o.rt.n_batch, o.rt.n_ubatch,
        o.rt.threads > 0 ? o.rt.threads : default_thread_count(), r.pp, r.tg, r.pl, r.n_kv, r.t_pp,
        s_pp, r.t_tg, s_tg, t, s, r.roof_pp.bytes, r.roof_pp.flops, r.roof_pp.seconds, f_pp,
        r.roof_tg.bytes, r.roof_tg.flops, r.roof_tg.seconds, f_tg, r.regions_tg, r.team_jobs_tg);
  }
  std::fflush(stdout);
}

/// Runs every (pp, tg, pl) case through one context.
template <class Context>
status run_cases(Context& ctx, const options& o, seq_id n_seq, std::uint32_t n_ctx,
                 std::uint32_t n_vocab, const roofline_inputs& roof) {
  const std::uint32_t per_seq =
      o.rt.memory == "split" ? n_ctx / static_cast<std::uint32_t>(n_seq) : n_ctx;
  splitmix64 rng{2026};
  batch b;
  b.reserve(std::min<std::uint32_t>(o.rt.n_batch, 1u << 16));

  // Warm-up: page in the weights, grow the buffers.
  for (pos_t p = 0; p < 16; ++p)
    b.add(static_cast<token_id>(rng.next() % n_vocab), p, {0}, p == 15);
  MNEMO_RETURN_IF_ERROR(ctx.decode(b));
  ctx.clear();

  for (std::uint32_t pp : o.npp)
    for (std::uint32_t tg : o.ntg)
      for (std::uint32_t pl : o.npl) {
        const std::uint64_t n_kv = std::uint64_t{pl} * (pp + tg);
        const bool fits = o.rt.memory == "split"
                              ? pl <= static_cast<std::uint32_t>(n_seq) && pp + tg <= per_seq
                              : n_kv <= n_ctx && pl <= static_cast<std::uint32_t>(n_seq);
        if (!fits) {
          std::fprintf(stderr,
                       "batched_bench: skipping pp %u tg %u pl %u: the memory is too small\n", pp,
                       tg, pl);
          continue;
        }
        ctx.clear();
        // Prompts: position-major, as llama-batched-bench adds them.
        // (the roofline of each batch is added up inside the timing: microseconds against
        // the milliseconds of a decode)
        mnemo_examples::roofline_cost roof_pp, roof_tg;
        const auto t0 = clock_type::now();
        b.clear();
        for (std::uint32_t i = 0; i < pp; ++i)
          for (std::uint32_t j = 0; j < pl; ++j) {
            const seq_id s = static_cast<seq_id>(j);
            b.add(static_cast<token_id>(rng.next() % n_vocab), static_cast<pos_t>(i), {s},
                  i + 1 == pp);
            if (b.size() == o.rt.n_batch) {
              add_to(roof_pp, roof.cost(b));
              MNEMO_RETURN_IF_ERROR(ctx.decode(b));
              b.clear();
            }
          }
        if (!b.empty()) {
          add_to(roof_pp, roof.cost(b));
          MNEMO_RETURN_IF_ERROR(ctx.decode(b));
        }
        const double t_pp = seconds_since(t0);

        const parallel_counts sync0 = parallel_stats();
        const auto t1 = clock_type::now();
        for (std::uint32_t step = 0; step < tg; ++step) {
          b.clear();
          for (std::uint32_t j = 0; j < pl; ++j)
            b.add(static_cast<token_id>((7 + 31 * step + j) % n_vocab),
                  static_cast<pos_t>(pp + step), {static_cast<seq_id>(j)}, true);
          add_to(roof_tg, roof.cost(b));
          MNEMO_RETURN_IF_ERROR(ctx.decode(b));
        }
        const double t_tg = seconds_since(t1);
        const parallel_counts sync1 = parallel_stats();
        const double steps = tg > 0 ? tg : 1;
        print_row(o, n_ctx,
                  {pp, tg, pl, n_kv, t_pp, t_tg, roof_pp, roof_tg,
                   static_cast<double>(sync1.regions - sync0.regions) / steps,
                   static_cast<double>(sync1.team_jobs - sync0.team_jobs) / steps});
      }
  return {};
}

/// --api template: the context<attention_decoder, Memory> the engine would pick for
/// --memory full|split and --kv, built here, and f(context&). The engine's own copy of
/// each is compiled in the mnemo::engine library.
template <class F>
status with_template_context(const model::attention_decoder& m, const options& o, seq_id n_seq,
                             std::uint32_t n_ctx, F&& f) {
  const engine_options eo = mnemo_examples::engine_options_of(o.rt, n_seq, n_ctx);
  auto run = [&]<class Memory>(result<Memory> mem) -> status {
    if (!mem.is_ok()) return mem.error();
    context_params p;
    p.n_ubatch = eo.n_ubatch;
    p.n_batch = eo.n_batch;
    p.n_seq_max = n_seq;
    p.n_threads = eo.n_threads;
    p.n_threads_batch = eo.n_threads_batch;
    using context_t = context<model::attention_decoder, Memory>;
    MNEMO_ASSIGN_OR_RETURN(context_t ctx, context_t::make(m, std::move(*mem), p));
    return f(ctx);
  };
  auto by_memory = [&]<class KE>() -> status {
    if (o.rt.memory == "split") {
      const std::size_t per_seq = (n_ctx + static_cast<std::size_t>(n_seq) - 1) / n_seq;
      return run(memory::split_stream<KE>::make(m.split_stream_config(per_seq, n_seq)));
    }
    return run(memory::full_cache<KE>::make(m.full_cache_config(n_ctx, n_seq)));
  };
  switch (eo.kv) {
    case kv_type::f32: return by_memory.template operator()<float>();
    case kv_type::f16: return by_memory.template operator()<dtype::f16>();
    case kv_type::bf16: return by_memory.template operator()<dtype::bf16>();
    case kv_type::q8_0: return by_memory.template operator()<dtype::block_q8_0>();
    case kv_type::q4_0: return by_memory.template operator()<dtype::block_q4_0>();
  }
  return make_status(status_code::invalid_argument, "unknown K/V type");
}

/// The roofline inputs of the model at `path` with K/V stored as o.rt.kv, on `threads`
/// threads. The file is mapped once more for its sizes only (no weights are read).
result<roofline_inputs> roofline_inputs_of(const options& o, int threads) {
  MNEMO_ASSIGN_OR_RETURN(const gguf::file f, gguf::file::open(o.model));
  MNEMO_ASSIGN_OR_RETURN(const std::string_view arch, f.get_string("general.architecture"));
  const model::decoder_recipe* recipe = model::find_recipe(arch);
  if (recipe == nullptr)
    return make_status(status_code::unsupported, "%s: '%.*s' is not an attention architecture",
                       o.model.c_str(), static_cast<int>(arch.size()), arch.data());
  MNEMO_ASSIGN_OR_RETURN(const model::decoder_hparams hp, model::read_decoder_hparams(f, *recipe));
  MNEMO_ASSIGN_OR_RETURN(const kv_type kv, parse_kv_type(o.rt.kv));
  dtype::element_type e = dtype::element_type::f16;
  switch (kv) {
    case kv_type::f32: e = dtype::element_type::f32; break;
    case kv_type::f16: e = dtype::element_type::f16; break;
    case kv_type::bf16: e = dtype::element_type::bf16; break;
    case kv_type::q8_0: e = dtype::element_type::q8_0; break;
    case kv_type::q4_0: e = dtype::element_type::q4_0; break;
  }
  roofline_inputs r;
  MNEMO_ASSIGN_OR_RETURN(r.model, mnemo_examples::roofline_model_of(f, hp, e));
  if (o.rt.policy != "none")  // a token reads at most evict_budget cells of a layer
    for (mnemo_examples::roofline_layer& l : r.model.layers)
      if (l.window == 0 || l.window > o.rt.evict_budget) l.window = o.rt.evict_budget;
  r.read_gbps = mnemo_bench::read_gbps_for(threads);
  r.fma_gflops = mnemo_bench::fma_gflops_for(threads);
  r.n_ubatch = std::min(o.rt.n_ubatch, o.rt.n_batch);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse_args(argc, argv, o)) return usage();
  mnemo_examples::apply_process_settings(o.rt);
  const std::uint32_t max_pl = *std::max_element(o.npl.begin(), o.npl.end());
  std::uint32_t max_len = 0;
  for (std::uint32_t pp : o.npp)
    for (std::uint32_t tg : o.ntg) max_len = std::max(max_len, pp + tg);
  std::uint32_t n_ctx = o.rt.n_ctx;
  if (n_ctx == 0) n_ctx = (max_pl * max_len + 255) / 256 * 256;
  const int threads = o.rt.threads > 0 ? o.rt.threads : default_thread_count();
  // The machine's limits first, before the model is paged in and nothing else runs.
  const mnemo_bench::machine_limits_t& limits = mnemo_bench::machine_limits();
  const result<roofline_inputs> roof = roofline_inputs_of(o, threads);
  if (!roof.is_ok()) {
    std::fprintf(stderr, "batched_bench: %s\n", roof.error().to_string().c_str());
    return 1;
  }

  if (o.format == "md") {
    std::printf(
        "batched_bench: n_kv_max = %u, n_batch = %u, n_ubatch = %u, memory = %s, kv = %s, "
        "n_threads = %d, isa = %s, prefetch = %s\n",
        n_ctx, o.rt.n_batch, o.rt.n_ubatch, o.rt.memory.c_str(), o.rt.kv.c_str(), threads,
        simd::native::name.data(), mnemo_examples::prefetch_target_name());
    std::printf(
        "roofline: read %.1f GB/s, FMA %.1f GFLOP/s for %d threads (%s); F_PP, F_TG = the "
        "phase's time at those limits / its measured time\n\n",
        roof->read_gbps, roof->fma_gflops, threads,
        limits.read_from_env && limits.fma_from_env ? "MNEMO_READ_GBPS, MNEMO_FMA_GFLOPS"
                                                    : "measured at start");
    std::printf(
        "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s "
        "|    S t/s |  F_PP |  F_TG |\n"
        "|-------|--------|------|--------|----------|----------|----------|----------|----------"
        "|----------|-------|-------|\n");
  }
  const auto n_seq = static_cast<seq_id>(max_pl);
  status st;
  if (o.api == "template") {
    auto m = model::open_attention_decoder(o.model, mnemo_examples::file_access(o.rt));
    st = !m.is_ok() ? m.error() : with_template_context(*m, o, n_seq, n_ctx, [&](auto& ctx) {
      return run_cases(ctx, o, n_seq, n_ctx, m->n_vocab(), *roof);
    });
  } else {
    auto e = engine::open(o.model, mnemo_examples::engine_options_of(o.rt, n_seq, n_ctx));
    st = e.is_ok() ? run_cases(*e, o, n_seq, n_ctx, e->n_vocab(), *roof) : e.error();
  }
  if (!st) {
    std::fprintf(stderr, "batched_bench: %s\n", st.to_string().c_str());
    return 1;
  }
  return 0;
}
