// Compiles the regex subset llama.cpp's pre-tokenizers use into a regex_program:
// alternation, groups (capturing ones just group), (?: ) (?= ) (?! ) (?i: ) (?i),
// classes with ranges, negation, \s \S \d \D \w \W \p{L,N,P,S,M,Han} \P{..}, the escapes
// \r \n \t \v \f \0 \xHH \uHHHH, '.', '^', '$', \b \B, and the quantifiers ? * + {n}
// {n,} {n,m} (greedy or lazy). Errors are statuses, never aborts: a pattern is data.
//
// Limits that keep hostile patterns bounded: 4096 code points, nesting 64, counts up to
// 1024, 65536 instructions; a repeated group that can match empty is refused (ECMAScript
// stops such loops by a rule this engine does not model, and none of the patterns needs it).
//
// A one-class lookahead right before a class, `(?=A)B` or `(?!A)B`, is the one class
// A and B (A and not B): the pair compiles to one `one` instruction, and a starred group
// of it to one run. Tekken's and GPT-4o's rules spell every letter this way; as a group
// each letter cost a branch and a backtracking frame (the pre-tokenizer ran 14x slower
// than GPT-2's scanner).
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/tokenizer.hpp"
#endif

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/text/detail/regex_program.hpp"
#include "mnemo/text/detail/utf8.hpp"

namespace mnemo::text::detail {

/// Rewrites the compiler may make (all on by default; tests turn them off to compare).
struct regex_compile_options {
  bool fold_class_lookaheads = true;  // (?=A)B and (?!A)B become one class
};

class regex_compiler {
 public:
  static result<regex_program> compile(std::string_view pattern, regex_flavour flavour,
                                       regex_compile_options options = {}) {
    regex_compiler c(flavour);
    c.options_ = options;
    status s = c.run(pattern);
    if (!s.is_ok()) return s;
    return std::move(c.prog_);
  }

 private:
  enum class kind : std::uint8_t { empty, one, concat, alt, repeat, assertion, look };
  struct node {
    explicit node(kind kk = kind::empty, std::uint32_t a = 0) : k(kk), arg(a) {}
    kind k = kind::empty;
    std::uint32_t arg = 0;  // class index / assertion_kind / lookahead index
    std::uint32_t min = 0, max = 0;
    bool lazy_or_negate = false;
    std::vector<std::uint32_t> kids;
  };

  static constexpr std::size_t k_max_pattern = 4096;
  static constexpr int k_max_depth = 64;
  static constexpr std::uint32_t k_max_count = 1024;
  static constexpr std::size_t k_max_code = 65536;

  explicit regex_compiler(regex_flavour f) { prog_.flavour = f; }

  status error(const char* what) const {
    return make_status(status_code::invalid_argument, "regex: %s at code point %zu", what, pos_);
  }
  status unsupported(const char* what) const {
    return make_status(status_code::unsupported, "regex: %s at code point %zu", what, pos_);
  }

  status run(std::string_view pattern) {
    if (!is_valid_utf8(pattern))
      return make_status(status_code::invalid_argument, "regex: pattern is not valid UTF-8");
    for (std::size_t i = 0; i < pattern.size();) {
      std::size_t len = 0;
      cps_.push_back(decode_utf8(pattern, i, len));
      i += len;
    }
    if (cps_.size() > k_max_pattern) return unsupported("pattern longer than 4096 code points");
    std::uint32_t root = 0;
    MNEMO_RETURN_IF_ERROR(parse_alt(0, false, root));
    if (pos_ != cps_.size()) return error("unbalanced ')'");
    MNEMO_RETURN_IF_ERROR(emit(root));
    prog_.code.push_back({regex_op::match});
    const std::size_t pattern_end = prog_.code.size();
    // Lookahead bodies after the pattern (a body may add more lookaheads).
    for (std::size_t i = 0; i < look_roots_.size(); ++i) {
      prog_.lookaheads[i].entry = static_cast<std::uint32_t>(prog_.code.size());
      const node& body = nodes_[look_roots_[i]];
      if (body.k == kind::one)
        prog_.lookaheads[i].single_class = static_cast<std::int32_t>(body.arg);
      MNEMO_RETURN_IF_ERROR(emit(look_roots_[i]));
      prog_.code.push_back({regex_op::match});
      prog_.lookaheads[i].end = static_cast<std::uint32_t>(prog_.code.size());
    }
    for (char_class& c : prog_.classes)
      for (std::uint32_t a = 0; a < 0x80; ++a)
        if (c.contains_slow(make_unit(a, prog_.flavour)))
          c.ascii_units[a >> 6] |= std::uint64_t{1} << (a & 63);
    compute_first();
    mark_possessive_runs();
    describe_for_dfa(pattern_end);
    return {};
  }

  /// The lazy DFA steps over one unit at a time: it takes a program whose lookaheads
  /// and assertions look at no more than the unit being stepped over.
  void describe_for_dfa(std::size_t pattern_end) {
    static std::atomic<std::uint64_t> next_serial{1};
    prog_.serial = next_serial.fetch_add(1, std::memory_order_relaxed);
    prog_.dfa_ok = true;
    for (std::size_t pc = 0; pc < pattern_end; ++pc) {
      const regex_inst& in = prog_.code[pc];
      if (in.op == regex_op::look && prog_.lookaheads[in.arg].single_class < 0)
        prog_.dfa_ok = false;
      if (in.op == regex_op::assertion &&
          (static_cast<assertion_kind>(in.arg) == assertion_kind::word_boundary ||
           static_cast<assertion_kind>(in.arg) == assertion_kind::not_word_boundary))
        prog_.dfa_ok = false;
    }
    // collapsed placeholders lie above every range; otherwise no class may list ranges
    auto has_ranges = [](const char_class& c, auto&& self) -> bool {
      if (!c.ranges.empty()) return true;
      for (const char_class& a : c.also)
        if (self(a, self)) return true;
      return false;
    };
    prog_.props_only = true;
    if (prog_.flavour != regex_flavour::collapsed)
      for (const char_class& c : prog_.classes)
        if (has_ranges(c, has_ranges)) prog_.props_only = false;
  }

  /// A greedy run whose continuation cannot start on any unit of its class (and cannot
  /// match empty except at the end) only ever succeeds with its longest length: `a*b`,
  /// `\s+$`. Such runs keep no backtracking state, which keeps repeated searches linear.
  void mark_possessive_runs() {
    for (std::size_t pc = 0; pc + 1 < prog_.code.size(); ++pc) {
      regex_inst& in = prog_.code[pc];
      if (in.op != regex_op::run || in.lazy_or_negate) continue;
      const first_units& next = prog_.first[pc + 1];
      const char_class& c = prog_.classes[in.arg];
      const bool ascii_overlap =
          ((next.ascii[0] & c.ascii_units[0]) | (next.ascii[1] & c.ascii_units[1])) != 0;
      const bool class_has_non_ascii =
          c.negated || c.props != 0 || c.without != 0 || !c.ranges.empty();
      // [^...\p{X}...] excludes every non-ASCII unit with bit X: a continuation whose
      // non-ASCII starters all have such a bit cannot start inside the run
      const bool excluded_by_props =
          c.negated && c.ranges.empty() && c.without == 0 && (next.non_ascii_props & ~c.props) == 0;
      const bool non_ascii_overlap = next.non_ascii && class_has_non_ascii && !excluded_by_props;
      in.possessive = !next.nullable && !ascii_overlap && !non_ascii_overlap;
    }
  }

  /// prog_.first for every instruction. A loop reaches its head again only after
  /// consuming (empty-matching loop bodies are refused), so a head still being computed
  /// contributes nothing on that path.
  void compute_first() {
    const std::size_t n = prog_.code.size();
    prog_.first.assign(n, {});
    std::vector<std::uint8_t> state(n, 0);  // 0 new, 1 in progress, 2 done
    for (std::size_t pc = n; pc-- > 0;) first_of(static_cast<std::uint32_t>(pc), state);
  }

  first_units first_of(std::uint32_t pc, std::vector<std::uint8_t>& state) {
    if (state[pc] == 2) return prog_.first[pc];
    if (state[pc] == 1) return {};
    state[pc] = 1;
    const regex_inst in = prog_.code[pc];
    first_units f;
    auto of_class = [&](std::uint32_t cls) {
      const char_class& k = prog_.classes[cls];
      first_units c;
      c.ascii = k.ascii_units;
      c.non_ascii = true;
      const bool by_props = !k.negated && k.ranges.empty() && k.without == 0;
      c.non_ascii_props = by_props ? k.props : std::uint16_t{0xFFFF};
      c.non_ascii = !by_props || k.props != 0;
      return c;
    };
    switch (in.op) {
      case regex_op::match: f.nullable = true; break;
      case regex_op::one: f = of_class(in.arg); break;
      case regex_op::run:
        f = of_class(in.arg);
        if (in.x == 0) f.merge(first_of(pc + 1, state));
        break;
      case regex_op::split:
        f = first_of(in.x, state);
        f.merge(first_of(in.y, state));
        break;
      case regex_op::jump: f = first_of(in.x, state); break;
      case regex_op::assertion:
        if (static_cast<assertion_kind>(in.arg) == assertion_kind::end) {
          f.end_only = true;
          break;
        }
        f = first_of(pc + 1, state);
        break;
      case regex_op::look: f = first_of(pc + 1, state); break;
    }
    // (a lookahead body's match is the end of the body, not of the pattern: callers of
    // first_units only use it for the pattern's own instructions and bodies alike, and a
    // body's match is nullable there too)
    prog_.first[pc] = f;
    state[pc] = 2;
    return f;
  }

  bool at_end() const noexcept { return pos_ >= cps_.size(); }
  std::uint32_t peek() const noexcept { return cps_[pos_]; }

  std::uint32_t add_node(node n) {
    nodes_.push_back(std::move(n));
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }
  std::uint32_t add_class(char_class c) {
    c.finish();
    prog_.classes.push_back(std::move(c));
    return static_cast<std::uint32_t>(prog_.classes.size() - 1);
  }

  // alt := concat ('|' concat)*
  status parse_alt(int depth, bool icase, std::uint32_t& out) {
    if (depth > k_max_depth) return unsupported("groups nested deeper than 64");
    node alt{kind::alt};
    for (;;) {
      std::uint32_t c = 0;
      MNEMO_RETURN_IF_ERROR(parse_concat(depth, icase, c));
      alt.kids.push_back(c);
      if (at_end() || peek() != '|') break;
      ++pos_;
    }
    out = alt.kids.size() == 1 ? alt.kids[0] : add_node(std::move(alt));
    return {};
  }

  status parse_concat(int depth, bool& icase, std::uint32_t& out) {
    node cat{kind::concat};
    while (!at_end() && peek() != '|' && peek() != ')') {
      // (?i) switches case folding on for the rest of the enclosing group
      if (peek() == '(' && pos_ + 3 < cps_.size() && cps_[pos_ + 1] == '?' &&
          cps_[pos_ + 2] == 'i' && cps_[pos_ + 3] == ')') {
        pos_ += 4;
        icase = true;
        continue;
      }
      std::uint32_t atom = 0;
      MNEMO_RETURN_IF_ERROR(parse_atom(depth, icase, atom));
      MNEMO_RETURN_IF_ERROR(parse_quantifiers(atom));
      cat.kids.push_back(atom);
      if (options_.fold_class_lookaheads) fold_class_lookaheads(cat.kids);
    }
    out = cat.kids.size() == 1 ? cat.kids[0] : add_node(std::move(cat));
    return {};
  }

  /// While the last two items are a one-class lookahead and a class, makes them one class
  /// (the lookahead tests the very unit the class consumes). The lookahead's body stays
  /// in the program, unused.
  void fold_class_lookaheads(std::vector<std::uint32_t>& kids) {
    while (kids.size() >= 2) {
      const node& look = nodes_[kids[kids.size() - 2]];
      const node& one = nodes_[kids.back()];
      if (look.k != kind::look || one.k != kind::one) return;
      const node& body = nodes_[look_roots_[look.arg]];
      if (body.k != kind::one) return;
      const char_class& guard = prog_.classes[body.arg];
      if (look.lazy_or_negate && !guard.also.empty()) return;  // no simple complement
      char_class folded = char_class::intersect(look.lazy_or_negate ? guard.complement() : guard,
                                                prog_.classes[one.arg]);
      const std::uint32_t cls = add_class(std::move(folded));
      kids.pop_back();
      kids.back() = add_node(node{kind::one, cls});
    }
  }

  status parse_number(std::uint32_t& v) {
    if (at_end() || peek() < '0' || peek() > '9') return error("expected a number in {}");
    v = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > k_max_count) return unsupported("a count above 1024");
      ++pos_;
    }
    return {};
  }

  status parse_quantifiers(std::uint32_t& atom) {
    while (!at_end()) {
      std::uint32_t lo = 0, hi = 0;
      const std::uint32_t c = peek();
      if (c == '?') {
        lo = 0, hi = 1;
      } else if (c == '*') {
        lo = 0, hi = k_unbounded;
      } else if (c == '+') {
        lo = 1, hi = k_unbounded;
      } else if (c == '{') {
        const std::size_t save = pos_;
        ++pos_;
        if (at_end() || peek() < '0' || peek() > '9') {  // a literal '{'
          pos_ = save;
          return {};
        }
        MNEMO_RETURN_IF_ERROR(parse_number(lo));
        hi = lo;
        if (!at_end() && peek() == ',') {
          ++pos_;
          hi = k_unbounded;
          if (!at_end() && peek() != '}') MNEMO_RETURN_IF_ERROR(parse_number(hi));
        }
        if (at_end() || peek() != '}') return error("unterminated {n,m}");
        if (hi < lo) return error("{n,m} with m < n");
      } else {
        return {};
      }
      ++pos_;
      const node& kid = nodes_[atom];
      if (kid.k == kind::assertion || kid.k == kind::look)
        return unsupported("a quantifier on an assertion");
      node rep{kind::repeat};
      rep.min = lo, rep.max = hi;
      if (!at_end() && peek() == '?') {
        rep.lazy_or_negate = true;
        ++pos_;
      } else if (!at_end() && peek() == '+') {
        return unsupported("possessive quantifier");
      }
      if (hi > 1 && nullable(atom)) return unsupported("a repeated group that can match empty");
      rep.kids.push_back(atom);
      atom = add_node(std::move(rep));
    }
    return {};
  }

  bool nullable(std::uint32_t i) const {
    const node& n = nodes_[i];
    switch (n.k) {
      case kind::one: return false;
      case kind::concat:
        for (auto k : n.kids)
          if (!nullable(k)) return false;
        return true;
      case kind::alt:
        for (auto k : n.kids)
          if (nullable(k)) return true;
        return false;
      case kind::repeat: return n.min == 0 || nullable(n.kids[0]);
      default: return true;
    }
  }

  status parse_atom(int depth, bool icase, std::uint32_t& out) {
    const std::uint32_t c = peek();
    ++pos_;
    switch (c) {
      case '(': return parse_group(depth, icase, out);
      case ')': return error("unexpected ')'");
      case '[': {
        char_class cls;
        MNEMO_RETURN_IF_ERROR(parse_class(icase, cls));
        out = add_node(node{kind::one, add_class(std::move(cls))});
        return {};
      }
      case '.': {
        char_class cls;
        for (std::uint32_t t : {0x0Au, 0x0Du, 0x2028u, 0x2029u}) cls.add(t, t);
        cls.negated = true;
        out = add_node(node{kind::one, add_class(std::move(cls))});
        return {};
      }
      case '^':
        out = add_node(node{kind::assertion, static_cast<std::uint32_t>(assertion_kind::begin)});
        return {};
      case '$':
        out = add_node(node{kind::assertion, static_cast<std::uint32_t>(assertion_kind::end)});
        return {};
      case '*':
      case '+':
      case '?': return error("nothing to repeat");
      case '\\': {
        if (at_end()) return error("trailing backslash");
        if (peek() == 'b' || peek() == 'B') {
          const auto k =
              peek() == 'b' ? assertion_kind::word_boundary : assertion_kind::not_word_boundary;
          ++pos_;
          out = add_node(node{kind::assertion, static_cast<std::uint32_t>(k)});
          return {};
        }
        char_class cls;
        MNEMO_RETURN_IF_ERROR(parse_escape(icase, cls, /*in_class=*/false));
        out = add_node(node{kind::one, add_class(std::move(cls))});
        return {};
      }
      default: {
        char_class cls;
        add_literal(cls, c, c, icase);
        out = add_node(node{kind::one, add_class(std::move(cls))});
        return {};
      }
    }
  }

  status parse_group(int depth, bool icase, std::uint32_t& out) {
    bool look = false, negate = false;
    if (!at_end() && peek() == '?') {
      ++pos_;
      if (at_end()) return error("unterminated group");
      const std::uint32_t t = peek();
      ++pos_;
      if (t == '=' || t == '!') {
        look = true;
        negate = t == '!';
      } else if (t == 'i' && !at_end() && peek() == ':') {
        ++pos_;
        icase = true;
      } else if (t != ':') {
        return unsupported("group syntax other than (?: (?= (?! (?i: (?i)");
      }
    }
    std::uint32_t inner = 0;
    MNEMO_RETURN_IF_ERROR(parse_alt(depth + 1, icase, inner));
    if (at_end() || peek() != ')') return error("missing ')'");
    ++pos_;
    if (!look) {
      out = inner;
      return {};
    }
    node n{kind::look, static_cast<std::uint32_t>(prog_.lookaheads.size())};
    n.lazy_or_negate = negate;
    prog_.lookaheads.emplace_back();
    look_roots_.push_back(inner);
    out = add_node(std::move(n));
    return {};
  }

  static void add_literal(char_class& cls, std::uint32_t lo, std::uint32_t hi, bool icase) {
    cls.add(lo, hi);
    if (!icase) return;
    for (std::uint32_t c = lo; c <= hi && c < 0x80; ++c) {
      if (c >= 'a' && c <= 'z') cls.add(c - 32, c - 32);
      if (c >= 'A' && c <= 'Z') cls.add(c + 32, c + 32);
    }
  }

  status parse_property(std::uint16_t& bits) {
    if (at_end() || peek() != '{') return error("expected \\p{...}");
    ++pos_;
    std::string name;
    while (!at_end() && peek() != '}' && name.size() < 32)
      name.push_back(static_cast<char>(peek() & 0x7F)), ++pos_;
    if (at_end() || peek() != '}') return error("unterminated \\p{...}");
    ++pos_;
    const bool collapsed = prog_.flavour == regex_flavour::collapsed;
    if (name == "L" || (collapsed && (name == "Lu" || name == "Ll" || name == "Lt" ||
                                      name == "Lm" || name == "Lo")))
      bits = prop_letter;  // collapsed text has one letter placeholder: every L* is \p{L}
    else if (name == "N")
      bits = prop_number;
    else if (name == "P")
      bits = prop_punctuation;
    else if (name == "S")
      bits = prop_symbol;
    else if (name == "M")
      bits = prop_mark;
    else if (name == "Han" && !collapsed)
      bits = prop_han;
    else
      return unsupported("unknown \\p{...} class for this flavour");
    return {};
  }

  /// After a backslash: adds the escape's members to `cls`. A negated class escape
  /// (\S \D \W \P) outside brackets negates `cls`; inside brackets only \S and \P work.
  status parse_escape(bool icase, char_class& cls, bool in_class) {
    const std::uint32_t e = peek();
    ++pos_;
    auto hex = [&](int digits, std::uint32_t& v) -> status {
      v = 0;
      for (int i = 0; i < digits; ++i) {
        if (at_end()) return error("short hex escape");
        const std::uint32_t h = peek();
        ++pos_;
        const int d = h >= '0' && h <= '9'   ? int(h - '0')
                      : h >= 'a' && h <= 'f' ? int(h - 'a' + 10)
                      : h >= 'A' && h <= 'F' ? int(h - 'A' + 10)
                                             : -1;
        if (d < 0) return error("bad hex digit");
        v = v * 16 + static_cast<std::uint32_t>(d);
      }
      return {};
    };
    auto negatable = [&](auto add_members, bool neg) -> status {
      if (!neg) {
        add_members(cls);
        return {};
      }
      if (!in_class) {
        add_members(cls);
        cls.negated = true;
        return {};
      }
      return unsupported("\\D or \\W inside brackets");
    };
    switch (e) {
      case 'd':
      case 'D': return negatable([](char_class& c) { c.add('0', '9'); }, e == 'D');
      case 'w':
      case 'W':
        return negatable(
            [](char_class& c) {
              c.add('0', '9'), c.add('A', 'Z'), c.add('a', 'z'), c.add('_', '_');
            },
            e == 'W');
      case 's': cls.props |= prop_space; return {};
      case 'S':
        if (in_class) {
          cls.without |= prop_space;
          return {};
        }
        cls.props |= prop_space, cls.negated = true;
        return {};
      case 'p':
      case 'P': {
        std::uint16_t bits = 0;
        MNEMO_RETURN_IF_ERROR(parse_property(bits));
        if (e == 'p') {
          cls.props |= bits;
          return {};
        }
        if (in_class) {
          cls.without |= bits;
          return {};
        }
        cls.props |= bits, cls.negated = true;
        return {};
      }
      case 'n': cls.add(0x0A, 0x0A); return {};
      case 'r': cls.add(0x0D, 0x0D); return {};
      case 't': cls.add(0x09, 0x09); return {};
      case 'v': cls.add(0x0B, 0x0B); return {};
      case 'f': cls.add(0x0C, 0x0C); return {};
      case '0': cls.add(0, 0); return {};
      case 'x': {
        std::uint32_t v = 0;
        MNEMO_RETURN_IF_ERROR(hex(2, v));
        add_literal(cls, v, v, icase);
        return {};
      }
      case 'u': {
        std::uint32_t v = 0;
        MNEMO_RETURN_IF_ERROR(hex(4, v));
        add_literal(cls, v, v, icase);
        return {};
      }
      default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '1' && e <= '9'))
          return unsupported("unknown escape (back-references are not supported)");
        add_literal(cls, e, e, icase);
        return {};
    }
  }

  /// One bracket item that stands for a single code point (for ranges): -1 otherwise.
  status parse_class(bool icase, char_class& cls) {
    if (!at_end() && peek() == '^') {
      cls.negated = true;
      ++pos_;
    }
    while (!at_end() && peek() != ']') {
      std::uint32_t lo = 0;
      bool single = true;
      if (peek() == '\\') {
        ++pos_;
        if (at_end()) return error("trailing backslash");
        char_class item;
        MNEMO_RETURN_IF_ERROR(parse_escape(icase, item, /*in_class=*/true));
        const std::uint32_t bits = item.ascii[0] | item.ascii[1];
        // an escape that named one code point may start a range
        std::size_t members = item.ranges.size();
        for (auto w : item.ascii) members += static_cast<std::size_t>(__builtin_popcountll(w));
        single = item.props == 0 && item.without == 0 && members == 1 && !icase;
        if (single) {
          lo = item.ranges.empty()
                   ? static_cast<std::uint32_t>(item.ascii[0] ? __builtin_ctzll(item.ascii[0])
                                                              : 64 + __builtin_ctzll(item.ascii[1]))
                   : item.ranges[0].first;
        } else {
          (void)bits;
          merge_into(cls, item);
          continue;
        }
      } else {
        lo = peek();
        ++pos_;
      }
      if (pos_ + 1 < cps_.size() && peek() == '-' && cps_[pos_ + 1] != ']') {
        ++pos_;
        std::uint32_t hi = peek();
        ++pos_;
        if (hi == '\\') {
          if (at_end()) return error("trailing backslash");
          char_class item;
          MNEMO_RETURN_IF_ERROR(parse_escape(false, item, true));
          if (item.props != 0 || item.without != 0) return error("a class escape ends a range");
          hi = item.ranges.empty()
                   ? static_cast<std::uint32_t>(item.ascii[0] ? __builtin_ctzll(item.ascii[0])
                                                              : 64 + __builtin_ctzll(item.ascii[1]))
                   : item.ranges[0].first;
        }
        if (hi < lo) return error("range out of order");
        add_literal(cls, lo, hi, icase);
      } else {
        add_literal(cls, lo, lo, icase);
      }
    }
    if (at_end()) return error("missing ']'");
    ++pos_;
    return {};
  }

  static void merge_into(char_class& dst, const char_class& src) {
    dst.ascii[0] |= src.ascii[0];
    dst.ascii[1] |= src.ascii[1];
    dst.ranges.insert(dst.ranges.end(), src.ranges.begin(), src.ranges.end());
    dst.props |= src.props;
    dst.without |= src.without;
  }

  // --- code generation ---------------------------------------------------------------

  std::uint32_t here() const { return static_cast<std::uint32_t>(prog_.code.size()); }
  status push(regex_inst i) {
    if (prog_.code.size() >= k_max_code) return unsupported("program above 65536 instructions");
    prog_.code.push_back(i);
    return {};
  }

  status emit(std::uint32_t i) {
    const node n = nodes_[i];  // a copy: emit() may grow nodes_? (no, but keep it simple)
    switch (n.k) {
      case kind::empty: return {};
      case kind::one: return push({regex_op::one, false, n.arg});
      case kind::assertion: return push({regex_op::assertion, false, n.arg});
      case kind::look: return push({regex_op::look, n.lazy_or_negate, n.arg});
      case kind::concat:
        for (auto k : n.kids) MNEMO_RETURN_IF_ERROR(emit(k));
        return {};
      case kind::alt: {
        std::vector<std::uint32_t> jumps;
        for (std::size_t a = 0; a < n.kids.size(); ++a) {
          std::uint32_t split_at = 0;
          const bool last = a + 1 == n.kids.size();
          if (!last) {
            split_at = here();
            MNEMO_RETURN_IF_ERROR(push({regex_op::split, false, 0, here() + 1, 0}));
          }
          MNEMO_RETURN_IF_ERROR(emit(n.kids[a]));
          if (!last) {
            jumps.push_back(here());
            MNEMO_RETURN_IF_ERROR(push({regex_op::jump}));
            prog_.code[split_at].y = here();
          }
        }
        for (auto j : jumps) prog_.code[j].x = here();
        return {};
      }
      case kind::repeat: return emit_repeat(n);
    }
    return {};
  }

  status emit_repeat(const node& n) {
    const node kid = nodes_[n.kids[0]];
    if (kid.k == kind::one)  // a class run: one instruction, backtracked over in place
      return push({regex_op::run, n.lazy_or_negate, kid.arg, n.min, n.max});
    for (std::uint32_t r = 0; r < n.min; ++r) MNEMO_RETURN_IF_ERROR(emit(n.kids[0]));
    if (n.max == k_unbounded) {
      const std::uint32_t loop = here();
      MNEMO_RETURN_IF_ERROR(push({regex_op::split}));
      const std::uint32_t body = here();
      MNEMO_RETURN_IF_ERROR(emit(n.kids[0]));
      MNEMO_RETURN_IF_ERROR(push({regex_op::jump, false, 0, loop}));
      set_split(loop, body, here(), n.lazy_or_negate);
      return {};
    }
    std::vector<std::uint32_t> splits;
    for (std::uint32_t r = n.min; r < n.max; ++r) {
      splits.push_back(here());
      MNEMO_RETURN_IF_ERROR(push({regex_op::split}));
      MNEMO_RETURN_IF_ERROR(emit(n.kids[0]));
    }
    for (auto s : splits) set_split(s, s + 1, here(), n.lazy_or_negate);
    return {};
  }

  void set_split(std::uint32_t at, std::uint32_t body, std::uint32_t exit, bool lazy) {
    prog_.code[at].x = lazy ? exit : body;
    prog_.code[at].y = lazy ? body : exit;
  }

  std::vector<std::uint32_t> cps_;
  std::size_t pos_ = 0;
  std::vector<node> nodes_;
  std::vector<std::uint32_t> look_roots_;
  regex_compile_options options_;
  regex_program prog_;
};

}  // namespace mnemo::text::detail
