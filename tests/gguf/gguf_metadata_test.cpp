// Every metadata value type, nested arrays, v2/v3 and custom alignment survive writer -> reader.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace vks::gguf {
namespace {

GgufWriter writer_with_every_type(uint32_t version) {
  GgufWriter w(version);
  w.set("t.u8", make_uint8(250));
  w.set("t.i8", make_int8(-120));
  w.set("t.u16", make_uint16(65000));
  w.set("t.i16", make_int16(-32000));
  w.set("t.u32", make_uint32(4000000000u));
  w.set("t.i32", make_int32(-2000000000));
  w.set("t.u64", make_uint64(std::numeric_limits<uint64_t>::max()));
  w.set("t.i64", make_int64(std::numeric_limits<int64_t>::min()));
  w.set("t.f32", make_float32(1.5f));
  w.set("t.f64", make_float64(-2.25e300));
  w.set("t.bool", make_bool(true));
  w.set("t.str", make_string(std::string("h\xC3\xA9llo\0x", 8)));
  w.set("t.empty_str", make_string(""));
  w.set("t.strs", make_string_array({"a", "", "ccc"}));
  w.set("t.floats", make_float32_array({0.5f, -1.0f}));
  w.set("t.ints", make_int32_array({1, -2, 3}));
  w.set("t.empty_arr", make_array(ValueType::kUint8, {}));
  w.set("t.nested", make_array(ValueType::kArray, {make_int32_array({1, 2}), make_string_array({"x"}),
                                                    make_array(ValueType::kArray, {make_float32_array({7.0f})})}));
  return w;
}

void check_every_type(const GgufFile& f) {
  EXPECT_EQ(f.find("t.u8")->type, ValueType::kUint8);
  EXPECT_EQ(f.get_int("t.u8"), 250);
  EXPECT_EQ(f.get_int("t.i8"), -120);
  EXPECT_EQ(f.get_int("t.u16"), 65000);
  EXPECT_EQ(f.get_int("t.i16"), -32000);
  EXPECT_EQ(f.get_int("t.u32"), 4000000000ll);
  EXPECT_EQ(f.get_int("t.i32"), -2000000000);
  EXPECT_EQ(f.find("t.u64")->u, std::numeric_limits<uint64_t>::max());
  EXPECT_THROW(f.get_int("t.u64"), Error);  // does not fit int64
  EXPECT_EQ(f.get_int("t.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.get_float("t.f32"), 1.5);
  EXPECT_EQ(f.get_float("t.f64"), -2.25e300);
  EXPECT_EQ(f.get_float("t.u16"), 65000.0);  // integers widen to float
  EXPECT_THROW(f.get_int("t.f32"), Error);   // floats do not narrow to int
  EXPECT_EQ(f.get_bool("t.bool"), true);
  EXPECT_THROW(f.get_bool("t.u8"), Error);
  EXPECT_EQ(f.get_string("t.str"), std::string("h\xC3\xA9llo\0x", 8));
  EXPECT_EQ(f.get_string("t.empty_str"), "");
  EXPECT_EQ(f.get_string_array("t.strs"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(f.get_float_array("t.floats"), (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(f.get_int_array("t.ints"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(f.get_float_array("t.ints"), (std::vector<float>{1.0f, -2.0f, 3.0f}));
  EXPECT_THROW(f.get_int_array("t.floats"), Error);
  EXPECT_TRUE(f.get_int_array("t.empty_arr")->empty());
  EXPECT_THROW(f.get_string_array("t.ints"), Error);
  EXPECT_THROW(f.get_string_array("t.str"), Error);

  const Value* nested = f.find("t.nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->type, ValueType::kArray);
  ASSERT_EQ(nested->elem_type, ValueType::kArray);
  ASSERT_EQ(nested->arr.size(), 3u);
  EXPECT_EQ(nested->arr[0].elem_type, ValueType::kInt32);
  EXPECT_EQ(nested->arr[0].arr[1].i, 2);
  EXPECT_EQ(nested->arr[1].arr[0].s, "x");
  EXPECT_EQ(nested->arr[2].arr[0].arr[0].f, 7.0);
  EXPECT_THROW(f.get_int_array("t.nested"), Error);
  EXPECT_EQ(f.metadata().size(), 18u);
  EXPECT_EQ(f.metadata().front().key, "t.u8");  // file order kept
}

TEST(GgufMetadata, EveryTypeV3) {
  const std::vector<uint8_t> bytes = writer_with_every_type(3).to_bytes({});
  const GgufFile f = GgufFile::parse(bytes);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_TRUE(f.tensors().empty());
  check_every_type(f);
}

TEST(GgufMetadata, EveryTypeV2) {
  const std::vector<uint8_t> bytes = writer_with_every_type(2).to_bytes({});
  const GgufFile f = GgufFile::parse(bytes);
  EXPECT_EQ(f.version(), 2u);
  check_every_type(f);
}

TEST(GgufMetadata, ValueTypeNames) {
  EXPECT_EQ(value_type_name(ValueType::kFloat64), "float64");
  EXPECT_EQ(value_type_name(ValueType::kArray), "array");
  EXPECT_EQ(value_type_name(ValueType::kBool), "bool");
}

TEST(GgufTensors, OffsetsAlignmentAndData) {
  for (uint32_t alignment : {1u, 32u, 64u, 4096u}) {
    GgufWriter w;
    if (alignment != 32) w.set_alignment(alignment);
    w.set("general.architecture", make_string("test"));
    w.add_tensor("a", GgmlType::kF32, {3});
    w.add_tensor("b", GgmlType::kQ8_0, {64, 2});
    w.add_tensor("c", GgmlType::kF16, {5, 1, 1});
    std::vector<std::vector<uint8_t>> data;
    for (const TensorInfo& t : w.tensors()) {
      std::vector<uint8_t> d(t.nbytes);
      for (size_t k = 0; k < d.size(); ++k) d[k] = static_cast<uint8_t>(k * 7 + t.name[0]);
      data.push_back(d);
    }
    const std::vector<uint8_t> bytes = w.to_bytes(data);
    const GgufFile f = GgufFile::parse(bytes);
    EXPECT_EQ(f.alignment(), alignment);
    EXPECT_EQ(f.data_offset() % alignment, 0u);
    ASSERT_EQ(f.tensors().size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      const TensorInfo& t = f.tensors()[k];
      EXPECT_EQ(t.offset % alignment, 0u);
      const auto span = f.tensor_data(t);
      EXPECT_EQ(std::vector<uint8_t>(span.begin(), span.end()), data[k]) << t.name;
    }
    const TensorInfo* b = f.find_tensor("b");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->type, GgmlType::kQ8_0);
    EXPECT_EQ(b->nbytes, 2u * 2u * 34u);
    EXPECT_EQ(b->n_elements(), 128u);
    EXPECT_EQ(f.find_tensor("c")->dims, (std::vector<uint64_t>{5, 1, 1}));
    EXPECT_EQ(f.find_tensor("zzz"), nullptr);
  }
}

TEST(GgufWriterChecks, RejectsInvalidDeclarations) {
  GgufWriter w;
  w.add_tensor("x", GgmlType::kF32, {4});
  EXPECT_THROW(w.add_tensor("x", GgmlType::kF32, {4}), Error);
  EXPECT_THROW(w.add_tensor("q", GgmlType::kQ4_0, {33}), Error);
  EXPECT_THROW(w.add_tensor("z", GgmlType::kF32, {}), Error);
  EXPECT_THROW(w.add_tensor("z", GgmlType::kF32, {1, 1, 1, 1, 1}), Error);
  EXPECT_THROW(w.add_tensor("z", GgmlType::kF32, {0}), Error);
  EXPECT_THROW(w.set_alignment(64), Error);  // after tensors
  EXPECT_THROW(GgufWriter(1), Error);
  EXPECT_THROW(w.to_bytes({}), Error);
  EXPECT_THROW(w.to_bytes({std::vector<uint8_t>(3)}), Error);
  GgufWriter w2;
  EXPECT_THROW(w2.set_alignment(48), Error);
  w2.set("mixed", make_array(ValueType::kInt32, {make_int32(1), make_string("no")}));
  EXPECT_THROW(w2.header_bytes(), Error);
}

TEST(GgufWriterChecks, SetReplacesAndRemoveDeletes) {
  GgufWriter w;
  w.set("k", make_uint32(1));
  w.set("j", make_uint32(2));
  w.set("k", make_string("v"));
  ASSERT_EQ(w.metadata().size(), 2u);
  EXPECT_EQ(w.metadata()[0].key, "k");
  EXPECT_EQ(w.metadata()[0].value.s, "v");
  w.remove("k");
  ASSERT_EQ(w.metadata().size(), 1u);
  const std::vector<uint8_t> bytes = w.to_bytes({});
  EXPECT_EQ(GgufFile::parse(bytes).get_int("j"), 2);
}

}  // namespace
}  // namespace vks::gguf
