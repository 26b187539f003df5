#include "engine/vulkan/core/kernel.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "engine/common/error.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/vk_error.h"
#include "engine/vulkan/shaders/shader_params.h"

namespace vks::vk {

const EmbeddedShader* find_embedded_shader(std::string_view name) {
  const std::span<const EmbeddedShader> all = embedded_shaders();
  auto it = std::find_if(all.begin(), all.end(), [&](const EmbeddedShader& s) { return s.name == name; });
  return it != all.end() ? &*it : nullptr;
}

Kernel::~Kernel() { destroy(); }

Kernel::Kernel(Kernel&& o) noexcept
    : device_(std::exchange(o.device_, VK_NULL_HANDLE)),
      name_(std::move(o.name_)),
      layout_(o.layout_),
      module_(std::exchange(o.module_, VK_NULL_HANDLE)),
      set_layout_(std::exchange(o.set_layout_, VK_NULL_HANDLE)),
      pipeline_layout_(std::exchange(o.pipeline_layout_, VK_NULL_HANDLE)),
      pipeline_(std::exchange(o.pipeline_, VK_NULL_HANDLE)) {}

Kernel& Kernel::operator=(Kernel&& o) noexcept {
  if (this != &o) {
    destroy();
    device_ = std::exchange(o.device_, VK_NULL_HANDLE);
    name_ = std::move(o.name_);
    layout_ = o.layout_;
    module_ = std::exchange(o.module_, VK_NULL_HANDLE);
    set_layout_ = std::exchange(o.set_layout_, VK_NULL_HANDLE);
    pipeline_layout_ = std::exchange(o.pipeline_layout_, VK_NULL_HANDLE);
    pipeline_ = std::exchange(o.pipeline_, VK_NULL_HANDLE);
  }
  return *this;
}

void Kernel::destroy() noexcept {
  if (device_ == VK_NULL_HANDLE) return;
  if (pipeline_ != VK_NULL_HANDLE) vkDestroyPipeline(device_, pipeline_, nullptr);
  if (pipeline_layout_ != VK_NULL_HANDLE) vkDestroyPipelineLayout(device_, pipeline_layout_, nullptr);
  if (set_layout_ != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  if (module_ != VK_NULL_HANDLE) vkDestroyShaderModule(device_, module_, nullptr);
  pipeline_ = VK_NULL_HANDLE;
  pipeline_layout_ = VK_NULL_HANDLE;
  set_layout_ = VK_NULL_HANDLE;
  module_ = VK_NULL_HANDLE;
  device_ = VK_NULL_HANDLE;
}

Kernel Kernel::create(const Device& device, std::string_view name, std::span<const uint32_t> spirv,
                      std::span<const uint32_t> spec_constants) {
  Kernel k;
  k.device_ = device.handle();
  k.name_ = std::string(name);
  k.layout_ = reflect_spirv(spirv);
  const std::string what = " for kernel " + k.name_;
  if (k.layout_.push_size > device.info().max_push_constants_size) {
    throw Error(ErrorCode::kUnsupported, "kernel " + k.name_ + " needs " + std::to_string(k.layout_.push_size) +
                                             " bytes of push constants, the device allows " +
                                             std::to_string(device.info().max_push_constants_size));
  }

  VkShaderModuleCreateInfo mci{};
  mci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  mci.codeSize = spirv.size() * sizeof(uint32_t);
  mci.pCode = spirv.data();
  check(vkCreateShaderModule(k.device_, &mci, nullptr, &k.module_), "vkCreateShaderModule" + what);

  std::vector<VkDescriptorSetLayoutBinding> bindings(k.layout_.bindings);
  for (uint32_t i = 0; i < k.layout_.bindings; ++i) {
    const VkDescriptorType type = (k.layout_.texel_bindings >> i) & 1u ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                                                        : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i] = VkDescriptorSetLayoutBinding{i, type, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  VkDescriptorSetLayoutCreateInfo sci{};
  sci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  sci.bindingCount = k.layout_.bindings;
  sci.pBindings = bindings.data();
  check(vkCreateDescriptorSetLayout(k.device_, &sci, nullptr, &k.set_layout_), "vkCreateDescriptorSetLayout" + what);

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, (k.layout_.push_size + 3u) & ~3u};
  VkPipelineLayoutCreateInfo lci{};
  lci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  lci.setLayoutCount = 1;
  lci.pSetLayouts = &k.set_layout_;
  lci.pushConstantRangeCount = k.layout_.push_size > 0 ? 1 : 0;
  lci.pPushConstantRanges = &range;
  check(vkCreatePipelineLayout(k.device_, &lci, nullptr, &k.pipeline_layout_), "vkCreatePipelineLayout" + what);

  VkComputePipelineCreateInfo pci{};
  pci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  pci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pci.stage.module = k.module_;
  pci.stage.pName = "main";
  // The kernel's constants at ids 0..n-1, then the device's half conversion (shaders/halves.glsl),
  // which every pipeline gets: an id a shader does not declare is ignored.
  std::vector<uint32_t> values(spec_constants.begin(), spec_constants.end());
  std::vector<VkSpecializationMapEntry> entries(spec_constants.size());
  for (uint32_t i = 0; i < spec_constants.size(); ++i) {
    entries[i] = VkSpecializationMapEntry{i, i * 4u, 4u};
  }
  entries.push_back(VkSpecializationMapEntry{VKS_HALVES_CONSTANT_ID, static_cast<uint32_t>(values.size()) * 4u, 4u});
  values.push_back(device.info().halves_by_integer_steps ? VK_TRUE : VK_FALSE);
  const VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(), values.size() * 4u,
                                  values.data()};
  pci.stage.pSpecializationInfo = &spec;
  pci.layout = k.pipeline_layout_;
  check(vkCreateComputePipelines(k.device_, device.pipeline_cache(), 1, &pci, nullptr, &k.pipeline_),
        "vkCreateComputePipelines" + what);

  if (device.validation_enabled()) {
    auto set_name = reinterpret_cast<PFN_vkSetDebugUtilsObjectNameEXT>(
        vkGetDeviceProcAddr(k.device_, "vkSetDebugUtilsObjectNameEXT"));
    if (set_name != nullptr) {
      VkDebugUtilsObjectNameInfoEXT ni{};
      ni.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT;
      ni.objectType = VK_OBJECT_TYPE_PIPELINE;
      ni.objectHandle = reinterpret_cast<uint64_t>(k.pipeline_);
      ni.pObjectName = k.name_.c_str();
      set_name(k.device_, &ni);
    }
  }
  return k;
}

KernelRegistry::KernelRegistry(const Device& device) : device_(&device) {}

bool KernelRegistry::has(std::string_view name) const { return find_embedded_shader(name) != nullptr; }

const Kernel& KernelRegistry::get(std::string_view name) { return get(name, {}); }

const Kernel& KernelRegistry::get(std::string_view name, std::span<const uint32_t> spec_constants) {
  // Hot path (every dispatch of every step): found without building a key or allocating.
  if (spec_constants.empty()) {
    if (auto found = kernels_.find(name); found != kernels_.end()) return *found->second;
  } else {
    for (const SpecializedKernel& s : specialized_) {
      if (s.name == name && std::equal(s.constants.begin(), s.constants.end(), spec_constants.begin(),
                                       spec_constants.end())) {
        return *s.kernel;
      }
    }
  }
  const EmbeddedShader* shader = find_embedded_shader(name);
  if (shader == nullptr) {
    throw Error(ErrorCode::kNotFound, "no kernel named '" + std::string(name) +
                                          "' (kernels are engine/vulkan/shaders/<name>.comp)");
  }
  auto kernel = std::make_unique<Kernel>(
      Kernel::create(*device_, shader->name, std::span<const uint32_t>(shader->code, shader->word_count),
                     spec_constants));
  const Kernel& ref = *kernel;
  if (spec_constants.empty()) {
    kernels_.emplace(std::string(name), std::move(kernel));
  } else {
    specialized_.push_back(SpecializedKernel{std::string(name),
                                             std::vector<uint32_t>(spec_constants.begin(), spec_constants.end()),
                                             std::move(kernel)});
  }
  return ref;
}

void KernelRegistry::create_all() {
  for (const EmbeddedShader& s : embedded_shaders()) get(s.name);
}

void KernelRegistry::save_cache() const { device_->save_pipeline_cache(); }

uint64_t KernelRegistry::fingerprint() const {
  uint64_t h = 14695981039346656037ull;  // FNV-1a over 32-bit words
  auto mix = [&h](uint32_t w) { h = (h ^ w) * 1099511628211ull; };
  auto add = [&](std::string_view name, std::span<const uint32_t> constants) {
    for (char c : name) mix(static_cast<unsigned char>(c));
    mix(0xffffffffu);
    for (uint32_t c : constants) mix(c);
    mix(0xfffffffeu);
    if (const EmbeddedShader* shader = find_embedded_shader(name)) {
      for (size_t i = 0; i < shader->word_count; ++i) mix(shader->code[i]);
    }
  };
  for (const auto& [name, kernel] : kernels_) add(name, {});  // a map: in name order
  std::vector<const SpecializedKernel*> specialized;
  for (const SpecializedKernel& s : specialized_) specialized.push_back(&s);
  std::sort(specialized.begin(), specialized.end(), [](const SpecializedKernel* a, const SpecializedKernel* b) {
    return std::tie(a->name, a->constants) < std::tie(b->name, b->constants);
  });
  for (const SpecializedKernel* s : specialized) add(s->name, s->constants);
  return h;
}

}  // namespace vks::vk
