// Helpers shared by the tokenizer fixture tests: the fixture directory, the .inp / .out /
// .pieces formats, and printable escapes for failure messages.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "mnemo/text/vocab.hpp"

namespace mnemo_test {

inline std::string tokenizer_fixture_dir() {
  return std::string(MNEMO_FIXTURES_DIR) + "/tokenizer";
}

/// The *.gguf files of the tokenizer fixture directory that have an .inp and an .out,
/// sorted (empty when the directory is absent).
inline std::vector<std::string> tokenizer_fixture_files() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(tokenizer_fixture_dir(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 5 && name.ends_with(".gguf") &&
        std::filesystem::exists(e.path().string() + ".inp") &&
        std::filesystem::exists(e.path().string() + ".out"))
      out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// A GoogleTest-safe name: "ggml-vocab-gpt2-pre-llama-bpe.gguf" -> "gpt2_pre_llama_bpe"
/// is not allowed (no underscores), so letters and digits only, words capitalised.
inline std::string test_name_of(const std::string& file) {
  std::string core = file.substr(0, file.find(".gguf"));
  if (core.rfind("ggml-vocab-", 0) == 0) core = core.substr(11);
  std::string out;
  bool up = true;
  for (const char c : core) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out.push_back(up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c);
      up = false;
    } else {
      up = true;
    }
  }
  return out;
}

inline bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

/// The test strings, split as llama.cpp's test does: at each "\n__ggml_vocab_test__\n".
inline std::vector<std::string> read_inputs(const std::string& text) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  for (std::size_t pos = 0;;) {
    const std::size_t next = text.find(sep, pos);
    if (next == std::string::npos) break;
    out.push_back(text.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return out;
}

inline std::vector<std::vector<mnemo::text::token_id>> read_outputs(const std::string& text) {
  std::vector<std::vector<mnemo::text::token_id>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ids(line);
    out.emplace_back();
    for (long id; ids >> id;) out.back().push_back(static_cast<mnemo::text::token_id>(id));
  }
  return out;
}

inline void append_utf8(std::string& s, std::uint32_t cp) {
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// One line of a .pieces file: a JSON array of strings. false on a syntax error.
inline bool parse_pieces_line(const std::string& line, std::vector<std::string>& out) {
  out.clear();
  std::size_t i = 0;
  auto skip = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
  };
  if (line.empty() || line[0] != '[') return false;
  ++i;
  for (;;) {
    skip();
    if (i >= line.size()) return false;
    if (line[i] == ']') return true;
    if (line[i] != '"') return false;
    ++i;
    std::string s;
    while (i < line.size() && line[i] != '"') {
      if (line[i] != '\\') {
        s.push_back(line[i++]);
        continue;
      }
      if (++i >= line.size()) return false;
      const char e = line[i++];
      switch (e) {
        case 'n': s.push_back('\n'); break;
        case 'r': s.push_back('\r'); break;
        case 't': s.push_back('\t'); break;
        case 'b': s.push_back('\b'); break;
        case 'f': s.push_back('\f'); break;
        case 'u': {
          auto hex4 = [&](std::uint32_t& v) {
            if (i + 4 > line.size()) return false;
            v = static_cast<std::uint32_t>(std::stoul(line.substr(i, 4), nullptr, 16));
            i += 4;
            return true;
          };
          std::uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF && line.compare(i, 2, "\\u") == 0) {
            i += 2;
            std::uint32_t lo = 0;
            if (!hex4(lo)) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(s, cp);
          break;
        }
        default: s.push_back(e);
      }
    }
    if (i >= line.size()) return false;
    ++i;
    out.push_back(std::move(s));
  }
}

inline std::string escape(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    char buf[8];
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\\')
      out += "\\\\";
    else if (c < 0x20 || c == 0x7F)
      std::snprintf(buf, sizeof buf, "\\x%02X", c), out += buf;
    else
      out.push_back(static_cast<char>(c));
  }
  return out;
}

inline std::string join_pieces(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "|" : "") + escape(v[i]);
  return out + "]";
}

}  // namespace mnemo_test
