// The Vulkan core: device selection rules, SPIR-V reflection of the embedded kernels, the checked
// dispatch, split buffers, transfers and the pipeline-cache location.
#include <cstdlib>
#include <string>

#include "engine/vulkan/core/texel_sizing.h"
#include "engine/vulkan/shaders/shader_params.h"
#include "tests/vulkan/kernels_test_util.h"

namespace vks::vk::test {
namespace {

DeviceInfo fake(uint32_t index, const char* name, VkPhysicalDeviceType type) {
  DeviceInfo d;
  d.index = index;
  d.name = name;
  d.type = type;
  d.type_name = std::string(device_type_name(type));
  d.has_compute_queue = true;
  return d;
}

TEST(DeviceSelection, PrefersDiscreteThenIntegratedThenVirtualThenCpu) {
  std::vector<DeviceInfo> devs = {fake(0, "llvmpipe (LLVM 15)", VK_PHYSICAL_DEVICE_TYPE_CPU),
                                  fake(1, "Virtio GPU", VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU),
                                  fake(2, "Intel UHD", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU),
                                  fake(3, "NVIDIA RTX", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU)};
  EXPECT_EQ(select_device(devs, ""), 3u);
  devs.pop_back();
  EXPECT_EQ(select_device(devs, ""), 2u);
  devs.pop_back();
  EXPECT_EQ(select_device(devs, ""), 1u);
  devs.pop_back();
  EXPECT_EQ(select_device(devs, ""), 0u);
}

TEST(DeviceSelection, SelectorByIndexOrNameSubstring) {
  std::vector<DeviceInfo> devs = {fake(0, "llvmpipe (LLVM 15)", VK_PHYSICAL_DEVICE_TYPE_CPU),
                                  fake(1, "NVIDIA RTX 4090", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU)};
  EXPECT_EQ(select_device(devs, "0"), 0u);
  EXPECT_EQ(select_device(devs, "1"), 1u);
  EXPECT_EQ(select_device(devs, "LLVMPIPE"), 0u);
  EXPECT_EQ(select_device(devs, "rtx"), 1u);
  try {
    select_device(devs, "radeon");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("radeon"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("llvmpipe"), std::string::npos);  // lists what exists
  }
  EXPECT_THROW(select_device(devs, "7"), Error);
  EXPECT_THROW(select_device({}, ""), Error);
  devs[1].has_compute_queue = false;
  EXPECT_EQ(select_device(devs, ""), 0u);
}

TEST(PipelineCache, PathFollowsXdgCacheHome) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  setenv("XDG_CACHE_HOME", "/tmp/vks-xdg", 1);
  EXPECT_EQ(pipeline_cache_path(), "/tmp/vks-xdg/vkstream/pipeline_cache.bin");
  unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') {
    EXPECT_EQ(pipeline_cache_path(), std::string(home) + "/.cache/vkstream/pipeline_cache.bin");
  }
  if (old) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

// lavapipe's shader cache hits on a restart only when each pipeline has one llvmpipe variant: every
// texel-viewed size lands in one class (texel_sizing.h).
TEST(TexelSizing, EverySizeLandsInOneVariantClass) {
  auto one_class = [](uint64_t b) { return b % 16 == 0 && (b & (b - 1)) != 0 && ((b >> 8) & 0xff) != 0; };
  for (uint64_t size : {16ull, 64ull, 256ull, 4096ull, 16384ull, 65536ull, 131072ull, 1ull << 24, 88064ull,
                        (1ull << 20) + 16, 300ull, 26738688ull}) {
    const uint64_t b = single_variant_texel_bytes(size);
    EXPECT_GE(b, size) << size;
    EXPECT_LE(b, size + 512) << size;
    EXPECT_TRUE(one_class(b)) << size << " -> " << b;
  }
  EXPECT_EQ(single_variant_texel_bytes(88064), 88064u);  // already in the class: unchanged
}

TEST(Reflection, EmbeddedKernelsDeclareWhatTheParamsSay) {
  const char* names[] = {"embed_f32", "embed_f16", "embed_q8_0", "embed_q4_0", "rmsnorm_f32", "matvec_f32",
                         "matvec_f16", "matvec_q8_0", "matvec_q4_0", "matmul_f32", "matmul_f16", "matmul_q8_0",
                         "matmul_q4_0", "matlanes_f32", "matlanes_q4_0", "swiglu_f32", "add_f32", "argmax_f32",
                         "topk_f32"};
  for (const char* name : names) {
    const EmbeddedShader* s = find_embedded_shader(name);
    ASSERT_NE(s, nullptr) << name;
    const KernelLayout l = reflect_spirv(std::span<const uint32_t>(s->code, s->word_count));
    const std::string n = name;
    if (n.rfind("mat", 0) != 0) {
      EXPECT_EQ(l.texel_bindings, 0u) << n;
    }
    if (n.rfind("embed_", 0) == 0) {
      EXPECT_EQ(l.push_size, sizeof(shader::EmbedParams)) << n;
      EXPECT_EQ(l.bindings, 3u) << n;
    } else if (n.rfind("matlanes_", 0) == 0) {
      EXPECT_EQ(l.push_size, sizeof(shader::MatmulParams)) << n;
      EXPECT_EQ(l.bindings, 5u) << n;
      EXPECT_EQ(l.local_size[0], uint32_t{VKS_LANES}) << n;
      EXPECT_EQ(l.texel_bindings, 0b10011u)
          << n << ": weights, x and the RMSNorm prologue's weights through texel views, y and mul_mat_id's groups storage";
    } else if (n.rfind("mat", 0) == 0) {
      EXPECT_EQ(l.push_size, sizeof(shader::MatmulParams)) << n;
      EXPECT_EQ(l.bindings, 4u) << n;
      // Each invocation carries ROW_SLOTS rows, the host counts VKS_ROWS_LOCAL_SIZE * row_slots
      // rows per workgroup (both from VKS_ROW_SLOTS_<TYPE>; the matmul tests check every row).
      EXPECT_EQ(l.local_size[0], uint32_t{VKS_ROWS_LOCAL_SIZE}) << n;
      EXPECT_EQ(l.texel_bindings, 0b0011u)
          << n << ": weights and x through texel views, y and mul_mat_id's groups storage buffers";
    } else if (n == "rmsnorm_f32") {
      EXPECT_EQ(l.push_size, sizeof(shader::RmsNormParams));
    } else if (n == "argmax_f32") {
      EXPECT_EQ(l.push_size, sizeof(shader::ReduceRowParams));
      EXPECT_EQ(l.bindings, 2u);
      EXPECT_EQ(l.local_size[0], 64u);
    }
  }
  EXPECT_EQ(find_embedded_shader("no_such_kernel"), nullptr);
}

TEST(Reflection, RejectsGarbage) {
  const std::vector<uint32_t> junk = {0x12345678u, 1, 2, 3, 4, 5};
  EXPECT_THROW(reflect_spirv(junk), Error);
  const EmbeddedShader* s = find_embedded_shader("add_f32");
  ASSERT_NE(s, nullptr);
  std::vector<uint32_t> truncated(s->code, s->code + s->word_count / 2);
  truncated.push_back(0xffff0000u | 71u);  // an instruction claiming 65535 words
  EXPECT_THROW(reflect_spirv(truncated), Error);
}

using CoreTest = KernelTest;

TEST_F(CoreTest, ListDevicesDescribesTheChosenDevice) {
  const std::vector<DeviceInfo> devs = list_devices();
  ASSERT_FALSE(devs.empty());
  bool found = false;
  for (const DeviceInfo& d : devs) found = found || d.name == device().info().name;
  EXPECT_TRUE(found);
  EXPECT_GT(device().info().max_storage_buffer_range, 0u);
  EXPECT_GT(device().max_binding_bytes(), 0u);
  EXPECT_GE(VK_API_VERSION_MINOR(device().info().api_version), 2u);
}

TEST_F(CoreTest, CheckedDispatchRejectsMismatches) {
  const Kernel& add = kernels().get("add_f32");
  Buffer b = upload(std::vector<float>(64, 1.0f));
  CommandBuffer cmd = device().create_command_buffer();
  cmd.begin();
  const shader::ElementwiseParams p{1, 4, 4, 4};
  EXPECT_THROW(cmd.dispatch(add, {b.view(), b.view()}, p, Groups{1, 1, 1}), Error);  // 2 of 3 bindings
  const shader::ReduceRowParams wrong{1, 4, 4, 1};
  struct Bigger { shader::ElementwiseParams p; uint32_t extra; } bigger{p, 0};
  EXPECT_THROW(cmd.dispatch(add, {b.view(), b.view(), b.view()}, bigger, Groups{1, 1, 1}), Error);
  EXPECT_THROW(cmd.dispatch(add, {b.view(), b.view(), b.view()}, p, Groups{0, 1, 1}), Error);
  EXPECT_THROW(cmd.dispatch(add, {b.view(4, 16), b.view(), b.view()}, p, Groups{1, 1, 1}), Error);  // misaligned
  (void)wrong;  // same size as ElementwiseParams: sizes match, which is all a push block can check
  EXPECT_NO_THROW(cmd.dispatch(add, {b.view(), b.view(), b.view()}, p, Groups{1, 1, 1}));
  EXPECT_EQ(cmd.dispatch_count(), 1u);
  cmd.end();
  device().submit_and_wait(cmd);
  EXPECT_THROW(kernels().get("no_such_kernel"), Error);
  EXPECT_EQ(groups_for(add, 65).x, 2u);
  EXPECT_EQ(groups_for(add, 64).x, 1u);
}

TEST_F(CoreTest, TexelBindingsNeedATexelViewAndWholeTexels) {
  const Kernel& probe = kernels().get("probe_texread_u32");
  EXPECT_EQ(probe.layout().texel_bindings, 1u);
  std::vector<uint32_t> words(64);
  for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint32_t>(i * 2654435761u + 1u);
  Buffer data = upload(words);
  Buffer out = device().create_buffer(64);
  ASSERT_NE(data.texel_view(), VK_NULL_HANDLE);
  // Staging and readback buffers have no texel view; neither has a buffer under one texel.
  Buffer staging = device().create_buffer(256, BufferKind::kStaging);
  Buffer tiny = device().create_buffer(8);
  EXPECT_EQ(staging.texel_view(), VK_NULL_HANDLE);
  EXPECT_EQ(tiny.texel_view(), VK_NULL_HANDLE);
  const uint32_t p[4] = {16, 4, 0, 0};
  CommandBuffer cmd = device().create_command_buffer();
  cmd.begin();
  EXPECT_THROW(cmd.dispatch(probe, {staging.view(), out.view()}, p, Groups{1, 1, 1}), Error);
  EXPECT_THROW(cmd.dispatch(probe, {tiny.view(), out.view()}, p, Groups{1, 1, 1}), Error);
  EXPECT_THROW(cmd.dispatch(probe, {data.view(8, 64), out.view()}, p, Groups{1, 1, 1}), Error);  // half a texel
  EXPECT_NO_THROW(cmd.dispatch(probe, {data.view(), out.view()}, p, Groups{1, 1, 1}));
  cmd.end();
  device().submit_and_wait(cmd);
  // 16 texels in runs of 4: invocation i XORs words 16i .. 16i+15.
  const std::vector<uint32_t> got = download<uint32_t>(out, 4);
  for (uint32_t inv = 0; inv < 4; ++inv) {
    uint32_t expected = 0;
    for (uint32_t w = 16 * inv; w < 16 * inv + 16; ++w) expected ^= words[w];
    EXPECT_EQ(got[inv], expected) << inv;
  }
}

TEST_F(CoreTest, SplitBufferPartsRespectTheLimit) {
  const SplitBuffer s = device().create_split_buffer(1000, 100, 4096);
  EXPECT_EQ(s.rows_per_part, 40u);
  EXPECT_EQ(s.part_count(), 25u);
  for (size_t i = 0; i < s.part_count(); ++i) EXPECT_LE(s.parts[i].size(), 4096u);
  const SplitBuffer odd = device().create_split_buffer(101, 100, 1000);
  EXPECT_EQ(odd.part_count(), 11u);
  EXPECT_EQ(odd.part_rows(10), 1u);
  EXPECT_EQ(odd.part_of_row(100), 10u);
  EXPECT_THROW(device().create_split_buffer(10, 5000, 4096), Error);
  // Rows written across part boundaries come back in order.
  std::vector<uint8_t> rows(101 * 100);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = uint8_t(i * 7);
  device().upload_rows(odd, 0, rows.data(), 101);
  std::vector<uint8_t> back(100);
  device().download(odd.parts[10], 0, back.data(), 100);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), rows.begin() + 100 * 100));
}

TEST_F(CoreTest, TransfersRoundTripThroughEveryBufferKind) {
  std::vector<uint32_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint32_t(i * 2654435761u);
  for (BufferKind kind : {BufferKind::kStorage, BufferKind::kStaging, BufferKind::kReadback}) {
    Buffer b = device().create_buffer(data.size() * 4, kind);
    device().upload(b, 0, data.data(), data.size() * 4);
    std::vector<uint32_t> back(data.size());
    device().download(b, 0, back.data(), back.size() * 4);
    EXPECT_EQ(back, data);
    EXPECT_THROW(device().upload(b, 8, data.data(), data.size() * 4), Error);
  }
  // Copy + fill recorded in a command buffer.
  Buffer src = upload(data);
  Buffer dst = device().create_buffer(data.size() * 4);
  run([&](CommandBuffer& cmd) {
    cmd.fill(dst, 0, VK_WHOLE_SIZE, 0xdeadbeefu);
    cmd.barrier(Stage::kTransfer, Stage::kTransfer);
    cmd.copy(src, 0, dst, 0, 400);
    cmd.barrier(Stage::kTransfer, Stage::kHost);
  });
  const std::vector<uint32_t> out = download<uint32_t>(dst, data.size());
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 100, data.begin()));
  EXPECT_EQ(out[100], 0xdeadbeefu);
  EXPECT_EQ(out.back(), 0xdeadbeefu);
}

TEST_F(CoreTest, MovedFromObjectsAreEmpty) {
  Buffer a = device().create_buffer(64);
  const VkBuffer h = a.handle();
  Buffer b = std::move(a);
  EXPECT_EQ(b.handle(), h);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  Fence f = device().create_fence(true);
  EXPECT_TRUE(f.signalled());
  f.reset();
  EXPECT_FALSE(f.signalled());
}

}  // namespace
}  // namespace vks::vk::test
