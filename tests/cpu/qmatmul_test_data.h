#pragma once
// Weight matrices and activations for the qmatmul tests (qmatmul_test.cpp, qmatmul_block_sums_test.cpp):
// random values, or values at the bounds the integer kernels must hold.
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/gguf/ggml_type.h"
#include "engine/model/llama_model.h"

namespace vks::cpuq::test {

// A weight matrix in its GGUF type, made by quantizing random floats (or floats of one magnitude).
struct Matrix {
  GgmlType type;
  size_t rows, cols;
  std::vector<uint8_t> bytes;
  TensorRef ref() const {
    TensorRef t;
    t.name = "w";
    t.type = type;
    t.rows = rows;
    t.cols = cols;
    t.data = bytes.data();
    t.nbytes = bytes.size();
    return t;
  }
};

enum class Fill { kRandom, kExtreme };

inline Matrix make_matrix(GgmlType type, size_t rows, size_t cols, Fill fill, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Matrix m{type, rows, cols, std::vector<uint8_t>(rows * ggml_row_size(type, cols))};
  std::vector<float> row(cols);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      // Extreme: every weight at the largest magnitude, the sign flipping per row, so the integer
      // sums reach their bounds (no i16 pair may saturate).
      row[c] = fill == Fill::kRandom ? normal(rng) * (1.0f + static_cast<float>(c % 7)) : (r % 2 ? 3.0f : -3.0f);
    }
    quantize_row(type, row.data(), m.bytes.data() + r * ggml_row_size(type, cols), cols);
  }
  return m;
}

inline std::vector<float> make_activations(size_t n_tokens, size_t cols, Fill fill, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n_tokens * cols);
  for (size_t i = 0; i < x.size(); ++i) {
    if (fill == Fill::kExtreme) {
      x[i] = 2.0f;  // every activation quantizes to 127
    } else {
      // Some blocks all zero (scale 0), some values exact ties of the quantizer, the rest normal.
      const size_t c = i % cols;
      x[i] = (c / 32) % 5 == 3 ? 0.0f : normal(rng);
      if (c % 11 == 0) x[i] = 0.5f;
    }
  }
  return x;
}

}  // namespace vks::cpuq::test
