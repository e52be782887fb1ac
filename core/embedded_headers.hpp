// The kernels_src/*.cuh headers, embedded into the library at build time
// (cmake/embed_sources.cmake). NVRTC receives them as in-memory headers.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace chord {

struct EmbeddedHeader {
  std::string_view name;      // include name, e.g. "int4_dequant.cuh"
  std::string_view contents;
};

const std::vector<EmbeddedHeader>& embedded_headers();

// tuning_tables/*.json, embedded the same way (tuning_tables/tuning_table.cpp reads them).
const std::vector<EmbeddedHeader>& embedded_tuning_tables();

// shapes/suite.json, embedded the same way (core/model_shapes.cpp reads it).
const std::vector<EmbeddedHeader>& embedded_shape_files();

}  // namespace chord
