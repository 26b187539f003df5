// The mul_mat_id form of the weight kernels (Ops::matmul_id): every expert in use in one dispatch
// over a stack of experts. Each group's outputs must be the bits of the plain kernel run on that
// expert's own matrix over the group's rows alone (the runner's greedy output depends on it), for
// every weight type the device runs, every kernel family, the rows family's two kernels, wide
// lanes tiles, the SwiGLU epilogue, and stacks split into parts of whole experts.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/gguf/ggml_type.h"
#include "tests/vulkan/kernels_test_util.h"

namespace vks::vk::test {
namespace {

struct IdCase {
  GgmlType type;
  uint64_t rows;  // per expert (gate|up: 2 * hidden)
  uint64_t cols;
  MatmulFamily family = MatmulFamily::kRows;
  uint32_t lanes_tile = 8;
  bool swiglu = false;
};

std::string id_case_name(const ::testing::TestParamInfo<IdCase>& info) {
  const IdCase& c = info.param;
  return std::string(matmul_family_name(c.family)) + (c.lanes_tile != 8 ? std::to_string(c.lanes_tile) : "") + "_" +
         std::string(ggml_type_name(c.type)) + "_" + std::to_string(c.rows) + "x" + std::to_string(c.cols) +
         (c.swiglu ? "_swiglu" : "");
}

constexpr uint32_t kExperts = 5;

// Groups as the runner lays them out: consecutive rows, experts in any order, one expert unused, one
// empty slot. Sizes: 1 row, a matvec tile and a bit (9), a wide lanes tile (17 > 16), and 3.
struct Group {
  uint32_t expert, first, rows;
};
const std::vector<Group>& groups() {
  static const std::vector<Group> g{{3, 0, 3}, {0, 3, 9}, {4, 12, 1}, {1, 13, 17}, {2, 30, 0}};
  return g;
}
constexpr uint32_t kRows = 30;

class MatmulIdTest : public KernelTest, public ::testing::WithParamInterface<IdCase> {
 protected:
  void SetUp() override {
    KernelTest::SetUp();
    if (IsSkipped()) return;
    const IdCase c = GetParam();
    if (!can_run(c.family)) GTEST_SKIP() << "no integer dot products on " << device().info().name;
    data_ = ggml_matrix(c.type, kExperts * c.rows, c.cols, 77 + static_cast<uint32_t>(c.rows));
    x_stride_ = static_cast<uint32_t>((c.cols + 3) / 4 * 4);
    y_stride_ = static_cast<uint32_t>(c.rows + 4);
    const std::vector<float> v = random_floats(kRows * c.cols, 5);
    x_.assign(kRows * x_stride_, std::nanf(""));  // padding never read
    for (uint32_t t = 0; t < kRows; ++t) std::memcpy(&x_[t * x_stride_], &v[t * c.cols], c.cols * 4);
  }

  uint32_t outputs() const { return static_cast<uint32_t>(GetParam().swiglu ? GetParam().rows / 2 : GetParam().rows); }

  // The plain kernel on expert e's own matrix over each group's rows alone, y rows in place.
  std::vector<float> expected() const {
    const IdCase c = GetParam();
    const Ops& o = ops(c.family, c.lanes_tile);
    const uint64_t row_bytes = ggml_row_size(c.type, c.cols);
    std::vector<float> y(kRows * y_stride_, -7.0f);
    for (const Group& g : groups()) {
      if (g.rows == 0) continue;
      const DeviceMatrix m =
          upload_matrix(device(), c.type, c.rows, c.cols, data_.data() + uint64_t{g.expert} * c.rows * row_bytes);
      const std::vector<float> xg(x_.begin() + g.first * x_stride_, x_.begin() + (g.first + g.rows) * x_stride_);
      Buffer xb = upload(xg), yb = upload(std::vector<float>(g.rows * y_stride_, -7.0f));
      run([&](CommandBuffer& cmd) {
        if (c.swiglu) {
          o.matmul_swiglu(cmd, Ops::weight_op_for(g.rows), m, xb.view(), x_stride_, yb.view(), y_stride_, g.rows);
        } else {
          o.matmul(cmd, m, xb.view(), x_stride_, yb.view(), y_stride_, g.rows);
        }
      });
      const std::vector<float> got = download<float>(yb, g.rows * y_stride_);
      std::memcpy(&y[g.first * y_stride_], got.data(), got.size() * 4);
    }
    return y;
  }

  std::vector<float> run_id(const DeviceMatrix& stack, WeightOp op) const {
    const IdCase c = GetParam();
    std::vector<uint32_t> slots;
    uint32_t max_rows = 0;
    for (const Group& g : groups()) {
      slots.insert(slots.end(), {g.expert, g.first, g.rows, 0u});
      max_rows = std::max(max_rows, g.rows);
    }
    Buffer xb = upload(x_), yb = upload(std::vector<float>(kRows * y_stride_, -7.0f)), sb = upload(slots);
    const Ops::ExpertGroupTable table{sb.view(), static_cast<uint32_t>(groups().size()), max_rows, kRows};
    run([&](CommandBuffer& cmd) {
      ops(c.family, c.lanes_tile)
          .matmul_id(cmd, op, stack, static_cast<uint32_t>(c.rows), table, xb.view(), x_stride_, yb.view(), y_stride_,
                     c.swiglu);
    });
    return download<float>(yb, kRows * y_stride_);
  }

  void expect_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) const {
    ASSERT_EQ(got.size(), want.size());
    for (uint32_t r = 0; r < kRows; ++r) {
      for (uint32_t o = 0; o < y_stride_; ++o) {
        const size_t i = size_t{r} * y_stride_ + o;
        // Outputs past the expert's stay untouched (-7) in both.
        ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0)
            << what << ": row " << r << " output " << o << " of " << outputs() << ": " << got[i] << " vs " << want[i];
      }
    }
  }

  std::vector<uint8_t> data_;
  std::vector<float> x_;
  uint32_t x_stride_ = 0, y_stride_ = 0;
};

TEST_P(MatmulIdTest, EachGroupHasThePlainKernelsBits) {
  const IdCase c = GetParam();
  const DeviceMatrix stack = upload_matrix(device(), c.type, kExperts * c.rows, c.cols, data_.data());
  ASSERT_EQ(stack.storage.part_count(), 1u);
  const std::vector<float> want = expected();
  if (c.family != MatmulFamily::kRows) {  // one kernel for every token count
    expect_bits(run_id(stack, WeightOp::kMatvec), want, std::string(matmul_family_name(c.family)));
    return;
  }
  expect_bits(run_id(stack, WeightOp::kMatvec), want, "matvec");
  expect_bits(run_id(stack, WeightOp::kMatmul), want, "matmul");
}

// Parts of two experts (the last of one): a slot's workgroups in a part without its expert exit,
// the others index the expert within their part.
TEST_P(MatmulIdTest, StacksInPartsOfWholeExpertsGiveTheSameBits) {
  const IdCase c = GetParam();
  const uint64_t two = device_matrix_part_bytes(c.type, 2 * c.rows, c.cols);
  const DeviceMatrix stack = upload_matrix(device(), c.type, kExperts * c.rows, c.cols, data_.data(), two);
  ASSERT_EQ(stack.storage.part_count(), 3u);
  expect_bits(run_id(stack, Ops::weight_op_for(17)), expected(), "parts");
}

// A stack whose parts split an expert is refused, not computed wrong.
TEST_P(MatmulIdTest, RefusesPartsThatSplitAnExpert) {
  const IdCase c = GetParam();
  const uint64_t odd = device_matrix_part_bytes(c.type, c.rows + 1, c.cols);
  const DeviceMatrix stack = upload_matrix(device(), c.type, kExperts * c.rows, c.cols, data_.data(), odd);
  EXPECT_THROW(run_id(stack, WeightOp::kMatvec), Error);
}

// Every device format in the rows family (CPU devices); sizes as kernels_matmul_test's: rows past one
// workgroup's, partial side records, several super-blocks, float tails.
std::vector<IdCase> rows_cases() {
  return {IdCase{GgmlType::kF32, 37, 172},  IdCase{GgmlType::kF16, 33, 13},   IdCase{GgmlType::kBF16, 37, 64},
          IdCase{GgmlType::kQ8_0, 37, 160}, IdCase{GgmlType::kQ4_0, 137, 96}, IdCase{GgmlType::kQ4_1, 37, 288},
          IdCase{GgmlType::kQ5_0, 37, 288}, IdCase{GgmlType::kQ5_1, 37, 288}, IdCase{GgmlType::kQ2_K, 37, 768},
          IdCase{GgmlType::kQ3_K, 37, 768}, IdCase{GgmlType::kQ4_K, 37, 768}, IdCase{GgmlType::kQ5_K, 37, 768},
          IdCase{GgmlType::kQ6_K, 37, 768}, IdCase{GgmlType::kMXFP4, 37, 288}, IdCase{GgmlType::kIQ4_NL, 37, 288},
          IdCase{GgmlType::kIQ4_XS, 37, 768}};
}
INSTANTIATE_TEST_SUITE_P(Rows, MatmulIdTest, ::testing::ValuesIn(rows_cases()), id_case_name);

// The lanes family (GPUs) on the same types, wide tiles (the 17-row group takes one) and rows of
// several groups per lane.
std::vector<IdCase> lanes_id_cases() {
  std::vector<IdCase> cases = rows_cases();
  cases.push_back(IdCase{GgmlType::kQ4_0, 9, 4096});
  for (IdCase& c : cases) c.family = MatmulFamily::kLanes;
  cases.push_back(IdCase{GgmlType::kQ4_K, 37, 768, MatmulFamily::kLanes, 16});
  cases.push_back(IdCase{GgmlType::kF16, 11, 1037, MatmulFamily::kLanes, 32});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Lanes, MatmulIdTest, ::testing::ValuesIn(lanes_id_cases()), id_case_name);

// The dot family on the quantized types (x's rows quantized once for every group), a wide tile and
// the SwiGLU epilogue.
std::vector<IdCase> dot_id_cases() {
  std::vector<IdCase> cases;
  for (IdCase c : rows_cases()) {
    if (!find_device_format(c.type)->blocked()) continue;
    c.family = MatmulFamily::kDot;
    cases.push_back(c);
  }
  cases.push_back(IdCase{GgmlType::kQ4_K, 37, 768, MatmulFamily::kDot, 16});
  cases.push_back(IdCase{GgmlType::kMXFP4, 34, 288, MatmulFamily::kDot, 8, true});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Dot, MatmulIdTest, ::testing::ValuesIn(dot_id_cases()), id_case_name);

// The SwiGLU epilogue over gate|up blocks (hidden = rows / 2, rarely a multiple of a workgroup's
// outputs): gpt-oss's MXFP4 and a Q4_K_M file's types, both families.
INSTANTIATE_TEST_SUITE_P(Swiglu, MatmulIdTest,
                         ::testing::Values(IdCase{GgmlType::kF32, 34, 61, MatmulFamily::kRows, 8, true},
                                           IdCase{GgmlType::kQ4_K, 74, 768, MatmulFamily::kRows, 8, true},
                                           IdCase{GgmlType::kMXFP4, 34, 288, MatmulFamily::kRows, 8, true},
                                           IdCase{GgmlType::kQ4_0, 18, 96, MatmulFamily::kLanes, 8, true},
                                           IdCase{GgmlType::kQ6_K, 34, 768, MatmulFamily::kLanes, 16, true}),
                         id_case_name);

}  // namespace
}  // namespace vks::vk::test
