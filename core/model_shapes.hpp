// The model shapes of shapes/suite.json (embedded at build time, shapes/README.md): the
// models, the splits that say how one GPU holds a model (its local experts and the GEMM of
// each projection), and the bench's rows. The tuning tables name the split they serve and
// `chord precompile` compiles the kernel sets of the splits marked for it, so neither
// repeats a shape.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace chord {

struct GemmShape {
  int n = 0, k = 0;
  bool operator==(const GemmShape& o) const { return n == o.n && k == o.k; }
};

struct ShapeModel {
  std::string set;  // the section that defines it: "suite" or "generalization"
  std::string name, title;
  int hidden = 0, moe_intermediate = 0, experts = 0, top_k = 0;
};

// One GPU's part of a model: experts split `ep` ways, each expert's intermediate `tp` ways.
struct ShapeSplit {
  std::string set, name, model;
  int ep = 1, tp = 1;
  int experts_local = 0;  // experts / ep
  GemmShape gate_up;      // N = 2 x moe_intermediate / tp, K = hidden
  GemmShape down;         // N = hidden, K = moe_intermediate / tp
  bool kernel_set = false;  // `chord precompile --profile NAME` compiles its kernels

  bool holds(int n, int k) const { return (gate_up.n == n && gate_up.k == k) || (down.n == n && down.k == k); }
};

// One scenario of the bench: its calls run `mode` on the split's GEMMs at each sweep value
// (tokens for indexed and offsets, tokens per expert for masked, rows per expert for contiguous).
struct ShapeRow {
  std::string set, scenario, split, mode;
  std::string weight = "int4";  // "int4" or "nf4"
  std::string routed_over;      // indexed: "local_experts" or "model_experts"
  int routing_block = 0;        // indexed: the moe_align_block_size block of the fixed-block runs
  std::string draw = "mild";    // indexed, offsets: how routes pick experts: mild, uniform, skewed
  std::vector<int64_t> sweep, quick;
};

struct ModelShapes {
  std::vector<ShapeModel> models;
  std::vector<ShapeSplit> splits;  // in file order: the suite's, then the generalization set's
  std::vector<ShapeRow> rows;

  const ShapeModel* model(const std::string& name) const;
  const ShapeSplit* split(const std::string& name) const;
  // The suite's splits marked kernel_set, in file order.
  std::vector<const ShapeSplit*> kernel_sets() const;
};

// Parses the shapes file; throws Error(CHORD_ERROR_INVALID_ARGUMENT) naming the file and the
// entry for anything malformed: a missing or unknown field, a duplicate name, a split whose
// experts or GEMM shapes do not follow from its model, a row naming an unknown split.
ModelShapes parse_model_shapes(const std::string& name, const std::string& json_text);

// The embedded shapes/suite.json, parsed once.
const ModelShapes& model_shapes();

}  // namespace chord
