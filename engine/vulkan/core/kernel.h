#pragma once
// Compute kernels: every kernel is known by one name `<op>_<type>` (= its .comp file name in
// engine/vulkan/shaders = kernel id = debug name). The SPIR-V is embedded at build time; its
// layout (storage-buffer bindings in set 0, push-constant size, local size) is read from the
// SPIR-V itself, so a dispatch can be checked against what the shader declares.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vks::vk {

class Device;

// One shader as embedded by the build (generated source in the build tree).
struct EmbeddedShader {
  std::string_view name;     // file name without .comp, e.g. "matvec_q4_0"
  const uint32_t* code;      // SPIR-V words
  size_t word_count;
};
// All shaders of engine/vulkan/shaders/*.comp, sorted by name.
std::span<const EmbeddedShader> embedded_shaders();
const EmbeddedShader* find_embedded_shader(std::string_view name);

// Most storage buffers one kernel may bind (the shaders use at most 7); lets a dispatch keep its
// descriptor writes on the stack.
inline constexpr uint32_t kMaxKernelBindings = 16;

struct KernelLayout {
  uint32_t bindings = 0;          // descriptors at set 0, bindings 0..bindings-1 (dense)
  // Bit i set: binding i is a uniform texel buffer of uvec4 texels (a samplerBuffer), bound
  // through the buffer's texel view; the others are storage buffers. lavapipe turns a storage
  // buffer load into a loop over the SIMD lanes, a texel fetch into a vector gather: reading
  // weights this way streams about three times faster there (vks_bench_device_probe).
  uint32_t texel_bindings = 0;
  uint32_t push_size = 0;         // bytes of the push-constant block (0 if none)
  uint32_t local_size[3] = {1, 1, 1};
};

// Reads the layout from SPIR-V. Throws vks::Error(kInternal) for malformed SPIR-V, descriptor
// sets other than 0, non-dense bindings, descriptors other than storage and uniform texel buffers
// or spec-constant sizes.
KernelLayout reflect_spirv(std::span<const uint32_t> words);

// A compute pipeline with its layouts. Move-only.
class Kernel {
 public:
  Kernel() = default;
  ~Kernel();
  Kernel(Kernel&& other) noexcept;
  Kernel& operator=(Kernel&& other) noexcept;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  // Builds the pipeline from SPIR-V (uses the device's pipeline cache; names the pipeline with
  // VK_EXT_debug_utils when validation is on).
  // spec_constants: values of the shader's specialization constants with constant_id 0..n-1
  // (32-bit each), e.g. a compile-time row length that lets the compiler unroll a loop.
  static Kernel create(const Device& device, std::string_view name, std::span<const uint32_t> spirv,
                       std::span<const uint32_t> spec_constants = {});

  const std::string& name() const { return name_; }
  const KernelLayout& layout() const { return layout_; }
  VkPipeline pipeline() const { return pipeline_; }
  VkPipelineLayout pipeline_layout() const { return pipeline_layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }

 private:
  void destroy() noexcept;
  VkDevice device_ = VK_NULL_HANDLE;
  std::string name_;
  KernelLayout layout_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

// Pipelines by name. get() creates a pipeline the first time it is asked for; create_all() builds
// every embedded kernel up front (what the runner does at start-up). Not thread-safe: owned by
// the thread that owns the device queue. References returned by get() stay valid for the
// registry's lifetime.
class KernelRegistry {
 public:
  explicit KernelRegistry(const Device& device);
  KernelRegistry(const KernelRegistry&) = delete;
  KernelRegistry& operator=(const KernelRegistry&) = delete;

  // Throws vks::Error(kNotFound) naming the kernel when no shader has that name.
  const Kernel& get(std::string_view name);
  // The pipeline of `name` specialized with constant_id i = spec_constants[i] (one per distinct set).
  const Kernel& get(std::string_view name, std::span<const uint32_t> spec_constants);
  bool has(std::string_view name) const;
  void create_all();
  // Writes the device's pipeline cache to disk (failures are ignored).
  void save_cache() const;
  // A hash of the pipelines built so far: names, specialization constants and SPIR-V words. Two
  // registries with the same fingerprint on the same driver compile the same pipelines.
  uint64_t fingerprint() const;

 private:
  // A pipeline specialized with constants (e.g. attention's head size); few exist, so a scan finds
  // one without building a key on every dispatch.
  struct SpecializedKernel {
    std::string name;
    std::vector<uint32_t> constants;
    std::unique_ptr<Kernel> kernel;
  };
  const Device* device_;
  std::map<std::string, std::unique_ptr<Kernel>, std::less<>> kernels_;
  std::vector<SpecializedKernel> specialized_;
};

}  // namespace vks::vk
