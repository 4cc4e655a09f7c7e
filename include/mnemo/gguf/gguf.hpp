// The GGUF room: read a model file (file.hpp) and write one (writer.hpp).
#pragma once

#include "mnemo/gguf/file.hpp"
#include "mnemo/gguf/writer.hpp"
