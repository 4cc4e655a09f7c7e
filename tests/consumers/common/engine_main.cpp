// A host program on the installed mnemo::engine: it includes only the handle's header
// and links the compiled library. A missing model file must come back as a status.
#include <cstdio>

#include "mnemo/engine/engine.hpp"

int main() {
  mnemo::engine_options o;
  o.kv = mnemo::parse_kv_type("q8_0").value_or(mnemo::kv_type::f16);
  auto e = mnemo::engine::open("no-such-model.gguf", o);
  if (e.is_ok()) return 1;
  std::printf("engine consumer: refused: %s\n", e.error().to_string().c_str());
  return 0;
}
