// Session files on disk for the examples (generate --save-session / --load-session):
// sequence 0 of a context, its tokens and the model's fingerprint (mnemo/session.hpp).
//
//   MNEMO_ASSIGN_OR_RETURN(auto history, load_session_file(ctx, model.file(), path));
//   ... decode more, append to history ...
//   MNEMO_RETURN_IF_ERROR(save_session_file(ctx, model.file(), path, history));
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/model/fingerprint.hpp"
#include "mnemo/session.hpp"

namespace mnemo_examples {

inline mnemo::result<std::vector<std::uint8_t>> read_whole_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return mnemo::make_status(mnemo::status_code::io_error, "cannot open '%s'", path.c_str());
  std::vector<std::uint8_t> bytes;
  std::uint8_t buf[1 << 16];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
    bytes.insert(bytes.end(), buf, buf + n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed)
    return mnemo::make_status(mnemo::status_code::io_error, "cannot read '%s'", path.c_str());
  return bytes;
}

inline mnemo::status write_whole_file(const std::string& path, std::span<const std::uint8_t> d) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr)
    return mnemo::make_status(mnemo::status_code::io_error, "cannot create '%s'", path.c_str());
  const bool ok = std::fwrite(d.data(), 1, d.size(), f) == d.size();
  if (std::fclose(f) != 0 || !ok)
    return mnemo::make_status(mnemo::status_code::io_error, "cannot write '%s'", path.c_str());
  return {};
}

/// Saves sequence 0 of ctx, which holds `tokens` at positions 0, 1, ..., to `path`.
template <class Context>
mnemo::status save_session_file(Context& ctx, const mnemo::gguf::file& model,
                                const std::string& path, std::span<const mnemo::token_id> tokens) {
  const auto list = mnemo::memory::session_tokens::from_start(0, tokens);
  std::vector<std::uint8_t> bytes;
  MNEMO_RETURN_IF_ERROR(
      mnemo::session_write(ctx, mnemo::model::fingerprint(model), 0, {&list, 1}, bytes));
  return write_whole_file(path, bytes);
}

/// Loads a file save_session_file wrote into sequence 0 of ctx (which must be empty)
/// and returns the tokens it holds. A plain state file has no tokens to resume from:
/// refused with a message that says so.
template <class Context>
mnemo::result<std::vector<mnemo::token_id>> load_session_file(Context& ctx,
                                                              const mnemo::gguf::file& model,
                                                              const std::string& path) {
  MNEMO_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, read_whole_file(path));
  auto view = mnemo::memory::decode_session(bytes);
  if (view && !view->has_model)
    return mnemo::make_status(mnemo::status_code::invalid_argument,
                              "'%s' is a plain state file without token lists; resuming needs "
                              "a session file (--save-session writes one)",
                              path.c_str());
  auto loaded = mnemo::session_read(ctx, bytes, mnemo::model::fingerprint(model), 0);
  if (!loaded) {
    mnemo::status st = loaded.error();
    return st.with_context(path);
  }
  if (loaded->lists.empty() || loaded->lists[0].tokens.empty() ||
      loaded->lists[0].tokens.back().pos + 1 !=
          static_cast<mnemo::pos_t>(loaded->lists[0].tokens.size())) {
    (void)ctx.seq_rm(0, -1, -1);
    return mnemo::make_status(mnemo::status_code::invalid_argument,
                              "'%s': sequence 0 holds no tokens from position 0 on", path.c_str());
  }
  return loaded->lists[0].ids();
}

}  // namespace mnemo_examples
